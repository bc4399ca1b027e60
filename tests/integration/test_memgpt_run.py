"""memory=memgpt through the runner with the scripted chat: the agent's sent message is the recorded
prediction, its steps are in samples.jsonl, the units its search showed it are the retrieved items,
a question whose loop hits the step cap is a counted answer failure; the flat variant answers with
the shared prompt."""

from __future__ import annotations

import json

from memharness.data_prep.sample import load as load_sample
from memharness.eval.record.scores import memory_flag
from memharness.eval.run.runner import run
from omegaconf import OmegaConf

SEARCH = json.dumps(
    {
        "thought": "look",
        "function": "conversation_search",
        "arguments": {"query": "THE", "request_heartbeat": True},
    }
)
SEND = json.dumps(
    {"thought": "found", "function": "send_message", "arguments": {"message": "SENT-ANSWER"}}
)


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _cfg(make_cfg, script, *overrides):
    cfg = make_cfg("memory=memgpt", "dataset.limit=3", *overrides)
    OmegaConf.update(cfg, "llm.backend.script", script, force_add=True)
    return cfg


def test_the_sent_message_is_the_prediction_and_the_steps_are_recorded(make_cfg, tmp_path):
    # the first step searches; the result page ("Showing ...") makes the second step send
    run(_cfg(make_cfg, [["Showing", SEND], ["user_message", SEARCH]]), tmp_path / "a")
    units = {e.id: {u.id for u in e.units} for e in load_sample().episodes}
    samples = _samples(tmp_path / "a")
    assert samples and all(s["status"] == "scored" for s in samples)
    for s in samples:
        assert memory_flag(s, "answered_by") == "memory" and s["prediction"] == "SENT-ANSWER"
        assert [step["function"] for step in memory_flag(s, "agent_steps")] == [
            "conversation_search",
            "send_message",
        ]
        search = memory_flag(s, "agent_steps")[
            0
        ]  # what it searched for and whether that found anything
        assert search["arguments"]["query"] == "THE" and search["result_head"].startswith("Showing")
        assert (
            s["retrieved"]
            and {u for i in s["retrieved"] for u in i["source_unit_ids"]} <= units[s["episode_id"]]
        )
    stats = json.loads((tmp_path / "a" / "memory_stats.json").read_text())
    agent = [e["agent"] for e in stats.values()]
    assert sum(a["answered"] for a in agent) == len(samples)
    assert all(a["malformed_total"] == 0 and a["mean_steps_per_question"] == 2.0 for a in agent)
    # every step is a cached call: a warm rerun makes no backend call and predicts the same
    first = json.loads((tmp_path / "a" / "metrics.json").read_text())["calls"]["retrieve"]
    run(_cfg(make_cfg, [["Showing", SEND], ["user_message", SEARCH]]), tmp_path / "b")
    warm = json.loads((tmp_path / "b" / "metrics.json").read_text())["calls"]["retrieve"]
    assert first["calls"] == 2 * len(samples) and warm["calls"] == 0
    assert warm["cache_hits"] == first["calls"]
    assert [s["prediction"] for s in _samples(tmp_path / "b")] == [s["prediction"] for s in samples]


def test_the_step_cap_is_an_answer_failure_and_flat_answers_with_the_shared_prompt(
    make_cfg, tmp_path
):
    run(_cfg(make_cfg, [["user_message", SEARCH]], "memory.loop.max_steps=2"), tmp_path / "cap")
    samples = _samples(tmp_path / "cap")
    assert samples and all(s["status"] == "answer_failed" for s in samples)
    assert all(
        "step_cap" in s["error"] and len(memory_flag(s, "agent_steps")) == 2 for s in samples
    )
    metrics = json.loads((tmp_path / "cap" / "metrics.json").read_text())
    assert metrics["counts"]["answer_failed"] == len(samples)

    run(_cfg(make_cfg, [], "memory.variant=flat"), tmp_path / "flat")
    flat = _samples(tmp_path / "flat")
    assert flat and all(
        s["status"] == "scored" and memory_flag(s, "answered_by") is None for s in flat
    )
    assert all(len(s["retrieved"]) <= 3 and s["retrieved"] for s in flat)
