"""The gold-evidence oracle: the context is exactly the question's evidence, with provenance; a question
without evidence is counted (or fails when asked to); facts carry their article as provenance."""

from __future__ import annotations

import pytest
from memharness.baselines.oracle import GoldEvidenceOracle, NoEvidence
from memharness.eval.run import evidence as ev
from memharness.memsys.testing.doubles import WordTokenizer
from memharness.memsys.types import Episode, Evidence, Question, units_from_texts


def dialogue():
    units = units_from_texts(["a1 x", "a2 y", "a3 z"], source_id="s1")
    units += units_from_texts(["b1 q", "b2 r"], source_id="s2", start=3)
    return units


def ask(*evidence: Evidence, qid: str = "q1") -> Question:
    return Question(id=qid, text="what?", answers=("x",), position=3, evidence=tuple(evidence))


def oracle(units, **kw) -> GoldEvidenceOracle:
    memory = GoldEvidenceOracle(tokenizer=WordTokenizer(), **kw)
    memory.insert(units)
    return memory


def test_span_evidence_is_exactly_its_units_in_order_each_its_own_provenance():
    units = dialogue()
    memory = oracle(units)
    q = ask(Evidence("s1", position=1, end=3), Evidence("s2", position=4, end=5))
    items = memory.retrieve_question(q, 100)
    assert [i.text for i in items] == ["a2 y", "a3 z", "b2 r"]
    assert [i.source_unit_ids for i in items] == [(units[1].id,), (units[2].id,), (units[4].id,)]
    assert ev.recall_scores(q, items, ev.unit_index(Episode("e", units, [q])))[
        "evidence_recall"
    ] == pytest.approx(1.0)
    assert memory.stats()["unit_items"] == 3 and memory.stats()["oracle"] is True


def test_overlapping_spans_give_a_unit_once():
    memory = oracle(dialogue())
    q = ask(Evidence("s1", position=0, end=2), Evidence("s1", position=1, end=3))
    assert [i.text for i in memory.retrieve_question(q, 100)] == ["a1 x", "a2 y", "a3 z"]


def test_facts_are_the_context_and_their_article_is_the_provenance():
    units = units_from_texts(["art one part", "art one end"], source_id="A")
    units += units_from_texts(["art two"], source_id="B", start=2)
    memory = oracle(units)
    q = ask(Evidence("A", text="fact from A", position=0), Evidence("B", text="fact from B"))
    items = memory.retrieve_question(q, 100)
    assert [i.text for i in items] == ["fact from A", "fact from B"]
    assert items[0].source_unit_ids == (units[0].id, units[1].id)
    assert items[1].source_unit_ids == (units[2].id,)
    scores = ev.recall_scores(q, items, ev.unit_index(Episode("e", units, [q])))
    assert scores["evidence_recall"] == 1.0 and scores["evidence_recall_at_1"] == 0.5
    # use_facts=false: the articles' own units instead of the facts
    plain = oracle(units, use_facts=False).retrieve_question(q, 100)
    assert [i.text for i in plain] == ["art one part", "art one end", "art two"]


def test_a_question_without_evidence_is_counted_with_its_id_or_fails_when_configured():
    memory = oracle(dialogue())
    assert memory.retrieve_question(ask(qid="bare"), 100) == []
    memory.retrieve_question(ask(Evidence("s1", position=0, end=1)), 100)
    stats = memory.stats()
    assert (stats["questions"], stats["questions_without_evidence"]) == (2, 1)
    assert stats["questions_without_evidence_ids"] == ["bare"]
    strict = oracle(dialogue(), no_evidence="fail")
    with pytest.raises(NoEvidence, match="question bare has no gold evidence"):
        strict.retrieve_question(ask(qid="bare"), 100)
    assert strict.stats()["questions_without_evidence"] == 1


def test_evidence_that_matches_nothing_is_counted_and_a_dangling_fact_still_given():
    memory = oracle(dialogue())
    q = ask(Evidence("gone"), Evidence("elsewhere", text="a fact with no article"))
    items = memory.retrieve_question(q, 100)
    assert [(i.text, i.source_unit_ids) for i in items] == [("a fact with no article", ())]
    stats = memory.stats()
    assert (stats["evidence_unmatched"], stats["evidence_dangling"]) == (1, 1)


def test_items_beyond_the_budget_are_cut_and_counted():
    memory = oracle(dialogue())
    q = ask(Evidence("s1", position=0, end=3))
    assert [i.text for i in memory.retrieve_question(q, 5)] == ["a1 x", "a2 y"]
    assert (memory.stats()["questions_cut"], memory.stats()["items_cut"]) == (1, 1)


def test_the_oracle_refuses_a_text_only_retrieval_and_memories_are_not_oracles():
    from memharness.memsys.memorystream import MemoryStream

    with pytest.raises(TypeError, match="retrieve_question"):
        oracle(dialogue()).retrieve("what?", 100)
    assert GoldEvidenceOracle.oracle and not MemoryStream.oracle


def test_an_oracle_run_on_data_without_gold_evidence_is_refused(make_cfg, tmp_path):
    """Issue 43 case 7: it exited 0 and the report labelled empty contexts 'oracle: gold evidence'."""
    from memharness.eval.run.runner import run
    from memharness.memsys.services.types import ConfigError
    from paths import TESTS

    fixture = TESTS / "fixtures" / "narrativeqa" / "narrativeqa.jsonl"
    cfg = make_cfg("memory=oracle", "dataset=narrativeqa", f"dataset.loader.path={fixture}")
    with pytest.raises(ConfigError, match=r"dataset 'narrativeqa' has no gold evidence on any"):
        run(cfg, tmp_path / "r")
    assert not (tmp_path / "r" / "samples.jsonl").exists()
