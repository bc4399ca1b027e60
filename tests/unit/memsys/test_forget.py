"""MemorySystem.forget (issue 45): plant a unit, derive from it, forget it, and check that no
retrievable item's provenance (derived items included) and no stored text still holds it; the
default rebuild is checked the same way, and each system's own cost beside the rebuild's."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cam_fakes import four_groups, make_cam
from cam_fakes import units as cam_units
from graphrag_fakes import TEXTS as GRAPH_TEXTS
from graphrag_fakes import StepLLM, responder
from graphrag_fakes import unit as graph_unit
from memharness.baselines.full_context import FullContext
from memharness.memsys.graphrag import GraphRAG
from memharness.memsys.hierarchy.forget import prune_units
from memharness.memsys.memorystream.memory import MemoryStream
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat, WordTokenizer
from memharness.memsys.types import FORGET_KEY, FORGET_METHOD_KEY, Unit
from memtree_fakes import MergeLLM, make_tree
from memtree_fakes import unit as tree_unit
from raptor_fakes import EchoSummariser, make_raptor, two_blobs
from raptor_fakes import unit as raptor_unit
from structmem_fakes import FakeLLM, by_kind, make_memory
from structmem_fakes import unit as struct_unit

TABLE = {"a1": [1, 0, 0, 0], "a2": [1, 0.2, 0, 0], "a3": [1, 0, 0.3, 0], "b": [0, 1, 0, 0]}


def everything_retrievable(memory, queries, budget=10_000):
    """Every item the memory returns for the queries (top-k set high where the system has one)."""
    return [item for q in queries for item in memory.retrieve(q, budget)]


def assert_forgotten(memory, unit_id, queries):
    items = everything_retrievable(memory, queries)
    assert items, "the memory returned nothing: the test would pass vacuously"
    assert all(unit_id not in i.source_unit_ids for i in items)
    assert all(u.id != unit_id for u in memory.units)


# ---------------------------------------------------------------- the hierarchy core's rule
def test_the_core_removes_emptied_nodes_upwards_and_marks_surviving_ancestors_affected():
    tree = make_tree(TABLE, top_k=50)
    units = [tree_unit(t, i) for i, t in enumerate(["a1", "a2", "b"])]
    tree.insert(units)
    parent = tree.parent[tree.n_nodes - 2]  # the a-branch parent holding a1's copy and a2
    pruned = prune_units(tree.store, {units[1].id})
    assert pruned.removed == 1 and len(pruned.store) == tree.n_nodes - 1
    assert pruned.affected == [pruned.index[parent]]
    assert all(units[1].id not in pruned.store.source_units(v) for v in range(len(pruned.store)))
    both = prune_units(tree.store, {units[0].id, units[1].id})
    assert both.removed == 3 and both.affected == []  # the parent went with its two leaves


# ---------------------------------------------------------------- MemTree: prune and rewrite
def test_memtree_forget_removes_the_leaf_and_rewrites_every_ancestor_without_it():
    llm = MergeLLM()
    tree = make_tree(TABLE, llm=llm, top_k=50)
    units = [tree_unit(t, i) for i, t in enumerate(["a1", "a2", "a3", "b"])]
    tree.insert(units)
    # root -> P "((a1+a2#1)+a3#2)" -> [Q "(a1+a3#1)" -> [a1, a3], a2]; root -> b
    assert tree.texts == ["", "((a1+a2#1)+a3#2)", "(a1+a3#1)", "a2", "a1", "a3", "b"]
    record = tree.forget([units[2].id])
    assert record["method"] == "prune_and_rewrite" and record["units"] == 1
    # Q keeps its one child's text; P is folded again from its children: one call
    assert tree.texts == ["", "(a1+a2#1)", "a1", "a2", "a1", "b"] and record["calls"] == 1
    assert_forgotten(tree, units[2].id, ["a1", "a2", "a3", "b"])
    # heights, depths and unit counts stay consistent with the pruned tree
    assert tree.n_units[0] == 3 and len(tree.depth) == tree.n_nodes == len(tree.n_units)
    for v in range(tree.n_nodes):
        kids = tree.children[v]
        assert tree.height[v] == (1 + max(tree.height[c] for c in kids) if kids else 0)
    # and it keeps working: a new unit is inserted into the pruned tree
    tree.insert([tree_unit("a3", 4)])
    assert tree.n_units[0] == 4


def test_memtree_a_failed_rewrite_falls_back_to_the_children_texts_and_is_counted():
    tree = make_tree(TABLE, llm=MergeLLM(fail_when="a1"), top_k=50)
    units = [tree_unit(t, i) for i, t in enumerate(["a1", "a2", "a3", "b"])]
    tree.insert(units)
    tree.forget([units[2].id])
    assert tree.texts[1] == "a1\na2"  # the fold failed on a1: the children's texts, joined
    assert not any("a3" in t for t in tree.texts)
    assert tree.degraded.get("forget_rewrite_failed", 0) >= 1
    assert_forgotten(tree, units[2].id, ["a1", "a2", "a3", "b"])


def test_memtree_own_forget_costs_fewer_calls_than_its_rebuild():
    records = {}
    for method in ("own", "rebuild"):
        tree = make_tree(TABLE, top_k=50)
        units = [tree_unit(t, i) for i, t in enumerate(["a1", "a2", "a3", "b", "a1 a2"])]
        tree.insert(units)
        records[method] = tree.forget([units[3].id], method=method)
        assert_forgotten(tree, units[3].id, ["a1", "b"])
    assert records["own"]["calls"] == 0  # b was a leaf of the root: nothing derived from it
    assert records["rebuild"]["calls"] > 0 and records["rebuild"]["method"] == "rebuild"


# ---------------------------------------------------------------- MemoryStream: drop the records
@pytest.mark.parametrize("scoring", ["cosine", "generative_agents"])
def test_memorystream_forget_drops_the_unit_and_keeps_the_rest_aligned(scoring):
    llm = FakeLLM(lambda prompt: "7")
    memory = MemoryStream(
        llm=llm,
        embedder=Embedder(HashingEmbedder(dim=64)),
        tokenizer=WordTokenizer(),
        top_k=10,
        scoring=scoring,
        importance_prompt="rate {memory}",
    )
    texts = ["I live in Lisbon", "my cat is called Pepper", "I work as a nurse"]
    units = [struct_unit(t, i) for i, t in enumerate(texts)]
    memory.insert(units)
    record = memory.forget([units[0].id])
    assert record == {**record, "method": "drop", "units": 1, "calls": 0}
    assert_forgotten(memory, units[0].id, texts)
    items = memory.retrieve("Pepper cat", 1000)
    assert items[0].node_id == units[1].id and len(items) == 2
    assert memory.now == 3  # the step count still includes the forgotten insert


# ---------------------------------------------------------------- structural memory: drop extractions
@pytest.mark.parametrize("answer_with", ["memory", "documents"])
def test_structmem_forget_drops_every_triple_extracted_from_the_unit(answer_with):
    nora, library = (
        by_kind(),
        by_kind(
            triples="1. library; opens at; nine",
            facts="1. The library opens at nine. | library",
            summary="The library's hours.",
        ),
    )
    llm = FakeLLM(lambda prompt: (nora if "grey cat and" in prompt else library)(prompt))
    memory = make_memory(llm, structure="mixed", answer_with=answer_with, top_k=50)
    units = [
        struct_unit("Nora adopted a grey cat and named it Pepper.", 0),
        struct_unit("The library opens at nine.", 1, source="doc-b"),
    ]
    memory.insert(units)
    derived = [v for v in range(len(memory.store)) if units[0].id in memory.store.units[v]]
    assert any(memory.store.meta[v]["kind"] == "triples" for v in derived)
    record = memory.forget([units[0].id])
    assert record["method"] == "drop" and record["calls"] == 0
    assert not any("Nora" in t for t in memory.store.texts)
    assert units[0].id not in memory.docs.doc_texts
    assert_forgotten(memory, units[0].id, ["Nora cat", "Pepper", "library"])


# ---------------------------------------------------------------- the default: rebuild
@pytest.mark.parametrize("method", ["own", "rebuild"])
def test_raptor_forget_leaks_no_cluster_summary_and_resummarises_fewer_than_a_rebuild(method):
    memory = make_raptor(two_blobs(n=10), llm=EchoSummariser(), top_k=200)
    texts = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]
    units = [raptor_unit(t, i) for i, t in enumerate(texts)]
    memory.insert(units)
    memory.ensure_built()
    build_calls = memory.llm.calls
    planted = re.compile(r"\ba2\b")  # clustered with a5 (two_blobs, seed 0)
    assert "sum(a2 a5)" in memory.store.texts  # a cluster summary holds it
    record = memory.forget([units[2].id], method=method)
    assert not any(planted.search(t) for t in memory.store.texts)
    assert_forgotten(memory, units[2].id, texts)
    if method == "own":  # only the summaries above a2 again, from a5 and their other members
        assert record["method"] == "prune_and_resummarise"
        assert 0 < record["calls"] < build_calls / 4
    else:
        assert record["method"] == "rebuild" and memory.rebuilds[-1]["forget"] is True
        assert record["calls"] > build_calls / 2


def test_raptor_rebuilds_when_a_chunk_mixes_the_forgotten_unit_with_kept_ones():
    memory = make_raptor(two_blobs(n=10), chunks={"chunker": "sentences"}, top_k=200)
    units = [raptor_unit("a0 a1.", 0), raptor_unit("a2 a3.", 1)]  # one chunk of both
    memory.insert(units)
    memory.ensure_built()
    assert memory.store.units[0] == (units[0].id, units[1].id)
    assert memory.forget([units[0].id])["method"] == "rebuild"
    assert not any(re.search(r"\ba0\b", t) for t in memory.store.texts)


def test_an_offline_memory_not_built_yet_only_drops_the_units():
    memory = make_raptor(two_blobs(n=10), top_k=200)
    units = [raptor_unit(f"a{i}", i) for i in range(5)]
    memory.insert(units)
    record = memory.forget([units[0].id])
    assert record["method"] == "before_build" and record["calls"] == 0
    assert_forgotten(memory, units[0].id, ["a0", "a1"])  # the build that follows leaves it out


def test_online_default_rebuild_through_the_real_facade_is_metered():
    chat = ScriptedChat(default="ok")
    memory = FullContext(llm=LLM(chat, progress=False), tokenizer=WordTokenizer())
    units = [struct_unit(t, i) for i, t in enumerate(["one fact", "another fact"])]
    memory.insert(units)
    record = memory.forget([units[1].id])
    assert record["method"] == "rebuild" and record["calls"] == 0 and "prompt_tokens" in record
    assert_forgotten(memory, units[1].id, ["fact"])
    assert memory.stats()["forgets"] == [record]


def test_forgetting_an_unknown_unit_is_refused_in_one_line_and_changes_nothing():
    memory = FullContext(tokenizer=WordTokenizer())
    memory.insert([struct_unit("kept", 0)])
    with pytest.raises(ValueError, match=r"full_context.forget: 1 unit id\(s\) not in memory"):
        memory.forget(["u-missing"])
    assert len(memory.units) == 1 and memory.forgets == []


def test_rebuild_keeps_the_construction_arguments():
    memory = MemoryStream(
        embedder=Embedder(HashingEmbedder(dim=16)), tokenizer=WordTokenizer(), top_k=1
    )
    units = [struct_unit(t, i) for i, t in enumerate(["x y", "y z", "z w"])]
    memory.insert(units)
    memory.forget([units[2].id], method="rebuild")
    assert memory.top_k == 1 and len(memory.retrieve("y", 100)) == 1
    assert len(memory._vectors) == 2 and np.isfinite(np.stack(memory._vectors)).all()


def test_cam_default_rebuild_leaks_no_community_summary_of_the_forgotten_unit():
    memory = make_cam(four_groups(), traversal="collapsed", top_k=100)
    words = [f"{g}{i}" for g in "abcd" for i in range(1, 5)]
    units = cam_units(words)
    memory.insert(units)
    assert any("a2" in t.split() or "a2)" in t for t in memory.store.texts if t != "a2")
    record = memory.forget([units[1].id], method="rebuild")  # own: test_forget_cam.py
    assert record["method"] == "rebuild" and memory.rebuilds[-1]["forget"] is True
    assert not any(re.search(r"\ba2\b", t) for t in memory.store.texts)
    assert all(units[1].id not in memory.store.source_units(v) for v in range(len(memory.store)))
    assert_forgotten(memory, units[1].id, words)


def test_graphrag_default_rebuild_leaks_no_entity_relation_or_report_of_the_unit():
    llm = StepLLM(responder())
    memory = GraphRAG(
        llm=llm,
        embedder=HashingEmbedder(dim=128),
        tokenizer=WordTokenizer(),
        traversal="local",
        communities={"max_cluster_size": 3, "use_lcc": False},
    )
    units = [graph_unit(t, i, source=f"d{i // 3}") for i, t in enumerate(GRAPH_TEXTS)]
    memory.insert(units)
    memory.ensure_built()
    gone = units[0].id
    assert any(gone in memory.store.source_units(v) for v in range(len(memory.store)))
    record = memory.forget([gone], method="rebuild")  # own forget: test_forget_graphrag.py
    assert record["method"] == "rebuild" and len(memory.units) == len(units) - 1
    store = memory.store
    assert all(gone not in store.source_units(v) for v in range(len(store)))
    relations = [r for v in range(len(store)) for r in store.meta[v].get("relations", [])]
    assert relations and all(gone not in r["units"] for r in relations)
    assert all(gone not in t.units for t in memory.text_units.values())
    assert_forgotten(memory, gone, GRAPH_TEXTS)


def test_a_forget_request_in_the_insert_stream_forgets_at_its_place_and_is_not_stored():
    memory = FullContext(tokenizer=WordTokenizer())
    kept, gone = struct_unit("kept fact", 0), struct_unit("gone fact", 1)
    request = Unit("u-req", "please forget", "s", 2, metadata={FORGET_KEY: [gone.id]})
    later = struct_unit("later fact", 3)
    memory.insert([kept, gone, request, later])
    assert [u.id for u in memory.units] == [kept.id, later.id]
    assert memory.forgets[0]["units"] == 1 and memory.forgets[0]["method"] == "rebuild"
    rebuild = Unit(
        "u-req2", "forget", "s", 4, metadata={FORGET_KEY: [kept.id], FORGET_METHOD_KEY: "rebuild"}
    )
    memory.insert([rebuild])
    assert [u.id for u in memory.units] == [later.id] and memory.rebuilds[-1]["forget"]
