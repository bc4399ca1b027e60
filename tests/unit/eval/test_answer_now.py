"""The answer prompt shows a question's date from the data (``Question.asked_at``) as the current date."""

from __future__ import annotations

from memharness.eval.run.answer import answer_request
from memharness.memsys.types import Question
from omegaconf import OmegaConf
from paths import ROOT

ANSWER = OmegaConf.load(ROOT / "conf" / "eval" / "default.yaml").answer


def _prompt(question: Question, cfg=ANSWER) -> str:
    return answer_request(question, [], cfg).messages[-1][1]


def test_a_dated_question_gets_the_date_line_just_before_its_question():
    q = Question("q1", "Where is my bike?", ("garage",), 0, asked_at="2023/11/05 (Sun) {09:30}")
    lines = _prompt(q).splitlines()
    at = lines.index("Question: Where is my bike?")
    assert lines[at - 1] == "Current date: 2023/11/05 (Sun) {09:30}"  # braces kept literally


def test_an_undated_question_or_no_now_line_leaves_the_prompt_unchanged():
    undated = Question("q2", "Where is my bike?", ("garage",), 0)
    dated = Question("q2", "Where is my bike?", ("garage",), 0, asked_at="2023/11/05 (Sun) 09:30")
    assert "Current date" not in _prompt(undated)
    assert _prompt(undated) == ANSWER.prompt.format(
        question=undated.text, context="(no search results)"
    )
    off = OmegaConf.merge(ANSWER, {"now_line": None})
    assert _prompt(dated, off) == _prompt(undated)
