"""The distribution installs one import name (memharness) and every code and config folder.

The package list is found by setup.py (no list kept by hand); these tests build the real wheel
from a copy of the repository and check that every code folder, module and config file is in it.
"""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from paths import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MAPPING: dict[str, str] = PROJECT["tool"]["setuptools"]["package-dir"]
DATA = (".yaml", ".json", ".jsonl", ".js", ".css")


def repository_files(suffixes: tuple[str, ...]) -> set[str]:
    """Every file with one of ``suffixes`` under the mapped folders, as its path in the wheel."""
    found = set()
    for package, folder in MAPPING.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in suffixes and "__pycache__" not in path.parts:
                rel = path.relative_to(ROOT / folder).as_posix()
                found.add("/".join([*package.split("."), rel]))
    return found


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The file names in a wheel built (no isolation, no dependencies) from a copy of the repository."""
    src = tmp_path_factory.mktemp("src")
    for name in ["pyproject.toml", "setup.py", "README.md"]:
        shutil.copy2(ROOT / name, src / name)
    for folder in MAPPING.values():
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--no-index", "-w", str(out), str(src)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("memharness-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_only_the_mapped_folders_under_one_import_name():
    assert all(name.startswith("memharness.") for name in MAPPING)
    assert "packages" not in PROJECT["tool"]["setuptools"], "the package list is found (setup.py)"


def test_the_wheel_holds_every_module_of_every_mapped_folder(wheel_names):
    modules = repository_files((".py",))
    assert "memharness/memsys/extraction/entities.py" in modules
    assert "memharness/baselines/oracle.py" in modules
    assert modules - wheel_names == set(), "modules missing from the built wheel"


def test_the_wheel_holds_every_config_group_and_data_file(wheel_names):
    data = repository_files(DATA)
    assert "memharness/conf/memory/oracle.yaml" in data
    assert "memharness/eval/report/explorer.js" in data  # the results explorer's script
    assert any(name.startswith("memharness/eval/papers/published/") for name in data)
    assert data - wheel_names == set(), "config or data files missing from the built wheel"
    groups = {p.name for p in (ROOT / "conf").iterdir() if p.is_dir()}
    in_wheel = {n.split("/")[2] for n in wheel_names if n.startswith("memharness/conf/")}
    assert groups <= in_wheel


def test_setup_finds_a_new_code_folder_and_a_new_config_group(tmp_path):
    """A package added under a mapped folder is found with no edit of pyproject.toml."""
    find = runpy.run_path(str(ROOT / "setup.py"))["mapped_packages"]
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in MAPPING.values():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "memsys" / "newsys").mkdir()
    (tmp_path / "memsys" / "newsys" / "__init__.py").write_text("")
    (tmp_path / "memsys" / "notes").mkdir()  # no code, no data: not a package
    (tmp_path / "memsys" / "notes" / "README.txt").write_text("x")
    (tmp_path / "conf" / "newgroup").mkdir()
    (tmp_path / "conf" / "newgroup" / "one.yaml").write_text("a: 1\n")
    found = find(Path(tmp_path))
    assert "memharness.memsys.newsys" in found
    assert "memharness.conf.newgroup" in found
    assert "memharness.memsys.notes" not in found
    assert set(MAPPING) <= set(found)
