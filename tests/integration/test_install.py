"""A normal (non-editable) install of the wheel works from any folder, with one import name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from paths import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = (
        out / "src"
    )  # build from a copy: setuptools writes build/ and *.egg-info beside the sources
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".cache",
            "results",
            "build",
            "data",
            "*.egg-info",
            "__pycache__",
            "notebooks",
            "tests",
        ),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            str(src),
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return next(out.glob("memharness-*.whl"))


def test_wheel_installs_one_import_name_with_configs_and_sample_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"memharness"}  # no generic top-level modules (run, eval, baselines, ...)
    assert "memharness/conf/config.yaml" in names and "memharness/conf/memory/memtree.yaml" in names
    assert "memharness/data_prep/sample_data.json" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert (
        "memharness = memharness.eval.cli.command:main"
        in zipfile.ZipFile(wheel).read(entry).decode()
    )


@pytest.mark.slow
def test_installed_command_runs_from_an_empty_folder(wheel, tmp_path):
    """A fresh venv gets the wheel itself (no editable finder); the heavy dependencies (torch, llama.cpp,
    sentence-transformers) are borrowed from this environment through a path file rather than downloaded."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain path line does not run the editable finder's .pth in the borrowed site-packages.
    (Path(site) / "borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "empty"
    work.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""}
    env.pop("MEMHARNESS_CACHE", None)
    where = subprocess.run(
        [str(py), "-c", "import memharness.memsys as m; print(m.__path__[0])"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    assert where.startswith(str(env_dir)), where  # the installed copy, not this checkout
    listed = subprocess.run(
        [str(env_dir / "bin" / "memharness"), "ls", "memory"],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
    shown = {line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()}
    assert shown == {p.stem for p in (ROOT / "conf" / "memory").glob("*.yaml")}  # from the wheel
    run = subprocess.run(
        [
            str(env_dir / "bin" / "memharness"),
            "dataset=sample",
            "dataset.limit=2",
            "llm=local_tiny",
            "memory=full_context",
            "progress=false",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = next(work.glob("results/runs/*/*/metrics.json"))
    assert json.loads(metrics.read_text())["counts"]["questions"] == 2
    assert (
        work / ".cache" / "calls.sqlite"
    ).exists()  # the call cache lives under the folder it ran in
