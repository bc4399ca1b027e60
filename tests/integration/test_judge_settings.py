"""Problems with the judge's server or key name ``judge.backend.*``, not the run LLM's settings
(issue 23, item 7): the run's LLM is the scripted double, only the judge talks HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _servers import free_port
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from paths import ROOT


def _run(tmp_path: Path, *judge: str, env: dict[str, str] | None = None) -> list[str]:
    proc = subprocess.run(
        [
            sys.executable,
            "run.py",
            f"hydra.run.dir={tmp_path / 'run'}",
            "progress=false",
            "llm=scripted",
            "embedder=hashing",
            "memory=full_context",
            "dataset.limit=1",
            f"cache.path={tmp_path / 'calls.sqlite'}",
            "judge=openai",
            "judge.backend.model=judge-model",
            "judge.backend.structured=guided_choice",
            "judge.retry.max_retries=0",
            *judge,
        ],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode in (2, 3) and errors, proc.stderr[-2000:]
    assert not any("llm.backend" in line for line in errors), errors
    return errors


def test_unreachable_judge_server_names_the_judge_setting(tmp_path: Path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    errors = _run(tmp_path, f"judge.backend.base_url={url}", "judge.backend.api_key_env=null")
    assert f"cannot reach the server at judge.backend.base_url={url}" in errors[0]


def test_missing_judge_key_names_the_judge_setting(tmp_path: Path):
    errors = _run(
        tmp_path,
        "judge.backend.base_url=http://127.0.0.1:9/v1",
        "judge.backend.api_key_env=MEMHARNESS_UNSET_JUDGE_KEY",
    )
    assert "(judge.backend.api_key_env=MEMHARNESS_UNSET_JUDGE_KEY)" in errors[0]


@pytest.mark.slow  # a real local server
@pytest.mark.doubles
def test_judge_server_rejecting_the_key_names_the_judge_setting(tmp_path: Path):
    with FaultServer(FaultConfig(reject_posts=401)) as server:
        errors = _run(
            tmp_path,
            f"judge.backend.base_url={server.url}",
            "judge.backend.api_key_env=MEMHARNESS_JUDGE_KEY",
            env={"MEMHARNESS_JUDGE_KEY": "judge-key-value-123456"},
        )
    assert any("401" in e and "judge.backend.api_key_env" in e for e in errors), errors
