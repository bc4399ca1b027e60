"""``debug=default`` (conf/debug/): a smoke run of the whole pipeline in seconds, with the tiny
embedded model, two questions and no judge audit; the command line still chooses the memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from processes import offline_env


def test_debug_composes_the_tiny_model_two_questions_and_no_audit(make_cfg):
    cfg = make_cfg("debug=default", fake=False)
    assert cfg.llm.backend.embedded == "smollm2" and cfg.judge.name == "same"  # llm=local_tiny
    assert cfg.memory.name == "full_context" and cfg.dataset.name == "sample"
    assert cfg.dataset.limit == 2
    audit = cfg.eval.judge_audit
    assert (audit.lenient, audit.canaries, audit.wrong_answers) == (False, 0, False)
    assert cfg.eval.judge.calibration_max == 0


def test_the_command_line_wins_over_the_debug_choices(make_cfg):
    cfg = make_cfg("debug=default", "memory=memtree", "dataset=locomo", "dataset.limit=1")
    assert cfg.memory.name == "memtree" and cfg.dataset.name == "locomo"
    assert cfg.dataset.limit == 1
    assert cfg.llm.backend._target_ == "fakes.ScriptedChat"  # make_cfg's llm=fake


def test_without_debug_nothing_changes(make_cfg):
    cfg = make_cfg(fake=False)
    assert (
        cfg.llm.backend.embedded != "smollm2"
        and cfg.dataset.limit is None
        and cfg.eval.judge_audit.lenient
    )


@pytest.mark.slow
def test_the_debug_smoke_run_finishes_in_seconds_with_the_real_tiny_model(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "memharness")
    start = time.monotonic()
    proc = subprocess.run(
        [exe, "run", "debug=default", f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=offline_env(tmp_path),
        timeout=600,
    )
    seconds = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["llm"].startswith("llama.cpp:SmolLM2")
    assert metrics["counts"]["questions"] == 2
    assert metrics["calls"]["audit"]["calls"] == 0 and metrics["calls"]["build"]["calls"] == 0
    assert seconds < 120, f"the smoke run took {seconds:.0f} s (about 11 s on 2 shared cores)"
