"""dry_run=true: estimates without a backend call, close to what the real run then uses."""

from __future__ import annotations

import json

from memharness.eval.run import estimate
from memharness.eval.run.runner import run


def test_dry_run_estimates_every_stage_without_a_backend_call_and_writes_only_the_estimate(
    make_cfg, tmp_path
):
    overrides = (
        "memory=memtree",
        "dataset.limit=4",
        "cache.enabled=false",
        "snapshots.enabled=false",
    )
    est = estimate.dry_run(make_cfg(*overrides, "dry_run=true"), tmp_path / "dry")
    assert sorted(p.name for p in (tmp_path / "dry").iterdir()) == ["estimate.json"]
    assert json.loads((tmp_path / "dry" / "estimate.json").read_text())["total"] == est["total"]
    assert not (tmp_path / "cache.sqlite").exists()  # the cache was never opened
    assert est["method"] == "simulated"
    actual = run(make_cfg(*overrides), tmp_path / "real")["intrinsic"]
    # one answer and one verdict per question: exactly what the real run asked
    for stage in ("answer", "judge"):
        assert est["stages"][stage]["calls"] == actual[stage]["calls"] > 0
    build = est["stages"]["build"]
    assert (
        build["embed_texts"] > 0
        and abs(build["calls"] - actual["build"]["calls"]) <= 0.5 * actual["build"]["calls"]
    )
    assert est["total"]["prompt_tokens"] > 0


def test_a_pilot_is_extrapolated_and_labelled(make_cfg, tmp_path):
    base = ("memory=full_context", "cache.enabled=false", "dataset.limit=6")
    full = estimate.dry_run(make_cfg(*base), tmp_path / "all")
    part = estimate.dry_run(make_cfg(*base, "estimate.episodes=2"), tmp_path / "pilot")
    assert part["method"] == "pilot" and "pilot of 2 of" in part["label"]
    assert part["sizes"]["simulated"]["episodes"] == 2 < part["sizes"]["full"]["episodes"]
    q_full, q_pilot = part["sizes"]["full"]["questions"], part["sizes"]["simulated"]["questions"]
    # answers scale with questions: the pilot's answer calls times the question ratio
    assert part["stages"]["answer"]["calls"] == full["stages"]["answer"]["calls"] == q_full
    assert q_pilot < q_full


def test_sweep_estimates_add_up(make_cfg, tmp_path, capsys):
    for name in ("a", "b"):
        estimate.dry_run(
            make_cfg("memory=full_context", "cache.enabled=false", "dataset.limit=2"),
            tmp_path / name,
        )
    assert estimate.main([str(tmp_path)]) == 0
    one = json.loads((tmp_path / "a" / "estimate.json").read_text())["total"]["calls"]
    assert f"2 runs: {2 * one:.0f} LLM calls" in capsys.readouterr().out
    assert estimate.main([str(tmp_path / "a" / "nothing")]) == 2
