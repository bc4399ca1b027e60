"""The products' own forget (the worker's ``forget`` op) against the installed products, with a
scripted LLM behind the harness endpoint on 127.0.0.1: plant a unit, let the product derive a memory
from it, forget it, and no retrieved item's provenance names it any more."""

from __future__ import annotations

import json

import pytest
from memharness.memsys.products.adapter import ProductMemory
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat, WordTokenizer
from memharness.memsys.types import Unit
from processes import needs_product

FACTS = {  # a word of a unit -> the memory the scripted extraction derives from it
    "marathon": "Ann runs a marathon in Lisbon next October",
    "dog": "Ann has a dog named Rex",
    "tomatoes": "Ann grows red tomatoes",
    "violin": "Ann's sister plays the violin",
}
TEXTS = [
    "I signed up for a marathon in Lisbon",
    "We adopted a dog, his name is Rex",
    "My garden is full of red tomatoes",
    "My sister practises the violin",
]
UNITS = [
    Unit(
        id=f"u{i}",
        text=text,
        source_id="s1",
        position=i,
        timestamp=f"2023-05-0{i + 1}T10:00:00",
        metadata={"speaker": "Ann" if i % 2 == 0 else "Bob", "session": 1},
    )
    for i, text in enumerate(TEXTS)
]


def mem0_extraction(request) -> str:
    """One memory per known word among the new messages (mem0 2.2.1's "## New Messages")."""
    new = request.messages[-1][1].split("## New Messages")[-1]
    found = [{"text": memory} for word, memory in FACTS.items() if word in new]
    return json.dumps({"memory": found})


@pytest.fixture
def services():
    meter = Meter()
    llm = LLM(ScriptedChat(reply=mem0_extraction), meter=meter, progress=False)
    yield llm, Embedder(HashingEmbedder(dim=256), meter=meter)
    llm.close()


def sources(mem: ProductMemory) -> list[tuple[str, ...]]:
    return [
        item.source_unit_ids for item in mem.retrieve("Ann marathon dog tomatoes violin", 10**4)
    ]


@needs_product("mem0")
def test_mem0_forget_deletes_the_memories_of_the_unit_and_re_adds_its_neighbours(services):
    llm, embedder = services
    mem = ProductMemory(llm, embedder, WordTokenizer(), product="mem0", top_k=10)
    try:
        mem.insert(UNITS)  # two adds of two messages: (u0, u1) and (u2, u3), two memories each
        before = sources(mem)
        assert before.count(("u0", "u1")) == 2 and before.count(("u2", "u3")) == 2
        assert "forget" in mem.hello["ops"]
        record = mem.forget(["u0"])
        after = sources(mem)
        assert record["method"] == "product_delete" and record["units"] == 1
        assert all("u0" not in s for s in after)  # the marathon memory is gone
        assert after.count(("u1",)) == 1 and after.count(("u2", "u3")) == 2  # u1 added again
        assert record["calls"] == 1  # the one re-add of u1; the deletes call no model
        adapter = mem.stats()["adapter"]
        assert adapter["forget_deleted"] == 2 and adapter["forget_units_reinserted"] == 1
        rebuild = mem.forget(["u2"], method="rebuild")  # the reference: every unit added again
        assert rebuild["method"] == "rebuild" and rebuild["calls"] == 1  # (u1, u3): one add
        assert all("u0" not in s and "u2" not in s for s in sources(mem))
    finally:
        mem.close()
