"""A server that echoes the key inside *successful* replies (issue 23, item 2): the key enters
memories, so it would reach every file written from them. Every file the harness writes (run
folder, memory views, snapshots, the call cache, tables, the results browser) must show ``***``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from paths import ROOT

# whole run.py processes against a real local server (the fault server; no model)
pytestmark = [pytest.mark.slow, pytest.mark.doubles]

SECRET = "memharness-echoed-Value-0123456789"  # not key-shaped: only the configured-variable rule masks it


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def test_key_echoed_in_replies_reaches_no_file(tmp_path: Path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMHARNESS_TEST_KEY": SECRET}
    env.pop("MEMHARNESS_CACHE", None)
    run_dir = tmp_path / "runs" / "memtree-sample" / "run"
    with FaultServer(FaultConfig(echo_auth_ok=True)) as server:
        url = server.url
        proc = _run(
            [
                "run.py",
                f"hydra.run.dir={run_dir}",
                "progress=false",
                "memory=memtree",
                "dataset.limit=2",
                "llm=openai",
                f"llm.backend.base_url={url}",
                "llm.backend.model=echo-model",
                "llm.backend.api_key_env=MEMHARNESS_TEST_KEY",
                "llm.backend.structured=guided_choice",
                "embedder=openai",
                f"embedder.backend.base_url={url}",
                "embedder.backend.model=echo-embed",
                "embedder.backend.api_key_env=MEMHARNESS_TEST_KEY",
                "eval.judge.calibration_max=0",
                f"cache.path={tmp_path / 'cache' / 'calls.sqlite'}",
            ],
            env,
        )
        stats = server.stats()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert stats["auth_seen"] > 0 and stats["chat_ok"] > 0  # it did echo the key
    reports = [
        [
            "-m",
            "memharness.eval.report.browser",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path / "b.html"),
        ],
        [
            "-m",
            "memharness.eval.report.comparison",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path / "tables"),
            "--name",
            "t",
        ],
    ]
    for args in reports:
        report = _run(args, env)
        assert report.returncode == 0, report.stderr[-2000:]
    hierarchies = list(run_dir.glob("memory/*/hierarchy.json"))
    assert hierarchies and "Bearer ***" in hierarchies[0].read_text()  # echoed, then masked
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    kinds = {p.suffix for p in files}
    assert {".json", ".html", ".sqlite", ".jsonl", ".md", ".csv"} <= kinds, kinds
    assert any("snapshots" in p.parts for p in files)
    leaks = [str(p) for p in files if SECRET.encode() in p.read_bytes()]
    assert not leaks, leaks
    assert SECRET not in proc.stdout + proc.stderr
