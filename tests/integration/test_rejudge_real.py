"""``memharness rejudge`` on a real sweep: a debug run of the tiny embedded model (SmolLM2,
llm=local_tiny, two questions), re-judged under the harness prompt (the run's own requests: all
from the call cache) and the LoCoMo-style one (new judge calls), with no answer call; a second
rejudge sends nothing to the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from processes import offline_env, run_py


@pytest.mark.slow
def test_rejudge_a_real_sweep_makes_judge_calls_only(tmp_path):
    proc = run_py(tmp_path, "debug=default", "memory=full_context", multirun=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    exe = os.path.join(os.path.dirname(sys.executable), "memharness")

    def rejudge(name: str) -> dict:
        done = subprocess.run(
            [
                exe,
                "rejudge",
                str(tmp_path / "runs"),
                "--judges",
                "harness,locomo",
                "--out",
                str(tmp_path / "tables"),
                "--name",
                name,
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=offline_env(tmp_path),
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "answer 0." in done.stdout
        return json.loads((tmp_path / "tables" / f"{name}.json").read_text())

    cold = rejudge("cold")
    (qs,) = cold["sets"]
    assert qs["systems"] == ["full_context"]
    spend = cold["calls"]["spend"]
    assert spend["answer"]["calls"] == 0 and spend["build"]["calls"] == 0
    # harness: the run's own 2 verdicts, from the cache; locomo: 2 new calls (1 if the answers match)
    assert spend["judge"]["cache_hits"] >= 2 and 1 <= spend["judge"]["calls"] <= 2
    for judge in ("harness", "locomo"):
        for system in qs["systems"]:
            res = qs["results"][judge][system]
            assert res["model"].startswith("llama.cpp:SmolLM2")
            assert res["n"] + res["undecided"] == 2
    warm = rejudge("warm")
    assert warm["calls"]["spend"]["judge"]["calls"] == 0
    assert warm["sets"][0]["results"] == qs["results"]
