"""Answer-prompt variants (conf/answer_prompt/): the chain-of-thought reply's answer line is what is
scored, a reply without it is a counted failure, and the report flags a ranking that does not
survive a change of answer prompt (eval/report/prompt_sensitivity.py)."""

from __future__ import annotations

import pytest
from memharness.eval.report.comparison import build_report
from memharness.eval.run.answer import answer_request, final_answer
from memharness.eval.run.scoring import record_answer
from memharness.memsys.services.types import Completion
from memharness.memsys.types import Question
from test_report import write_full_run

COT = {"final_marker": "Answer:"}


def test_the_answer_line_is_the_prediction():
    reply = "Result [2] says she moved in May.\nAnswer: first try\nAnswer:  in May \n"
    assert final_answer(reply, COT) == "in May"  # the last answer line
    assert final_answer(" just words ", {}) == "just words"  # no marker: the whole reply
    assert final_answer("I think May.", COT) is None


@pytest.mark.parametrize("variant", ["harness", "cot", "locomo", "longmemeval"])
def test_every_variant_composes_and_builds_a_request(make_cfg, variant):
    cfg = make_cfg(f"answer_prompt={variant}")
    assert cfg.eval.answer.name == variant
    q = Question(id="q", text="When did Ana move?", answers=("May",), position=1)
    req = answer_request(q, [], cfg.eval.answer)
    assert "When did Ana move?" in req.messages[-1][1]
    assert req.max_tokens == {"cot": 256, "locomo": 50}.get(variant, 64)


def _record(text: str, cfg) -> dict:
    q = Question(id="q", text="When?", answers=("May",), position=1)
    record: dict = {"memory": {}}
    record_answer(q, record, "prompt", Completion(text=text), cfg)
    return record


def test_a_reply_without_the_answer_line_is_a_counted_failure(make_cfg):
    cfg = make_cfg("answer_prompt=cot")
    ok = _record("Step one.\nAnswer: May", cfg)
    assert ok["status"] == "scored" and ok["prediction"] == "May"
    bad = _record("It was probably May.", cfg)
    assert bad["status"] == "answer_failed" and "AnswerUnparsed" in bad["error"]
    assert bad["prediction"] == "It was probably May."  # kept for reading, never scored
    # the harness prompt has no marker: the whole reply is the answer
    plain = _record("It was May.", make_cfg())
    assert plain["status"] == "scored" and plain["prediction"] == "It was May."


def test_the_report_flags_a_ranking_that_does_not_survive(tmp_path):
    qs = [f"q{i}" for i in range(4)]
    runs = tmp_path / "runs"

    def acc(k: int) -> dict[str, float]:
        return {q: float(i < k) for i, q in enumerate(qs)}

    write_full_run(runs, "sys_a", "h", acc(3), config={"eval.answer.name": "harness"})
    write_full_run(runs, "sys_b", "h", acc(1), config={"eval.answer.name": "harness"})
    write_full_run(runs, "sys_a", "c", acc(1), config={"eval.answer.name": "cot"})
    write_full_run(runs, "sys_b", "c", acc(4), config={"eval.answer.name": "cot"})
    md = build_report([runs], tmp_path / "t", "x")["md"].read_text()
    section = md.split("## Answer-prompt sensitivity (judge)")[1].split("\n## ")[0]
    assert "| A | sample | sys_a | harness: 0.750 | cot: 0.250 | 0.250-0.750 |" in section
    assert "sys_a > sys_b under harness, sys_b > sys_a under cot" in section
    assert "THE RANKING DOES NOT SURVIVE" in section


def test_no_section_when_every_run_used_one_prompt(tmp_path):
    runs = tmp_path / "runs"
    write_full_run(runs, "sys_a", "h", {"q0": 1.0})
    write_full_run(runs, "sys_b", "h", {"q0": 0.0})
    assert (
        "Answer-prompt sensitivity"
        not in build_report([runs], tmp_path / "t", "x")["md"].read_text()
    )
