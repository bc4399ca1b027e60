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
from paths import TESTS
from processes import needs_product, run_py

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
@pytest.mark.parametrize("views", [1, 2])  # options.perspectives: every add made once or twice
def test_mem0_forget_deletes_the_memories_of_the_unit_and_re_adds_its_neighbours(services, views):
    llm, embedder = services
    mem = ProductMemory(
        llm, embedder, WordTokenizer(), product="mem0", top_k=10, options={"perspectives": views}
    )
    try:
        mem.insert(UNITS)  # two adds of two messages: (u0, u1) and (u2, u3), two memories each
        before = sources(mem)
        assert before.count(("u0", "u1")) == 2 * views and before.count(("u2", "u3")) == 2 * views
        assert "forget" in mem.hello["ops"]
        record = mem.forget(["u0"])
        after = sources(mem)
        assert record["method"] == "product_delete" and record["units"] == 1
        assert all("u0" not in s for s in after)  # the marathon memory is gone
        assert after.count(("u1",)) == views and after.count(("u2", "u3")) == 2 * views
        assert record["calls"] == views  # the re-add of u1 per perspective; deletes call no model
        adapter = mem.stats()["adapter"]
        assert adapter["forget_deleted"] == 2 * views
        assert adapter["forget_units_reinserted"] == 1
        rebuild = mem.forget(["u2"], method="rebuild")  # the reference: every unit added again
        assert rebuild["method"] == "rebuild" and rebuild["calls"] == views  # (u1, u3): one add
        assert all("u0" not in s and "u2" not in s for s in sources(mem))
    finally:
        mem.close()


LIGHTRAG_SCRIPT = [  # LightRAG 1.5.7's prompts, as tests/conf/llm/fake_lightrag.yaml answers them
    (
        "signed up for a marathon",
        "entity<|#|>Marathon Runner<|#|>Person<|#|>Signed up for a marathon in Lisbon.\n"
        "entity<|#|>Lisbon<|#|>Location<|#|>City of the marathon.\n"
        "relation<|#|>Marathon Runner<|#|>Lisbon<|#|>marathon<|#|>Runs a marathon in Lisbon.\n"
        "<|COMPLETE|>",
    ),
    (  # session 2 names Lisbon too: the entity is shared, LightRAG must rebuild it on delete
        "red tomatoes",
        "entity<|#|>Lisbon<|#|>Location<|#|>City of the garden.\n<|COMPLETE|>",
    ),
    ("missed or incorrectly formatted", "<|COMPLETE|>"),
    ("User Query:", '{"high_level_keywords": ["marathon"], "low_level_keywords": ["Lisbon"]}'),
]


