"""Kinds and headlines: every metric's kind in the table headers, retrieval-only metrics never in
the QA scores, and a benchmark protocol's task-averaged and overall accuracy side by side."""

from __future__ import annotations

import json

from memharness.eval.metrics import kinds, registry
from memharness.eval.report.comparison import build_report
from test_report import write_full_run


def test_every_declared_metric_has_a_kind():
    for m in registry.METRICS:
        assert kinds.kind_label(m.name) in kinds.LABELS, m.name
    assert kinds.kind_label("judge") == "QA judge"
    assert kinds.kind_label("judge:needs_memory") == "QA judge"
    assert kinds.kind_label("official_judge") == "official QA metric"
    assert kinds.kind_label("locomo_f1") == "official QA metric"
    assert kinds.kind_label("rouge_l_recall") == "lexical overlap"
    assert kinds.kind_label("evidence_recall_at_3") == "retrieval-only"
    assert kinds.kind_label("context_tokens") == "cost"
    assert kinds.kind_label("no_such_metric") is None


def test_no_retrieval_only_metric_sits_in_the_qa_scores():
    for name in registry.names(section="scores"):
        assert kinds.kind_label(name) != "retrieval-only", name


def test_headers_name_the_kind_and_the_official_headlines_show_both(tmp_path):
    qs = [f"q{i}" for i in range(4)]
    runs = tmp_path / "runs"
    folder = write_full_run(runs, "sys_a", "s", {q: 1.0 for q in qs}, f1={q: 0.5 for q in qs})
    doc = json.loads((folder / "metrics.json").read_text())
    doc["official_judge"] = {
        "protocol": "longmemeval",
        "metric": "official_judge",
        "task_averaged": 0.625,
        "overall": 0.5,
        "judged": 4,
        "abstention": {"accuracy": None, "n": 0},
        "categories_missing": ["knowledge-update"],
    }
    (folder / "metrics.json").write_text(json.dumps(doc))
    md = build_report([runs], tmp_path / "tables", "cmp")["md"].read_text()
    scores = md.split("## Scores", 1)[1].split("\n## ", 1)[0]
    assert "judge (QA judge)" in scores and "f1 (lexical overlap)" in scores
    assert "retrieval-only" not in scores
    assert "## The benchmark's own headline (official QA metric)" in md
    assert (
        "| sys_a | sample | A | longmemeval (official_judge) | 0.625 | 0.500 | 4 | - | knowledge-update |"
        in md
    )


def test_every_answer_metric_has_an_answer_kind_never_cost():
    """An entry of kind accuracy reads an answer: never labelled a cost (the forgetting and MAB
    metrics were, before), and a latency entry is a latency."""
    from memharness.eval.metrics import kinds, registry

    for m in registry.METRICS:
        label = kinds.kind_label(m.name)
        if m.kind == "accuracy":
            assert label in ("QA judge", "official QA metric", "lexical overlap"), m.name
        if m.kind == "latency":
            assert label == "latency", m.name
    assert kinds.kind_label("forget_answer_leak_judge") == "QA judge"
    assert kinds.kind_label("mab_accuracy") == "official QA metric"
