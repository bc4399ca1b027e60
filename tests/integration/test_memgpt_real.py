"""`run.py memory=memgpt` on the sample with the real embedded model (llm=local_tiny): the agent's
function calls go through the schema-constrained JSON format to llama.cpp, the run exits 0, and the
steps are recorded (samples.jsonl agent_steps, memory_stats.json agent counts)."""

from __future__ import annotations

import json

import pytest
from memharness.eval.record.scores import memory_flag
from processes import run_py


@pytest.mark.slow
def test_memgpt_agent_runs_on_the_sample_with_the_embedded_model(tmp_path):
    proc = run_py(
        tmp_path,
        "memory=memgpt",
        "dataset=sample",
        "dataset.limit=1",
        "llm=local_tiny",
        "memory.loop.max_steps=3",
        "memory.loop.step_max_tokens=128",
        "eval.judge.enabled=false",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    stats = json.loads((out / "memory_stats.json").read_text())
    assert len(samples) == 1 and memory_flag(samples[0], "answered_by") == "memory"
    steps = memory_flag(samples[0], "agent_steps")
    assert 1 <= len(steps) <= 3
    agent = next(iter(stats.values()))["agent"]
    assert agent["steps"] == len(steps) and agent["questions"] == 1
    # every step is accounted for: a well-formed call, a refused call, or a counted malformed one
    assert sum(agent["functions"].values()) + agent["malformed_total"] == agent["steps"]
    # an answer sent on the restricted last step (memory.loop.final_send) is counted and marked as such
    assert agent["forced_final_sends"] == sum(1 for s in steps if s.get("forced"))
    if samples[0]["status"] == "scored":  # the answer is what the agent sent
        assert steps[-1] == {"function": "send_message", "status": "ok"}
        assert agent["answered"] == 1
    else:  # no message within the cap: a counted failure, never an empty answer
        assert samples[0]["status"] == "answer_failed" and samples[0]["error"].startswith("memgpt ")
        assert agent["step_cap"] + agent["yielded"] + agent["call_failed"] == 1
