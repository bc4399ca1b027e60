"""The generated forgetting suite (data_prep/forgetting.py) on the sample and the LoCoMo fixture."""

from __future__ import annotations

import pytest
from memharness.data_prep import forgetting, locomo, sample
from memharness.data_prep.base import DatasetError
from memharness.memsys.types import FORGET_KEY
from paths import TESTS

LOCOMO = TESTS / "fixtures" / "locomo" / "locomo10.json"


def changed(dataset):
    return [(e, q) for e in dataset.episodes for q in e.questions if q.update]


def test_the_sample_gets_a_deletion_and_a_correction_per_dialogue_with_gold_that_holds():
    before = sample.load(parts=["dialogues"])
    after = forgetting.apply(before, {"facts": 2, "seed": 0})
    assert after.metadata["forgetting"]["changed"] == 4
    for old, new in zip(before.episodes, after.episodes, strict=True):
        ids = [u.id for u in new.units]
        assert [u.position for u in new.units] == list(range(len(new.units)))
        assert set(u.id for u in old.units) <= set(ids) and len(ids) == len(old.units) + 2
        requests = [u for u in new.units if FORGET_KEY in u.metadata]
        assert len(requests) == 1
        kinds = sorted(q.update.kind for q in new.questions if q.update)
        assert kinds == ["correction", "deletion"]
        for q in new.questions:
            if q.update is None:  # untouched: same evidence units at the new positions
                was = next(o for o in old.questions if o.id == q.id)
                old_units = [u.id for u in forgetting.evidence_units(was, old.units)]
                assert [u.id for u in forgetting.evidence_units(q, new.units)] == old_units
                continue
            assert q.position == len(new.units)
            if q.update.kind == "deletion":
                assert list(q.update.forgotten_units) == requests[0].metadata[FORGET_KEY]
                assert q.answers == (forgetting.ForgetSettings().abstain_answer,)
                assert q.evidence == () and q.update.superseded_answer
                # the request comes right after the forgotten evidence
                last = max(ids.index(u) for u in q.update.forgotten_units)
                assert (
                    new.units[last + 1] is not None and FORGET_KEY in new.units[last + 1].metadata
                )
            else:
                (current,) = q.update.current_units
                unit = new.units[ids.index(current)]
                assert q.answers[0] in unit.text and q.update.superseded_answer not in unit.text
                assert all(ids.index(s) < ids.index(current) for s in q.update.superseded_units)


def test_the_suite_is_deterministic_under_its_seed():
    base = sample.load(parts=["dialogues"])

    def picks(seed):
        return [(q.id, q.update) for _, q in changed(forgetting.apply(base, {"seed": seed}))]

    assert picks(3) == picks(3)
    assert any(picks(s) != picks(0) for s in range(1, 6))


def test_the_locomo_fixture_runs_with_requests_at_the_end():
    ds = forgetting.apply(
        locomo.load(str(LOCOMO)), {"facts": 1, "mode": "deletion", "position": "end"}
    )
    pairs = changed(ds)
    assert pairs and all(q.update.kind == "deletion" for _, q in pairs)
    for episode, _ in pairs:
        assert FORGET_KEY in episode.units[-1].metadata


def test_bad_settings_and_datasets_without_spans_are_refused_in_one_line():
    base = sample.load(parts=["dialogues"])
    with pytest.raises(DatasetError, match="unknown key"):
        forgetting.apply(base, {"fact": 2})
    with pytest.raises(DatasetError, match="mode in"):
        forgetting.apply(base, {"mode": "erase"})
    with pytest.raises(DatasetError, match="no question of sample has gold evidence"):
        forgetting.apply(sample.load(parts=["news"]), {"facts": 1})
    assert forgetting.apply(base, None) is base


def test_longmemeval_knowledge_updates_get_their_superseded_and_current_evidence():
    from memharness.data_prep import longmemeval
    from memharness.eval.metrics.forgetting import answer_scores, retrieval_scores
    from memharness.memsys.types import RetrievedItem

    fixture = TESTS / "fixtures" / "longmemeval" / "longmemeval_s_cleaned.json"
    ds = forgetting.apply(longmemeval.load(str(fixture), split="s"), None)
    marked = changed(ds)
    assert [q.id for _, q in marked] == ["0c9a41d7"]  # the fixture's one knowledge-update item
    episode, q = marked[0]
    old, new = episode.units[0], episode.units[4]  # balcony (Feb), then garage (Oct)
    assert q.update.superseded_units == (old.id,) and q.update.current_units == (new.id,)

    def items(*units):
        return [RetrievedItem("t", 1.0, u.id, source_unit_ids=(u.id,)) for u in units]

    assert retrieval_scores(q, items(old, new)) == {"stale_retrieval": 1.0}
    assert retrieval_scores(q, items(new, old)) == {"stale_retrieval": 0.0}
    assert answer_scores(q, "On the balcony") == {}  # the gold has no old value to read


def test_facts_sharing_evidence_are_never_both_chosen():
    from memharness.memsys.types import Episode, Evidence, Question, units_from_texts

    units = units_from_texts(["a", "b", "c"], "s")

    def ask(i, position):
        return Question(
            f"q{i}",
            f"q{i}?",
            (f"ans{i}",),
            3,
            evidence=(Evidence("s", "", position, position + 1),),
        )

    episode = Episode("e", units, [ask(0, 0), ask(1, 0), ask(2, 1)])
    for seed in range(8):
        out = forgetting.forget_episode(
            episode, forgetting.ForgetSettings(facts=3, mode="deletion", seed=seed)
        )
        gone = [u for q in out.questions if q.update for u in q.update.forgotten_units]
        assert len(gone) == len(set(gone)) == 2  # q0 and q1 share unit a: one of them only
