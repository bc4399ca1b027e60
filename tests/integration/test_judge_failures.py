"""A judge that gives no verdict (its reply does not parse, or its call fails) counts: toward
``eval.max_failed_fraction`` and the exit code, in ``outcome.problems``, and in the table's judge
column (issue 23, item 4)."""

from __future__ import annotations

import pytest
from memharness.data_prep.sample import load as load_sample
from memharness.eval.record import outcome as run_outcome
from memharness.eval.report.comparison import build_report
from memharness.eval.run.runner import run

JUDGE = "You are grading answers"  # a phrase only the judge prompt (conf/eval/default.yaml) holds


@pytest.mark.parametrize(
    "how,key",
    [
        (f'llm.backend.script=[["{JUDGE}","maybe"]]', "judge_unparsed"),
        (f"llm.backend.fail_on='{JUDGE}'", "judge_failed"),
    ],
)
def test_a_judge_without_any_verdict_fails_the_run(make_cfg, tmp_path, how, key):
    metrics = run(
        make_cfg("memory=full_context", "dataset.limit=4", "eval.max_failed_fraction=1", how),
        tmp_path / "r",
    )
    counts, outcome = metrics["counts"], metrics["outcome"]
    assert counts[key] == 4 and counts.get("judge_parsed", 0) == 0 and counts["scored"] == 4
    assert outcome["failed"] == 4 and outcome["exit_code"] == run_outcome.EXIT_FAILURES
    assert len(outcome["problems"]) == 1 and "the judge gave no verdict" in outcome["problems"][0]
    assert "judge.*" in outcome["problems"][0]
    assert any("judge" in line and "4 " in line for line in run_outcome.stage_warnings(metrics))


def test_unparsed_judge_replies_count_toward_the_failed_fraction(make_cfg, tmp_path):
    """One unparsed verdict among the sample's questions: within 10% it passes, at 5% it fails."""
    script = f'llm.backend.script=[["Which striker","perhaps"],["{JUDGE}","1"]]'
    questions = load_sample().num_questions
    loose = run(
        make_cfg("memory=full_context", script, "eval.max_failed_fraction=0.5"), tmp_path / "a"
    )
    assert loose["counts"]["judge_unparsed"] == 1 and loose["outcome"]["failed"] == 1
    assert loose["outcome"]["exit_code"] == 0
    limit = 0.5 / questions  # below one question's share
    strict = run(
        make_cfg("memory=full_context", script, f"eval.max_failed_fraction={limit}"),
        tmp_path / "runs" / "full_context-sample" / "b",
    )
    assert strict["outcome"]["exit_code"] == run_outcome.EXIT_FAILURES
    (problem,) = strict["outcome"]["problems"]
    assert f"1 of {questions} questions failed" in problem and "judge_unparsed 1" in problem
    out = build_report([tmp_path / "runs"], tmp_path / "t", "x")
    assert "(1 no verdict)" in out["md"].read_text()


def test_the_table_keeps_the_judge_column_when_no_reply_parsed(make_cfg, tmp_path):
    folder = tmp_path / "runs" / "full_context-sample" / "r"
    run(
        make_cfg(
            "memory=full_context",
            "dataset.limit=3",
            "eval.max_failed_fraction=1",
            f'llm.backend.script=[["{JUDGE}","maybe"]]',
        ),
        folder,
    )
    md = build_report([tmp_path / "runs"], tmp_path / "t", "x")["md"].read_text()
    assert "| - (3 no verdict) |" in md
