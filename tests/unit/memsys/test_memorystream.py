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
