"""LoCoMo's temporal questions carry the official QA script's date instruction in the answer prompt
(``eval.answer.question_hints``), loaded from the exact-schema fixture; other questions do not."""

from __future__ import annotations

from memharness.data_prep import locomo
from memharness.eval.run.answer import answer_request
from memharness.memsys.types import Question
from omegaconf import OmegaConf
from paths import ROOT, TESTS

ANSWER = OmegaConf.load(ROOT / "conf" / "eval" / "default.yaml").answer
HINT = ANSWER.question_hints.locomo_category["2"]


def _question_line(question: Question, cfg=ANSWER) -> str:
    prompt = answer_request(question, [], cfg).messages[-1][1]
    return next(line for line in prompt.splitlines() if line.startswith("Question: "))


def test_only_category_2_questions_get_the_date_instruction_after_the_question():
    ds = locomo.load(str(TESTS / "fixtures" / "locomo" / "locomo10.json"))
    questions = [q for e in ds.episodes for q in e.questions]
    temporal = [q for q in questions if q.categories["locomo_category"] == "2"]
    others = [q for q in questions if q.categories["locomo_category"] in ("1", "3", "4")]
    assert temporal and others
    for q in temporal:
        assert _question_line(q) == f"Question: {q.text} {HINT}"
    for q in others:
        assert _question_line(q) == f"Question: {q.text}"
    assert "date" in HINT and "approximate" in HINT


def test_other_datasets_and_an_empty_hint_table_leave_the_question_alone():
    q = Question("x", "When did she move?", ("May",), 0, categories={"question_type": "2"})
    assert _question_line(q) == "Question: When did she move?"
    dated = Question("y", "When?", ("May",), 0, categories={"locomo_category": "2"})
    off = OmegaConf.merge(ANSWER, {"question_hints": None})
    assert _question_line(dated, off) == "Question: When?"


def test_the_hint_table_is_a_checked_setting(make_cfg):
    from memharness.eval.run.validate import config_problems

    assert config_problems(make_cfg("dataset=locomo")) == []
    assert config_problems(make_cfg("eval.answer.question_hints=null")) == []
    bad = config_problems(make_cfg("+eval.answer.question_hints.locomo_category.3=[1]"))
    assert any("question_hints" in p for p in bad)
