"""MemTree with real embedded models (the tiny SmolLM2-135M via llama.cpp, MiniLM): plumbing, not quality."""

from __future__ import annotations

import pytest
from memharness.memsys.memtree.memory import MemTree
from memharness.memsys.types import units_from_texts

pytestmark = pytest.mark.slow


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
    yield llm, Embedder(SentenceTransformerBackend()), get_tokenizer()
    llm.close()


def test_memtree_with_embedded_models(services, tmp_path):
    from omegaconf import OmegaConf

    llm, embedder, tokenizer = services
    prompt = OmegaConf.load("conf/memory/memtree.yaml").aggregate_prompt
    tree = MemTree(
        llm, embedder, tokenizer, aggregate_prompt=prompt, aggregate_max_tokens=48, top_k=3
    )
    texts = [
        "I adopted a puppy called Rex last spring.",
        "My dog Rex loves chasing balls in the park.",
        "The quarterly tax report is due on Friday.",
    ]
    tree.insert(units_from_texts(texts, "s"))
    dog_parent = tree.children[0][0]
    # The two dog sentences are similar enough for MiniLM to pass θ(0) = 0.4: the first leaf expanded.
    assert (
        len(tree.children[dog_parent]) == 2 and tree.texts[tree.children[dog_parent][0]] == texts[0]
    )
    assert tree.texts[dog_parent] not in texts and tree.texts[dog_parent].strip()
    assert tree.parent[tree.n_nodes - 1] == 0  # the tax note is its own branch
    assert [r["llm_calls"] for r in tree.insertions] == [0, 1, 0]
    items = tree.search("What is the name of my dog?", budget_tokens=500)
    assert items and tree.units[0].id in items[0].source_unit_ids
    tree.save(tmp_path)
    again = MemTree.load(tmp_path, embedder=embedder, tokenizer=tokenizer)
    assert [i.node_id for i in again.search("tax deadline", 500)] == [
        i.node_id for i in tree.search("tax deadline", 500)
    ]
