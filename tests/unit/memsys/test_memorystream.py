"""MemoryStream's Generative Agents recency: the paper's decay since last access vs the released code's ranks."""

from __future__ import annotations

import numpy as np
import pytest
from memharness.memsys.memorystream.memory import MemoryStream, recency_scores
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.services.types import Completion
from memharness.memsys.testing.doubles import HashingEmbedder
from memharness.memsys.types import units_from_texts


class SameRating:
    def complete(self, requests, desc=None):
        return [Completion(text="5") for _ in requests]


def test_recency_scores_paper_decays_per_step_since_access_code_per_rank_oldest_highest():
    last = [0, 3, 1, 3]
    assert np.allclose(recency_scores(last, 4, 0.5, "paper"), [0.5**4, 0.5, 0.5**3, 0.5])
    # ascending by last access (ties in memory order): 0, 2, 1, 3 get ranks 1..4
    assert np.allclose(recency_scores(last, 4, 0.5, "released_code"), [0.5, 0.5**3, 0.5**2, 0.5**4])
    with pytest.raises(ValueError, match="memory.recency"):
        recency_scores(last, 4, 0.5, "hourly")


@pytest.mark.parametrize("recency, expected", [("paper", "newest"), ("released_code", "oldest")])
def test_recency_alone_ranks_the_newest_first_in_the_paper_and_the_oldest_in_the_code(
    recency, expected
):
    memory = MemoryStream(
        llm=SameRating(),
        embedder=Embedder(HashingEmbedder()),
        tokenizer=get_tokenizer(),
        top_k=1,
        scoring="generative_agents",
        recency=recency,
        importance_prompt="{memory}",
        importance_weight=0.0,
        relevance_weight=0.0,
    )
    assert MemoryStream(tokenizer=get_tokenizer()).recency == "paper"  # the default
    memory.insert(units_from_texts(["oldest", "middle", "newest"], source_id="d"))
    assert [item.text for item in memory.retrieve("anything", 100)] == [expected]
    assert memory.stats()["recency"] == recency


def test_unset_decay_and_weights_follow_the_recency_mode_and_a_set_value_wins():
    """paper: 0.995 and 1 / 1 / 1; released_code: the code's 0.99 and global weights [0.5, 3, 2]
    (recency, relevance, importance), stored here as (recency, importance, relevance)."""
    paper = MemoryStream(tokenizer=get_tokenizer(), scoring="generative_agents")
    code = MemoryStream(
        tokenizer=get_tokenizer(), scoring="generative_agents", recency="released_code"
    )
    assert (paper.recency_decay, paper.weights) == (0.995, (1.0, 1.0, 1.0))
    assert (code.recency_decay, code.weights) == (0.99, (0.5, 2.0, 3.0))
    mixed = MemoryStream(
        tokenizer=get_tokenizer(), recency="released_code", recency_decay=0.9, relevance_weight=1
    )
    assert (mixed.recency_decay, mixed.weights) == (0.9, (0.5, 2.0, 1.0))
    with pytest.raises(ValueError, match="memory.recency"):
        MemoryStream(tokenizer=get_tokenizer(), recency="hourly")


class RatingByText:
    """Importance 10 for memories that mention 'wedding', 1 otherwise."""

    def complete(self, requests, desc=None):
        return [Completion(text="10" if "wedding" in r.messages[-1][1] else "1") for r in requests]


def test_the_released_code_weights_let_relevance_outrank_importance_where_equal_weights_do_not():
    """One memory is important and a little relevant, one on-topic but mundane, one neither. With
    1 / 1 / 1 the important one wins (1 + its relevance against 1); with the code's relevance weight 3
    against importance 2 the on-topic one does (3 against 2 + 3 x its relevance), so the constants
    reach the ranking."""
    texts = [
        "the wedding was in the garden",
        "the bakery closed in june",
        "garden fence painted blue",
    ]

    def top(recency):
        memory = MemoryStream(
            llm=RatingByText(),
            embedder=Embedder(HashingEmbedder()),
            tokenizer=get_tokenizer(),
            top_k=1,
            scoring="generative_agents",
            recency=recency,
            recency_weight=0.0,
            importance_prompt="{memory}",
            update_access=False,
        )
        memory.insert(units_from_texts(texts, source_id="d"))
        return memory.retrieve("garden fence painted blue", 100)[0].text

    assert top("paper") == texts[0]
    assert top("released_code") == texts[2]


class RatesB:
    """Importance 10 for the memory holding "B-memory", 1 for every other."""

    def complete(self, requests, desc=None):
        return [Completion(text="10" if "B-memory" in r.messages[-1][1] else "1") for r in requests]


