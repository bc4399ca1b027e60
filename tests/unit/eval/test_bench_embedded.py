"""The embedded benchmark's workload and demo split (the timed part runs in `make bench` only)."""

from __future__ import annotations

import json

from memharness.eval.bench import embedded


def test_the_workload_is_a_demo_rows_order_and_judge_prompts_share_their_prefix():
    work = embedded.demo_workload()
    kinds = [k for k, _ in work]
    n = kinds.count("answer")
    assert n == 6 and kinds[:n] == ["answer"] * n  # the sample's dialogue questions, answered first
    assert kinds[n:] == ["judge"] * n + ["lenient"] * n + ["canary"] * (2 * n)
    strict = [r.messages[-1][1] for k, r in work if k in ("judge", "canary")]
    head = strict[0][:200]
    assert len(head) == 200 and all(p.startswith(head) for p in strict)
    assert all(r.choices == ("0", "1") for k, r in work if k != "answer")


def test_demo_split_reads_each_stages_backend_seconds_from_the_rows(tmp_path):
    assert embedded.demo_split(tmp_path) == {}
    for row, secs in (("a", (4.0, 2.0, 1.0, 1.0)), ("b", (0.0, 2.0, 1.0, 1.0))):
        (tmp_path / row).mkdir()
        calls = {s: {"backend_s": v} for s, v in zip(embedded.STAGES, secs, strict=True)}
        (tmp_path / row / "metrics.json").write_text(json.dumps({"calls": calls}))
    split = embedded.demo_split(tmp_path)
    assert split == {
        "demo_build_share": 4 / 12,
        "demo_answer_share": 4 / 12,
        "demo_judge_share": 2 / 12,
        "demo_audit_share": 2 / 12,
    }
