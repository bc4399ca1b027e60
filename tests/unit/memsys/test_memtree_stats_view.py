"""MemTree diagnostics (Table 5, revenue), persistence and the HTML view."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from memharness.memsys.hierarchy.diagnostics import structure_stats
from memharness.memsys.hierarchy.revenue import revenue_exact, revenue_sampled
from memharness.memsys.hierarchy.view import render_html
from memharness.memsys.memtree.memory import MemTree
from memharness.memsys.testing.doubles import WordTokenizer
from memtree_fakes import WordEmbedder, make_tree, unit

TABLE = {
    "a1": [1, 0, 0, 0],
    "a2": [1, 0.2, 0, 0],
    "a3": [1, 0, 0.3, 0],
    "b": [0, 1, 0, 0],
    "c": [0.6, 0, 0, 0.8],
    "d": [0, 0, 0, 1],
}
TEXTS = ["a1", "a2", "b", "a3", "d", "c"]


def _built(**kw) -> MemTree:
    tree = make_tree(TABLE, **kw)
    for i, t in enumerate(TEXTS):
        tree.insert_unit(unit(t, i))
    return tree


def test_structure_stats_match_the_tree():
    tree = _built()
    s = structure_stats(tree.store)
    leaves = [v for v in range(1, tree.n_nodes) if not tree.children[v]]
    assert s["nodes"] == tree.n_nodes - 1 and s["leaf_nodes"] == len(leaves) == len(TEXTS)
    assert s["branching_nodes"] == s["nodes"] - s["leaf_nodes"]
    assert s["depth_max"] == max(tree.depth)
    assert s["depth_mean"] == pytest.approx(np.mean(tree.depth[1:]))
    fanouts = [
        len(c) for v, c in enumerate(tree.children) if c and v != 0
    ]  # the root is not counted
    assert s["branching_factor"] == pytest.approx(np.mean(fanouts))
    assert s["height_to_width_ratio"] == pytest.approx(max(tree.depth) / np.median(fanouts))
    assert s["root_children"] == len(tree.children[0])


def test_branching_factor_without_the_root_reproduces_table5():
    """Table 5: 3,164 nodes, 1,458 branching nodes, branching factor 2.1. Counting the root's edges gives
    3,164 / 1,459 = 2.17; without them (N - root children) / 1,458 rounds to 2.1 for 30 < root children <= 175."""
    from memharness.memsys.hierarchy.store import HierarchyStore

    store = HierarchyStore(with_root=True)
    vec = np.ones(2, np.float32) / np.sqrt(2)
    # a root with 3 children, each a chain parent -> 2 leaves: 9 nodes, 3 branching, 6 leaves
    for _ in range(3):
        p = store.add_node("p", "p", vec, 1)
        store.link(store.root, p)
        for _ in range(2):
            store.link(p, store.add_node("l", "l", vec, 0))
    s = structure_stats(store)
    assert (s["nodes"], s["branching_nodes"], s["root_children"]) == (9, 3, 3)
    assert s["branching_factor"] == pytest.approx((9 - 3) / 3)


def test_stats_json_has_table5_fig4_and_per_insertion_records():
    tree = _built()
    stats = json.loads(json.dumps(tree.stats()))
    assert set(stats["structure"]) >= {
        "nodes",
        "leaf_nodes",
        "branching_nodes",
        "depth_max",
        "depth_mean",
        "branching_factor",
        "height_to_width_ratio",
    }
    assert sum(d["nodes"] for d in stats["depth_profile"].values()) == tree.n_nodes - 1
    calls = [r["llm_calls"] for r in stats["insertions"]]
    assert len(calls) == len(TEXTS) and sum(calls) == tree.llm.calls
    assert stats["insertion"]["llm_calls_per_insertion_mean"] == pytest.approx(np.mean(calls))
    assert stats["insertion"]["llm_calls_per_insertion_std"] == pytest.approx(np.std(calls))


def _brute_revenue(tree: MemTree) -> float:
    leaves = [v for v in range(1, tree.n_nodes) if not tree.children[v]]
    n = len(leaves)

    def ancestors(v):
        out = []
        while v >= 0:
            out.append(v)
            v = tree.parent[v]
        return out

    def n_leaves(v):
        return sum(1 for x in leaves if v in ancestors(x))

    total = 0.0
    for i, j in itertools.combinations(leaves, 2):
        lca = next(a for a in ancestors(i) if a in set(ancestors(j)))
        w = max(0.0, float(tree.embeddings[i] @ tree.embeddings[j]))
        total += w * (n - n_leaves(lca))
    return total


def test_revenue_exact_matches_brute_force_and_sampled_is_close():
    tree = _built()
    exact = revenue_exact(tree.store)
    assert exact["revenue"] == pytest.approx(_brute_revenue(tree))
    assert exact["revenue"] > 0 and 0 < exact["normalised"] <= 1
    est = revenue_sampled(tree.store, samples=20000, seed=0)
    assert abs(est["revenue"] - exact["revenue"]) < 4 * est["stderr"] + 1e-9
    tree.diagnostics["revenue_exact_max_leaves"] = 2
    assert tree.stats()["revenue"]["method"] == "sampled"


def test_revenue_rewards_grouping_similar_leaves():
    # Two tight clusters: a tree that groups them earns more than a flat tree.
    table = {"p": [1, 0], "q": [0.99, 0.14], "r": [0, 1], "s": [0.14, 0.99]}
    grouped = make_tree(table, base_threshold=0.5)
    flat = make_tree(table, base_threshold=1.01)
    for tree in (grouped, flat):
        for i, t in enumerate("pqrs"):
            tree.insert_unit(unit(t, i))
    assert (
        structure_stats(flat.store)["depth_max"] == 1
        and structure_stats(grouped.store)["depth_max"] == 2
    )
    assert revenue_exact(flat.store)["revenue"] == pytest.approx(0.0)
    assert revenue_exact(grouped.store)["revenue"] > 0


def test_save_load_roundtrip_answers_the_same_without_llm_calls(tmp_path):
    tree = _built(top_k=3)
    tree.save(tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"hierarchy.json", "embeddings.npy", "view.html"}
    loaded = MemTree.load(
        tmp_path, llm=None, embedder=WordEmbedder(TABLE), tokenizer=WordTokenizer()
    )
    for q in ["a1", "b d", "c"]:
        assert [
            (i.node_id, round(i.score, 6), i.source_unit_ids, i.level)
            for i in loaded.search(q, 100)
        ] == [
            (i.node_id, round(i.score, 6), i.source_unit_ids, i.level) for i in tree.search(q, 100)
        ]
    assert loaded.stats()["structure"] == tree.stats()["structure"]
    loaded.llm = tree.llm
    loaded.insert_unit(unit("a2 b", 99))  # keeps growing after reload
    assert loaded.n_nodes > tree.n_nodes


def test_load_without_embeddings_reembeds(tmp_path):
    tree = _built()
    tree.save(tmp_path)
    (tmp_path / "embeddings.npy").unlink()
    loaded = MemTree.load(tmp_path, embedder=WordEmbedder(TABLE), tokenizer=WordTokenizer())
    np.testing.assert_allclose(loaded.embeddings, tree.embeddings, atol=1e-6)


def test_a_tree_saved_before_the_core_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "tree.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no hierarchy.json .*tree.json.*build it again"):
        MemTree.load(tmp_path, embedder=WordEmbedder(TABLE), tokenizer=WordTokenizer())


def test_html_view_embeds_escaped_nodes_and_retrievals(tmp_path):
    tree = make_tree(TABLE)
    tree.insert_unit(unit("a1 <script>x</script>"))
    tree.insert_unit(unit("a2", 1))
    tree.search("a2", 100)
    page = render_html(tree.store, retrievals=tree.retrievals)
    assert page.startswith("<!doctype html>") and "<script>x" not in page
    assert "\\u003cscript\\u003ex\\u003c/script\\u003e" in page  # JSON escapes: inert in HTML
    data = json.loads(page.split("id='data'>")[1].split("</script>")[0])
    assert len(data["nodes"]) == tree.n_nodes and data["top"] == tree.children[0]
    assert data["retrievals"][0]["question"] == "a2" and data["retrievals"][0]["nodes"]


def test_stats_after_save_and_load_equal_the_stats_before(tmp_path):
    tree = make_tree(TABLE, top_k=3)
    tree.insert([unit(t, i) for i, t in enumerate(TEXTS)])
    before = json.loads(json.dumps(tree.stats()))
    assert before["units"] == len(TEXTS)
    tree.save(tmp_path)
    loaded = MemTree.load(
        tmp_path, llm=None, embedder=WordEmbedder(TABLE), tokenizer=WordTokenizer()
    )
    assert json.loads(json.dumps(loaded.stats())) == before
    assert [u.id for u in loaded.units] == [u.id for u in tree.units]
