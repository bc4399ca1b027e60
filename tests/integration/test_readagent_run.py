"""memory=readagent through the runner with the scripted chat: provenance of pages and gists, the
look-up's expansion in the recorded context, and a snapshot reused across look-up settings."""

from __future__ import annotations

import json

from memharness.data_prep.sample import load as load_sample
from memharness.eval.run.runner import run

LOOKUP = (
    "Which page(s) do you want to reread?"  # the end of conf/memory/readagent.yaml's lookup.prompt
)
SCRIPT = (
    f'[["{LOOKUP}","I want to look up Page [0] to check."],["Break point","Break point: <999>"]]'
)


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_readagent_run_records_expanded_pages_with_provenance(make_cfg, tmp_path):
    cfg = make_cfg("memory=readagent", f"llm.backend.script={SCRIPT}", "dataset.limit=4")
    run(cfg, tmp_path / "a")
    units = {e.id: {u.id: u.text for u in e.units} for e in load_sample().episodes}
    samples = _samples(tmp_path / "a")
    assert samples
    for s in samples:
        items = s["retrieved"]
        assert items and all(
            set(i["source_unit_ids"]) <= set(units[s["episode_id"]]) for i in items
        )
        first = items[0]  # page 0 was looked up: its raw text, made of its units' text
        assert first["level"] == 0
        assert all(
            units[s["episode_id"]][u].strip()[:40] in first["text"]
            for u in first["source_unit_ids"]
        )
    stats = json.loads((tmp_path / "a" / "memory_stats.json").read_text())
    news = stats["news"]
    assert (
        news["pagination"]["calls"] >= 1
        and news["pagination"]["out_of_range"] == news["pagination"]["calls"]
    )
    assert all(e["lookup"]["pages_expanded"] == e["lookup"]["questions"] for e in stats.values())
    # a look-up setting does not change what is built: the second run loads the snapshot
    run(
        make_cfg(
            "memory=readagent",
            f"llm.backend.script={SCRIPT}",
            "dataset.limit=4",
            "memory.lookup.max_pages=2",
        ),
        tmp_path / "b",
    )
    again = json.loads((tmp_path / "b" / "memory_stats.json").read_text())
    assert {e["snapshot"]["action"] for e in again.values()} == {"loaded"}
    assert [e["pages"] for e in again.values()] == [e["pages"] for e in stats.values()]
