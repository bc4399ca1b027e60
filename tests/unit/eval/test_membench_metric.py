"""MemBench's official scores, pinned by cases worked by hand as upstream's MembenchAgent.py and
env/Membenenv.py (@0495679) compute them: the letter read from the reply and compared by equality,
and get_recall over the target steps."""

from __future__ import annotations

import pytest
from memharness.data_prep import membench as loader
from memharness.eval.metrics import kinds, membench, registry
from memharness.eval.run.evidence import recall_scores, unit_index
from memharness.memsys.types import Question, RetrievedItem
from paths import FIXTURES


def _q(gold: int = 1, membench_question: bool = True) -> Question:
    cats = {"membench_level": "low"} if membench_question else {}
    opts = ("Camping", "Hiking", "Traveling", "Fishing")
    return Question("q", "?", (opts[gold],), 0, opts, gold, categories=cats)


@pytest.mark.parametrize(
    "reply,letter",
    [
        ("B", "B"),
        (" B\n", "B"),  # remove_space_and_ent
        ('{"choice": "C"}', "C"),  # the json_schema reply, json.loads(res)["choice"]
        ('{ "choice" :\n "D" }', "D"),
        ("B. Hiking", None),  # upstream's equality fails: not a guess
        ("b", None),  # equality is case-sensitive
        ("AB", None),
        ("", None),
        ('{"choice": "E"}', None),
        ('["B"]', None),
    ],
)
def test_the_letter_is_read_as_upstream_reads_it(reply, letter):
    assert membench.read_letter(reply) == letter


def test_accuracy_is_equality_with_the_gold_letter_and_an_unparsed_reply_is_a_counted_zero():
    q = _q(gold=1)
    assert membench.membench_accuracy("B", q) == 1.0
    assert membench.membench_accuracy("C", q) == 0.0
    assert membench.membench_accuracy("B. Hiking", q) == 0.0
    assert membench.membench_unparsed("B. Hiking", q) == 1.0
    assert membench.membench_unparsed("C", q) == 0.0
    other = _q(membench_question=False)  # another dataset's multiple choice
    assert membench.membench_accuracy("B", other) is None
    assert membench.membench_unparsed("B", other) is None


def test_the_registry_scores_them_from_the_answer_as_official_metrics():
    entry = registry.lookup("membench_accuracy")
    assert entry is not None and entry.selectable and entry.higher_is_better
    assert registry.lookup("membench_unparsed").higher_is_better is False
    assert kinds.kind_label("membench_accuracy") == "official QA metric"
    scores = registry.answer_scores("B. Hiking", ["Hiking"], _q())
    assert scores["membench_accuracy"] == 0.0 and scores["membench_unparsed"] == 1.0


def test_retrieval_recall_is_get_recall_over_the_target_steps():
    ds = loader.load("third", "low", path=str(FIXTURES / "membench"))
    ep = ds.episodes[1]  # targets [0, 1] of three messages
    (q,) = ep.questions
    u = ep.units

    def item(*units):
        return RetrievedItem("t", 1.0, "n", source_unit_ids=tuple(x.id for x in units))

    # retrieved step ids [1, 2, 1]: get_recall counts the distinct ones among the targets, 1 of 2
    items = [item(u[1]), item(u[2]), item(u[1])]
    scores = recall_scores(q, items, unit_index(ep))
    assert scores["evidence_recall_at_1"] == 0.5 == scores["evidence_recall_at_10"]
    # both targets under the top 3 (a summary over 0 and 2, then 1): 2 of 2
    both = recall_scores(q, [item(u[0], u[2]), item(u[2]), item(u[1])], unit_index(ep))
    assert both["evidence_recall_at_1"] == 0.5 and both["evidence_recall_at_3"] == 1.0
    assert recall_scores(q, [], unit_index(ep))["evidence_recall"] == 0.0


def test_a_multiple_choice_run_scores_the_raw_reply_not_the_option_text_it_chose():
    # the lexical metrics compare the chosen option's text; MemBench's rule reads the reply itself
    scores = registry.answer_scores("Hiking", ["Hiking"], _q(), reply="B")
    assert scores["membench_accuracy"] == 1.0 and scores["exact_match"] == 1.0
    assert (
        registry.answer_scores("Hiking", ["Hiking"], _q(), reply="(B)")["membench_accuracy"] == 0.0
    )
