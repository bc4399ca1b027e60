"""Proportional stratified subsets on a fixture with unequal categories."""

from __future__ import annotations

from collections import Counter

import pytest
from memharness.data_prep.base import Dataset, DatasetError, proportional_allocation, subset
from memharness.memsys.types import Episode, Question, units_from_texts

SIZES = {"big": 12, "mid": 6, "tiny": 2}  # 60% / 30% / 10%


def fixture() -> Dataset:
    units = units_from_texts(["some text"], source_id="doc")
    episodes = []
    for e, (kind, n) in enumerate(SIZES.items()):
        qs = [
            Question(
                id=f"{kind}-{i}",
                text=f"q {kind} {i}",
                answers=("a",),
                position=1,
                categories={"type": kind},
            )
            for i in range(n)
        ]
        episodes.append(Episode(id=f"ep{e}", units=units, questions=qs))
    return Dataset(name="fixture", episodes=episodes)


def kinds(ds: Dataset) -> Counter:
    return Counter(q.categories["type"] for ep in ds.episodes for q in ep.questions)


@pytest.mark.parametrize(
    "limit, expected",
    [
        (10, {"big": 6, "mid": 3, "tiny": 1}),  # exact shares
        (5, {"big": 3, "mid": 1, "tiny": 1}),  # 3 / 1.5 / 0.5: tiny keeps one, mid is rounded down
        (3, {"big": 1, "mid": 1, "tiny": 1}),  # at least one per category when the limit allows
        (2, {"big": 1, "mid": 1, "tiny": 0}),  # fewer slots than categories: the largest shares
        (19, {"big": 11, "mid": 6, "tiny": 2}),  # 11.4 / 5.7 / 1.9
    ],
)
def test_each_category_keeps_its_share(limit, expected):
    assert proportional_allocation(SIZES, limit) == expected
    ds = subset(fixture(), limit, seed=3, stratify_by="type")
    assert +kinds(ds) == +Counter(expected) and ds.num_questions == limit


def test_round_robin_would_bias_the_mean_proportional_does_not():
    # a metric that is 1 on "tiny" questions only: full-set mean 0.1; the subset mean estimates it
    ds = subset(fixture(), 10, seed=0, stratify_by="type")
    values = [q.categories["type"] == "tiny" for ep in ds.episodes for q in ep.questions]
    assert sum(values) / len(values) == pytest.approx(0.1)


def test_subset_records_ids_and_is_seeded():
    a = subset(fixture(), 6, seed=1, stratify_by="type")
    again = subset(fixture(), 6, seed=1, stratify_by="type")
    other = subset(fixture(), 6, seed=2, stratify_by="type")
    ids = [q.id for ep in a.episodes for q in ep.questions]
    assert (
        a.metadata["question_ids"] == ids == [q.id for ep in again.episodes for q in ep.questions]
    )
    assert set(other.metadata["question_ids"]) != set(ids) and kinds(other) == kinds(a)
    assert a.metadata["strata"] == {
        "big": {"total": 12, "kept": 3},
        "mid": {"total": 6, "kept": 2},  # 3.6, 1.8, 0.6
        "tiny": {"total": 2, "kept": 1},
    }
    assert (a.metadata["limit"], a.metadata["subset_seed"], a.metadata["stratify_by"]) == (
        6,
        1,
        "type",
    )
    assert subset(fixture(), None).num_questions == 20
    with pytest.raises(DatasetError, match="dataset.limit"):
        subset(fixture(), 0)


def test_a_misspelled_stratifier_is_refused_naming_the_valid_categories():
    with pytest.raises(DatasetError, match=r"stratify_by='typ'.*valid: type$"):
        subset(fixture(), 5, seed=0, stratify_by="typ")
    bare = Dataset(name="bare", episodes=[replace_categories(ep) for ep in fixture().episodes])
    with pytest.raises(DatasetError, match="no categories, use null"):
        subset(bare, 5, seed=0, stratify_by="type")


def replace_categories(ep: Episode) -> Episode:
    from dataclasses import replace

    return replace(ep, questions=[replace(q, categories={}) for q in ep.questions])
