"""forget() with the real embedded models (SmolLM2-135M via llama.cpp, MiniLM): MemTree's own
forget against its rebuild, with the cost read from the real meter. Plumbing, not quality."""

from __future__ import annotations

import pytest
from memharness.memsys.memtree.memory import MemTree
from memharness.memsys.types import units_from_texts

pytestmark = pytest.mark.slow

TEXTS = [
    "I adopted a puppy called Rex last spring.",
    "My dog Rex loves chasing balls in the park.",
    "The quarterly tax report is due on Friday.",
]


@pytest.fixture(scope="module")
def services():
    from memharness.memsys.services.backends.local import (
        LlamaCppBackend,
        SentenceTransformerBackend,
    )
    from memharness.memsys.services.embed import Embedder
    from memharness.memsys.services.llm import LLM
    from memharness.memsys.services.tokens import get_tokenizer

    llm = LLM(LlamaCppBackend(embedded="smollm2", n_ctx=1024), max_in_flight=1, progress=False)
    # one meter for both, as the runner builds them: the forget's cost reads it
    yield llm, Embedder(SentenceTransformerBackend(), meter=llm.meter), get_tokenizer()
    llm.close()


def test_memtree_forgets_a_merged_unit_with_the_real_models(services):
    from omegaconf import OmegaConf

    llm, embedder, tokenizer = services
    prompt = OmegaConf.load("conf/memory/memtree.yaml").aggregate_prompt
    tree = MemTree(
        llm, embedder, tokenizer, aggregate_prompt=prompt, aggregate_max_tokens=32, top_k=10
    )
    units = units_from_texts(TEXTS, "s")
    tree.insert(units)
    dog_parent = tree.children[0][0]
    assert tree.texts[dog_parent] not in TEXTS  # an LLM summary derived from both dog units
    record = tree.forget([units[0].id])
    items = tree.retrieve("What is the name of my dog?", 2000) + tree.retrieve("tax", 2000)
    assert items and all(units[0].id not in i.source_unit_ids for i in items)
    assert all(TEXTS[0] not in t for t in tree.texts)
    # the dog parent keeps one child: its text becomes that child's (no call), embedded again
    assert record["method"] == "prune_and_rewrite" and record["calls"] == 0
    assert record["embed_texts"] == 1 and tree.texts[dog_parent] == TEXTS[1]
    assert record["seconds"] > 0 and tree.stats()["forgets"] == [record]
