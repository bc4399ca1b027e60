"""Memory snapshots reused across a sweep (zero build calls, even with the call cache off), rebuilt
when construction changes; and a run stopped by its budget, written and marked incomplete."""

from __future__ import annotations

import json
from pathlib import Path

from memharness.eval.record import folder as run_io
from memharness.eval.record.scores import memory_flag
from memharness.eval.run.runner import run


def _build_calls(metrics: dict) -> int:
    build = metrics["calls"]["build"]
    return build["calls"] + build["cache_hits"] + build["embed_calls"]


def test_top_k_sweep_over_one_memtree_loads_the_snapshot_and_a_prompt_change_rebuilds(
    make_cfg, tmp_path
):
    base = ("memory=memtree", "dataset.limit=3", "cache.enabled=false")
    first = run(make_cfg(*base, "memory.top_k=1"), tmp_path / "k1")
    assert (
        _build_calls(first) > 0 and first["snapshots"]["built_saved"] == first["data"]["episodes"]
    )
    second = run(make_cfg(*base, "memory.top_k=3"), tmp_path / "k3")
    assert _build_calls(second) == 0  # no LLM call, no embedding request: every memory was loaded
    assert second["snapshots"]["loaded"] == second["data"]["episodes"]
    # the intrinsic ledger still carries the build's cost, stored with the snapshot
    assert (
        second["intrinsic"]["build"]["snapshot_served"] == first["intrinsic"]["build"]["calls"] > 0
    )
    stats = json.loads((tmp_path / "k3" / "memory_stats.json").read_text())
    for record in (s["snapshot"] for s in stats.values()):
        assert record["action"] == "loaded" and record["built_by"] == str(tmp_path / "k1")
        assert (tmp_path / "cache.sqlite").parent in Path(record["path"]).parents
    first_stats = json.loads((tmp_path / "k1" / "memory_stats.json").read_text())
    assert all(
        s["snapshot"]["action"] == "built" and s["snapshot"]["saved"] for s in first_stats.values()
    )
    # retrieval reads the same tree: top_k=3 retrieves at least as many items as top_k=1 did
    assert second["counts"]["questions"] == first["counts"]["questions"]
    # a different aggregation prompt is a different construction: built again
    changed = run(
        make_cfg(
            *base,
            "memory.top_k=3",
            "memory.aggregate_prompt='Merge: {new_content} {current_content}'",
        ),
        tmp_path / "prompt",
    )
    assert _build_calls(changed) > 0 and changed["snapshots"].get("loaded", 0) == 0
    assert changed["snapshots"]["built_saved"] == changed["data"]["episodes"]


def test_snapshots_disabled_always_build(make_cfg, tmp_path):
    base = ("memory=memtree", "dataset.limit=2", "cache.enabled=false", "snapshots.enabled=false")
    run(make_cfg(*base), tmp_path / "a")
    again = run(make_cfg(*base), tmp_path / "b")
    assert _build_calls(again) > 0 and again["snapshots"]["disabled"] == again["data"]["episodes"]


def test_budget_stops_the_run_cleanly_and_marks_it_incomplete(make_cfg, tmp_path):
    metrics = run(
        make_cfg(
            "memory=memtree",
            "dataset.limit=3",
            "cache.enabled=false",
            "budget.calls=4",
            "run.episodes_in_flight=1",
        ),
        tmp_path / "run",
    )
    assert metrics["calls"]["total"]["calls"] == 4  # calls started never pass the limit
    assert (
        metrics["outcome"]["exit_code"] == 3
        and "budget.calls=4" in metrics["outcome"]["incomplete"]
    )
    assert "budget.calls=4" in run_io.read_marker(tmp_path / "run")["reason"]
    samples = [json.loads(l) for l in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert (
        len(samples) == metrics["counts"]["questions"] > 0
    )  # what was not done is written and counted
    assert metrics["counts"]["budget_exceeded"] > 0
    assert metrics["calls"]["total"]["budget_skipped"] > 0
    assert all(
        s["status"] in ("scored", "budget_exceeded", "build_failed") or memory_flag(s, "degraded")
        for s in samples
    )


def test_a_snapshot_with_nan_vectors_is_not_loaded_but_rebuilt(make_cfg, tmp_path):
    """Vectors saved before embedding replies were checked may hold NaN: such a snapshot is counted
    unreadable and the memory is built again (and saved clean)."""
    import numpy as np

    base = ("memory=memorystream", "dataset.limit=2", "cache.enabled=false")
    first = run(make_cfg(*base), tmp_path / "a")
    saved = list((tmp_path / "snapshots").rglob("arrays.npz"))
    assert saved and first["snapshots"]["built_saved"] == first["data"]["episodes"]
    for path in saved:
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        arrays["vectors"][0, 0] = np.nan
        np.savez(path, **arrays)
    again = run(make_cfg(*base), tmp_path / "b")
    assert again["snapshots"].get("loaded", 0) == 0
    assert again["snapshots"]["unreadable"] == len(saved)
    assert _build_calls(again) > 0
    third = run(make_cfg(*base), tmp_path / "c")
    assert third["snapshots"]["loaded"] == third["data"]["episodes"]
