"""The hierarchy core on a hand-built DAG: traversals, provenance, diagnostics, persistence."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hierarchy_fakes import (
    VECTORS,
    FakeLogprobBackend,
    PairMemory,
    TableEmbedder,
    build_dag,
    unit_vec,
)
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.diagnostics import coherence, level_profile, structure_stats
from memharness.memsys.hierarchy.memory import load_memory, restore_retrievals
from memharness.memsys.hierarchy.revenue import revenue_exact, revenue_sampled
from memharness.memsys.hierarchy.ss_theta import ss_theta
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.llm import LLM
from memharness.memsys.testing.doubles import WordTokenizer
from memharness.memsys.types import units_from_texts

# c leans towards a a little, so every pair of atoms has some similarity.
VECTORS["c"] = unit_vec(0.3, 1, 0)


def names(idx, ranked):
    back = {v: k for k, v in idx.items()}
    return [back[v] for v, _ in ranked]


def cos(x, y):
    return float(VECTORS[x] @ VECTORS[y])


@pytest.fixture
def dag():
    return build_dag()


def test_collapsed_pools_every_level_and_filters(dag):
    store, idx = dag
    assert names(idx, traverse.collapsed(store, VECTORS["a"], 3)) == ["a", "P", "b"]
    assert names(idx, traverse.collapsed(store, VECTORS["a"], 10, threshold=0.5)) == [
        "a",
        "P",
        "b",
        "T",
    ]
    scores = [s for _, s in traverse.collapsed(store, VECTORS["a"], 8)]
    assert scores == sorted(scores, reverse=True) and len(scores) == 8
    assert traverse.collapsed(store, VECTORS["a"], 0) == []


def _tied_store(levels):
    """Nodes whose cosines with e1 take only three values (many ties), in a seeded random order."""
    store = HierarchyStore()
    for v, level in enumerate(levels):
        store.add_node(f"n{v}", f"t{v}", unit_vec(1, float(level), 0), 0)
    return store


def test_top_k_ties_at_the_cut_are_broken_by_node_index():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(3, 40))
        k = int(rng.integers(1, n))
        store = _tied_store(rng.integers(0, 3, n))
        sims = store.similarities(VECTORS["a"])
        want = sorted(range(n), key=lambda v: (-sims[v], v))[:k]
        assert [v for v, _ in traverse.collapsed(store, VECTORS["a"], k)] == want
        frontier = list(range(n))
        assert [
            v for v, _ in traverse.top_down(store, VECTORS["a"], k)
        ] == want  # all entry nodes (one level)
        assert [v for v, _ in traverse._rank(frontier, sims, k, -1.0)] == want


def test_collapsed_expand_replaces_parents_by_their_atoms_once(dag):
    store, idx = dag
    # top-4 is a, P, b, T: P adds b (a is already in), T adds c
    assert names(idx, traverse.collapsed_expand(store, VECTORS["a"], 4)) == ["a", "b", "c"]


def test_collapsed_expand_applies_the_threshold_to_the_expanded_atoms(dag):
    store, idx = dag
    # the seeds above 0.5 are a, P, b, T; T's atom c is below 0.5 and must not come back through T
    assert cos("a", "c") < 0.5 <= min(cos("a", "a"), cos("a", "b"))
    ranked = traverse.collapsed_expand(store, VECTORS["a"], 10, threshold=0.5)
    assert names(idx, ranked) == ["a", "b"] and all(s >= 0.5 for _, s in ranked)


def test_top_down_beam_from_the_top_level(dag):
    store, idx = dag
    assert store.entry_nodes() == [idx["T"]]  # R has no parent but is not on the top level
    assert names(idx, traverse.top_down(store, VECTORS["a"], 1)) == ["T", "P", "a"]
    # k=2 from c: T; then Q, P; then among {b, c, a} (b once, though two parents picked it): c, b
    assert names(idx, traverse.top_down(store, VECTORS["c"], 2)) == ["T", "Q", "P", "c", "b"]
    assert names(idx, traverse.top_down(store, VECTORS["c"], 2, returns="atoms")) == ["c", "b"]
    assert names(idx, traverse.top_down(store, VECTORS["c"], 3)) == ["T", "Q", "P", "c", "b", "a"]
    assert "R" not in names(idx, traverse.top_down(store, VECTORS["d"], 3))


def test_llm_guided_loop_grows_and_stops(dag):
    store, idx = dag
    script = {frozenset([idx["T"]]): [idx["T"]], frozenset([idx["P"], idx["Q"]]): [idx["Q"]]}
    seen = []

    def select(cands):
        seen.append(list(cands))
        return script.get(frozenset(cands), [])

    out = traverse.llm_guided([idx["T"]], select, traverse.children_of(store), max_turns=5)
    assert out.selected == [idx["T"], idx["Q"]]
    assert seen == [
        [idx["T"]],
        [idx["P"], idx["Q"]],
        [idx["b"], idx["c"]],
    ]  # nothing picked on turn 3
    assert len(out.turns) == 3 and out.turns[-1]["selected"] == []
    # a selection that never changes the candidates stops when they repeat; the turn limit binds too
    same = traverse.llm_guided([idx["a"]], lambda c: list(c), lambda s: list(s), max_turns=5)
    assert len(same.turns) == 1
    capped = traverse.llm_guided(
        [idx["T"]], lambda c: list(c), traverse.children_of(store), max_turns=2
    )
    assert len(capped.turns) == 2
    failed = traverse.llm_guided(
        [idx["T"]], lambda c: None, traverse.children_of(store), max_turns=5
    )
    assert failed.selected == [] and failed.turns[0]["selected"] is None


def test_provenance_unions_the_units_beneath_in_node_order(dag):
    store, idx = dag
    assert store.source_units(idx["T"]) == ("u-a", "u-b", "u-c")
    assert store.source_units(idx["Q"]) == ("u-b", "u-c") and store.source_units(idx["d"]) == (
        "u-d",
    )
    new = store.add_node("n-e", "e", unit_vec(1, 0, 1), 0, units=("u-e",))
    store.link(idx["Q"], new)  # the cached provenance of Q and T is invalidated
    assert store.source_units(idx["T"]) == ("u-a", "u-b", "u-c", "u-e")
    item = store.item(idx["P"], 0.5, WordTokenizer())
    assert item.source_unit_ids == ("u-a", "u-b") and item.level == 1 and item.tokens == 3


def test_structure_stats_on_a_dag(dag):
    store, _ = dag
    s = structure_stats(store)
    assert (s["nodes"], s["leaf_nodes"], s["branching_nodes"], s["levels"]) == (8, 4, 4, 3)
    # depth: T, R = 1; P, Q, d = 2; a, b, c = 3
    assert s["depth_max"] == 3 and s["depth_mean"] == pytest.approx(17 / 8)
    assert s["branching_factor"] == pytest.approx(7 / 4) and s[
        "height_to_width_ratio"
    ] == pytest.approx(3 / 2)
    assert s["multi_parent_nodes"] == 1 and s["same_level_edges"] == 1 and s["max_level_width"] == 3


def test_level_profile_and_compression(dag):
    store, _ = dag
    prof = level_profile(store, WordTokenizer())
    assert [prof[k]["tokens_total"] for k in "012"] == [10, 7, 3]
    assert prof["0"]["compression"] is None
    assert prof["1"]["compression"] == pytest.approx(0.7) and prof["2"][
        "compression"
    ] == pytest.approx(3 / 7)
    assert [prof[k]["nodes"] for k in "012"] == [4, 3, 1] and prof["0"]["tokens_median"] == 2.5


def test_coherence_within_vs_between_groups(dag):
    store, _ = dag
    coh = coherence(store)
    within = (cos("a", "b") + cos("b", "c")) / 2  # pairs sharing P or Q
    between = (cos("a", "c") + cos("a", "d") + cos("b", "d") + cos("c", "d")) / 4
    assert coh["1"]["within"] == pytest.approx(within) and coh["1"]["between"] == pytest.approx(
        between
    )
    assert coh["1"]["gap"] == pytest.approx(within - between) and coh["1"]["gap"] > 0
    assert (coh["1"]["pairs_within"], coh["1"]["pairs_between"], coh["1"]["groups"]) == (2, 4, 3)
    assert (
        coh["2"]["within"] == pytest.approx(float(VECTORS["P"] @ VECTORS["Q"]))
        and coh["2"]["between"] is None
    )
    sampled = coherence(store, exact_max_members=1, samples=4000, seed=1)["1"]
    assert sampled["method"] == "sampled" and sampled["within"] == pytest.approx(within, abs=0.02)


def test_revenue_credits_each_pair_to_its_smallest_common_ancestor(dag):
    store, _ = dag
    w = {p: max(0.0, cos(*p)) for p in [("a", "b"), ("b", "c"), ("a", "c")]}
    # n = 4: (a,b) meet in P (2 leaves), (b,c) in Q (2), (a,c) in T (3); pairs with d have no common ancestor
    expected = 2 * w[("a", "b")] + 2 * w[("b", "c")] + 1 * w[("a", "c")]
    exact = revenue_exact(store)
    assert exact["revenue"] == pytest.approx(expected)
    assert exact["normalised"] == pytest.approx(expected / (2 * sum(w.values())))
    est = revenue_sampled(store, samples=20000, seed=0)
    assert abs(est["revenue"] - expected) < 4 * est["stderr"] + 1e-9


def test_ss_theta_with_a_fake_logprob_backend_and_its_cache(dag, tmp_path):
    store, idx = dag
    backend = FakeLogprobBackend()
    llm = LLM(backend, cache=CallCache(tmp_path / "c.sqlite"), progress=False)
    out = ss_theta(store, llm, WordTokenizer(), groups=8, seed=0)
    assert out["status"] == "ok" and out["groups"] == 4 and out["failed"] == 0
    assert out["mean"] == pytest.approx(0.75)  # 1 - 0.25 / 1.0 for every group
    assert out["by_level"] == {
        "1": {"n": 3, "mean": pytest.approx(0.75)},
        "2": {"n": 1, "mean": pytest.approx(0.75)},
    }
    assert backend.calls == 8
    assert (
        ss_theta(store, llm, WordTokenizer(), groups=8, seed=0)["mean"] == out["mean"]
        and backend.calls == 8
    )
    assert ss_theta(store, llm, WordTokenizer(), groups=1, seed=0)["groups"] == 1


def test_ss_theta_is_unavailable_without_logprobs(dag):
    from memharness.memsys.testing.doubles import ScriptedChat

    store, _ = dag
    out = ss_theta(store, LLM(ScriptedChat(), progress=False), WordTokenizer(), groups=4)
    assert out["status"] == "unavailable" and "fake-chat" in out["reason"]
    assert ss_theta(store, None, WordTokenizer(), groups=0) == {"status": "off"}


def test_store_roundtrip_keeps_everything(dag, tmp_path):
    store, idx = dag
    store.meta[idx["P"]]["kind"] = "cluster"
    store.save(tmp_path, extra={"system": "x"})
    loaded, doc = HierarchyStore.load(tmp_path)
    assert doc["system"] == "x" and loaded.root is None
    for field in ("ids", "texts", "levels", "children", "parents", "units", "meta", "edges"):
        assert getattr(loaded, field) == getattr(store, field), field
    np.testing.assert_array_equal(loaded.embeddings, store.embeddings)
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_toy_offline_system_builds_searches_saves_and_reloads(tmp_path):
    texts = ["alpha apples", "beta bananas bread", "gamma cherries", "delta dates dunes"]
    units = units_from_texts(texts, source_id="doc")
    memory = PairMemory(embedder=TableEmbedder(), tokenizer=WordTokenizer(), top_k=2, label="duo")
    memory.insert(units)
    items = memory.retrieve("alpha apples", 100)
    assert memory.rebuilds and memory.rebuilds[0]["units"] == 4
    assert [i.text for i in items] == ["alpha apples", "alpha apples + beta bananas bread"]
    assert items[1].source_unit_ids == (units[0].id, units[1].id) and items[1].level == 1
    assert memory.retrievals[0]["nodes"] == [0, 4]
    assert memory.retrievals[0]["node_ids"] == [i.node_id for i in items]
    stats = json.loads(json.dumps(memory.stats()))
    assert stats["structure"]["nodes"] == 6 and stats["levels"]["1"]["nodes"] == 2
    assert stats["traversal"]["name"] == "collapsed" and stats["ss_theta"] == {"status": "off"}
    memory.save(tmp_path)
    embedder = TableEmbedder()
    again = load_memory(tmp_path, embedder=embedder, tokenizer=WordTokenizer())
    assert isinstance(again, PairMemory) and again.label == "duo" and again.top_k == 2
    assert [(i.node_id, i.source_unit_ids) for i in again.retrieve("alpha apples", 100)] == [
        (i.node_id, i.source_unit_ids) for i in items
    ]
    assert (
        embedder.calls == 1 and again.rebuilds == []
    )  # only the question was embedded; no rebuild
    assert again.retrievals[0] == memory.retrievals[0]  # the saved records come back, by node id


def test_saved_retrieval_records_find_their_nodes_by_id_in_a_reordered_store():
    store = HierarchyStore()
    for name in ("z", "y", "x"):
        store.add_node(name, name, unit_vec(1, 0, 0), 0)
    records = [
        {
            "question": "q",
            "node_ids": ["x", "gone", "z"],
            "nodes": [0, 1, 2],
            "scores": [0.9, 0.8, 0.7],
        },
        {"question": "old", "nodes": [1], "scores": [0.5]},
    ]  # written before ids were recorded
    restored = restore_retrievals(store, records)
    assert restored[0]["nodes"] == [2, 0] and restored[0]["scores"] == [0.9, 0.7]
    assert restored[0]["node_ids"] == ["x", "gone", "z"] and restored[1] == records[1]


@pytest.mark.parametrize("traversal", ["collapsed", "collapsed_expand", "top_down"])
def test_every_traversal_runs_on_any_memory(traversal):
    texts = ["alpha apples", "beta bananas bread", "gamma cherries", "delta dates dunes"]
    memory = PairMemory(
        embedder=TableEmbedder(), tokenizer=WordTokenizer(), top_k=2, traversal=traversal
    )
    memory.insert(units_from_texts(texts, source_id="doc"))
    items = memory.retrieve("gamma cherries", 100)
    assert items and items[0].text.startswith("gamma cherries")
    if traversal == "collapsed_expand":
        assert all(i.level == 0 for i in items)


def test_bad_core_settings_name_the_key():
    from memharness.memsys.settings_check import check_target

    def problems(**settings):
        return check_target({"_target_": "hierarchy_fakes.PairMemory", **settings}, "memory")

    assert problems() == [] and problems(traversal="top_down", label="x") == []
    assert problems(traversal="sideways") == [
        "memory.traversal='sideways': expected one of collapsed | collapsed_expand | top_down"
    ]
    assert any(
        p.startswith("memory.diagnostics.nope: unknown setting")
        for p in problems(diagnostics={"nope": 1})
    )
    assert problems(top_down_returns="some")[0].startswith("memory.top_down_returns='some'")


def test_the_command_answers_from_a_saved_memory_and_rewrites_its_view(tmp_path, capsys):
    from memharness.memsys.hierarchy.__main__ import main

    memory = PairMemory(embedder=TableEmbedder(), tokenizer=WordTokenizer(), top_k=2, label="duo")
    memory.insert(
        units_from_texts(["alpha apples", "beta bananas bread", "gamma cherries"], source_id="doc")
    )
    memory.retrieve("alpha apples", 100)
    memory.save(tmp_path / "m")
    main(
        [str(tmp_path / "m"), "--html", str(tmp_path / "v.html"), "--ask", "alpha apples"],
        embedder=TableEmbedder(),
    )
    out = capsys.readouterr().out
    assert "'alpha apples'" in out.split("Q: alpha apples")[1] and "wrote" in out
    assert "alpha apples" in (tmp_path / "v.html").read_text()


def _many_groups_store(members: int, groups: int) -> HierarchyStore:
    """``members`` leaves in ``groups`` parents (round robin), seeded random unit vectors."""
    rng = np.random.default_rng(0)
    store = HierarchyStore()
    vecs = rng.normal(size=(members + groups, 8))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for i in range(members):
        store.add_node(f"l{i}", "t", vecs[i], 0)
    for g in range(groups):
        store.add_node(f"g{g}", "t", vecs[members + g], 1, children=range(g, members, groups))
    return store


def test_sampled_coherence_keeps_memory_linear_in_the_groups():
    """The sampled branch used a dense members x groups matrix gathered for every sampled pair:
    2 x 20,000 x 1,500 float32 here (240 MB), growing as the square of the memory (CAM at 1M
    tokens: 0.57 GB above the startup, memory exponent 2.1). Same figures, far less memory."""
    import tracemalloc

    store = _many_groups_store(3000, 1500)
    tracemalloc.start()
    coh = coherence(store, exact_max_members=100, samples=20000, seed=3)["1"]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert coh["method"] == "sampled" and peak < 30e6
    # the sampled pairs share a group exactly when round robin puts them in one
    rng = np.random.default_rng(3 + 1)
    a = rng.integers(0, 3000, 20000)
    b = (a + rng.integers(1, 3000, 20000)) % 3000
    assert coh["pairs_within"] == int((a % 1500 == b % 1500).sum())