@needs_product("lightrag")
def test_lightrag_forget_deletes_the_session_document_and_re_inserts_its_other_units():
    meter = Meter()
    chat = ScriptedChat(LIGHTRAG_SCRIPT, default="<|COMPLETE|>")
    llm = LLM(chat, meter=meter, progress=False)
    units = [  # two sessions: LightRAG documents (u0, u1) and (u2, u3)
        Unit(
            id=u.id,
            text=u.text,
            source_id="s1",
            position=u.position,
            timestamp=u.timestamp,
            metadata={"speaker": "Ann", "session": 1 + u.position // 2},
        )
        for u in UNITS
    ]
    mem = ProductMemory(
        llm, Embedder(HashingEmbedder(dim=64), meter=meter), WordTokenizer(), product="lightrag"
    )
    try:
        mem.insert(units)
        before = {i.node_id: i for i in mem.retrieve("marathon Lisbon", 10**4)}
        assert before["entity:Lisbon"].source_unit_ids == ("u0", "u1", "u2", "u3")
        assert "marathon" in before["entity:Lisbon"].text  # derived from the session with u0
        record = mem.forget(["u0"])
        assert record["method"] == "product_delete"
        query = "marathon Lisbon, we adopted a dog, his name is Rex"
        found = mem.retrieve(query, 10**4)
        after = {i.node_id: i.source_unit_ids for i in found}
        assert after and all("u0" not in s for s in after.values())
        assert "entity:Marathon Runner" not in after and ("u1",) in after.values()  # u1 is back
        lisbon = next(i for i in found if i.node_id == "entity:Lisbon")  # rebuilt from session 2
        assert lisbon.source_unit_ids == ("u2", "u3") and "marathon" not in lisbon.text
        assert record["calls"] == 2  # u1's new document: one extraction, one gleaning call
        stats = mem.stats()
        assert stats["adapter"]["forget_deleted"] == 1
        assert stats["adapter"]["forget_units_reinserted"] == 1
        product = stats["product_stats"]
        assert (product["documents"], product["units"], product["entities"]) == (2, 3, 1)
    finally:
        mem.close()
        llm.close()


AMEM_SCRIPT = [  # a-mem 0.2.6's two prompts: the note's analysis; its evolution links it to u0
    (
        "Generate a structured analysis",
        '{"keywords": ["Ann"], "context": "A chat with Ann.", "tags": ["chat"]}',
    ),
    (
        "memory evolution agent",
        '{"should_evolve": true, "actions": ["strengthen"], "suggested_connections": ["u0"], '
        '"tags_to_update": ["chat"], "new_context_neighborhood": [], "new_tags_neighborhood": []}',
    ),
]


@pytest.mark.slow
@pytest.mark.doubles
@needs_product("amem")
def test_amem_forget_deletes_the_note_of_the_unit_though_other_notes_link_to_it():
    meter = Meter()
    llm = LLM(ScriptedChat(AMEM_SCRIPT, default="{}"), meter=meter, progress=False)
    mem = ProductMemory(
        llm, Embedder(HashingEmbedder(dim=64), meter=meter), WordTokenizer(), product="amem"
    )
    try:
        mem.insert(UNITS)  # u1..u3 evolve with a link to u0 (left dangling by the delete)
        found = [i.source_unit_ids for i in mem.retrieve("My sister practises the violin", 10**4)]
        assert ("u0",) in found and ("u3",) in found
        record = mem.forget(["u0"])
        assert record["method"] == "product_delete" and record["calls"] == 0
        after = [i.source_unit_ids for i in mem.retrieve("My sister practises the violin", 10**4)]
        assert ("u3",) in after and all("u0" not in s for s in after)
        sought = [i.source_unit_ids for i in mem.retrieve("I signed up for a marathon", 10**4)]
        assert sought and all("u0" not in s for s in sought)
        stats = mem.stats()
        assert stats["adapter"]["forget_deleted"] == 1
        assert stats["product_stats"]["notes"] == 3
    finally:
        mem.close()
        llm.close()


@needs_product("mem0")
def test_a_forget_request_in_the_stream_reaches_mem0_in_a_run(tmp_path):
    """run.py with the generated forgetting suite: the request is served by mem0's own delete."""
    proc = run_py(
        tmp_path,
        "memory=mem0",
        "dataset=sample",
        "dataset.loader.parts=[dialogues]",
        "dataset.limit=1",
        f"hydra.searchpath=[file://{TESTS / 'conf'}]",
        "llm=fake_mem0",  # one memory, from the marathon round: the fact the suite deletes
        "embedder=hashing",
        "eval.judge.enabled=false",
        "+dataset.forget.facts=2",
        "+dataset.forget.mode=mixed",
        "+dataset.forget.position=after_evidence",
        "+dataset.forget.seed=0",
        "+dataset.forget.method=own",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = next(iter(json.loads((tmp_path / "run" / "memory_stats.json").read_text()).values()))
    assert [f["method"] for f in stats["forgets"]] == ["product_delete"]
    assert (
        stats["product_stats"]["memories_deleted"] == 1 and stats["adapter"]["forget_deleted"] == 1
    )
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["metrics"]["forget_leak"]["mean"] == 0.0