DATED = [  # a dated episode: two turns an hour apart on 1 May, one turn 19 days later
    ("A-memory", "2023-05-01T10:00"),
    ("B-memory", "2023-05-01T11:00"),
    ("C-memory", "2023-05-20T10:00"),
]


def _dated_stream(times, **settings):
    memory = MemoryStream(
        llm=RatesB(),
        embedder=Embedder(HashingEmbedder()),
        tokenizer=get_tokenizer(),
        top_k=1,
        scoring="generative_agents",
        importance_prompt="{memory}",
        importance_weight=0.6,
        relevance_weight=0.0,
        **settings,
    )
    for i, ((text, _), when) in enumerate(zip(DATED, times, strict=True)):
        memory.insert(units_from_texts([text], source_id="conv", start=i, timestamp=when))
    return memory


def test_recency_decays_by_the_datas_hours_on_a_dated_episode():
    # hand-checked, recency weight 1, importance 0.6 (B rated 10, A and C 1), relevance 0:
    # data clock: ages 456 h / 455 h / 0 h -> 0.995**age min-max = 0, 0.0006, 1
    #   -> A 0, B 0.6 + 0.0006, C 1: C first
    # insert steps: ages 2 / 1 / 0 -> 0, 0.499, 1 -> A 0, B 1.099, C 1: B first
    times = [when for _, when in DATED]
    by_hours = _dated_stream(times)
    assert by_hours.clock == "data"  # the default
    assert [i.text for i in by_hours.retrieve("anything", 100)] == ["C-memory"]
    assert by_hours.stats()["recency_clock"] == "data_hours"
    assert by_hours.stats()["clock_fallback"] is None
    by_steps = _dated_stream(times, clock="steps")
    assert [i.text for i in by_steps.retrieve("anything", 100)] == ["B-memory"]
    assert by_steps.stats()["recency_clock"] == "insert_steps"


@pytest.mark.parametrize(
    "times, reason",
    [
        (["2023-05-01T10:00", None, "2023-05-20T10:00"], "a unit without a timestamp"),
        (["2023-05-20T10:00", "2023-05-01T11:00", "2023-05-21T10:00"], "timestamps go backwards"),
    ],
)
def test_without_a_forward_clock_recency_falls_back_to_insert_steps(times, reason):
    memory = _dated_stream(times)
    assert [i.text for i in memory.retrieve("anything", 100)] == ["B-memory"]
    stats = memory.stats()
    assert stats["recency_clock"] == "insert_steps" and stats["clock_fallback"].startswith(reason)


def test_a_timestamp_that_is_not_iso_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"timestamp '1 May 2023', not ISO 8601") as err:
        _dated_stream(["2023-05-01T10:00", "1 May 2023", "2023-05-20T10:00"])
    assert "\n" not in str(err.value)


def test_locomo_and_a_retrieval_access_move_on_the_data_clock():
    from memharness.data_prep import locomo
    from paths import TESTS

    episode = locomo.load(str(TESTS / "fixtures" / "locomo" / "locomo10.json")).episodes[0]
    memory = MemoryStream(
        llm=SameRating(),
        embedder=Embedder(HashingEmbedder()),
        tokenizer=get_tokenizer(),
        top_k=1,
        scoring="generative_agents",
        importance_prompt="{memory}",
        recency_weight=0.0,  # relevance alone picks the retrieved memory
    )
    memory.insert(episode.units)
    assert memory.stats()["recency_clock"] == "data_hours"
    first = memory.units[0].id
    assert memory._last_access_hours[0] < memory._now_hours()
    assert [item.node_id for item in memory.retrieve(memory.units[0].text, 10_000)] == [first]
    assert memory._last_access_hours[0] == memory._now_hours()  # accessed now: age 0 hours
    state = memory.state()
    again = MemoryStream(tokenizer=get_tokenizer(), scoring="generative_agents")
    again.load_state(state)
    assert again._last_access_hours == memory._last_access_hours


def test_forgetting_on_the_data_clock_keeps_the_rows_aligned_and_now_at_the_latest_time():
    # forget C (the latest, 0 h old): A and B keep their own times and ages (456 h / 455 h from
    # C's time, which stays the stream's now), so B (rated 10) is first, not a clock moved back
    times = [when for _, when in DATED]
    memory = _dated_stream(times)
    now = memory._now_hours()
    c_id = memory.units[2].id
    memory.forget([c_id])
    assert memory._now_hours() == now and len(memory._hours) == len(memory.units) == 2
    assert len(memory._last_access_hours) == 2
    assert [i.text for i in memory.retrieve("anything", 100)] == ["B-memory"]
