"""MemTree insertion and retrieval rules, pinned with hand-made embeddings and a fake LLM."""

from __future__ import annotations

import math

import numpy as np
import pytest
from memtree_fakes import MergeLLM, make_tree, unit

# a1, a2 nearly parallel; b orthogonal to both; c at cosine 0.6 with a1.
TABLE = {
    "a1": [1, 0, 0, 0],
    "a2": [1, 0.2, 0, 0],
    "a3": [1, 0, 0.3, 0],
    "b": [0, 1, 0, 0],
    "c": [0.6, 0, 0, 0.8],
    "d": [0, 0, 0, 1],
}


def test_first_unit_becomes_leaf_of_root_without_llm_calls():
    tree = make_tree(TABLE)
    leaf = tree.insert_unit(unit("a1"))
    assert tree.parent[leaf] == 0 and tree.depth[leaf] == 1 and tree.texts[leaf] == "a1"
    assert tree.texts[0] == "" and tree.llm.calls == 0
    assert tree.insertions[-1]["llm_calls"] == 0


def test_dissimilar_unit_becomes_new_leaf_of_current_node():
    tree = make_tree(TABLE)
    tree.insert_unit(unit("a1"))
    leaf = tree.insert_unit(unit("b", 1))
    assert tree.children[0] == [1, leaf] and tree.llm.calls == 0
    assert tree.texts[1] == "a1"  # untouched: not on the path


def test_reaching_a_leaf_expands_it_and_keeps_original_text():
    tree = make_tree(TABLE)
    first = tree.insert_unit(unit("a1"))
    original_id = tree.ids[first]
    new = tree.insert_unit(unit("a2", 1))
    copy = tree.children[first][0]
    assert tree.children[first] == [copy, new]
    assert tree.texts[copy] == "a1" and tree.ids[copy] == original_id
    assert tree.ids[first] != original_id and tree.leaf_unit[first] is None
    assert tree.depth[copy] == tree.depth[new] == 2
    assert tree.texts[first] == "(a1+a2#1)"  # aggregate of both, conditioned on 1 entry
    np.testing.assert_allclose(tree.embeddings[first], tree.embedder.embed(["a1 a2"])[0], atol=1e-6)
    np.testing.assert_allclose(tree.embeddings[copy], tree.embedder.embed(["a1"])[0], atol=1e-6)
    assert tree.llm.calls == 1
    assert tree.source_unit_ids(first) == (unit("a1").id, unit("a2", 1).id)


def test_descends_into_most_similar_child_and_aggregates_only_the_path_in_one_batch():
    tree = make_tree(TABLE)
    for i, t in enumerate(["a1", "a2", "b"]):
        tree.insert_unit(unit(t, i))
    parent_a, b_leaf = tree.children[0]
    copy_a1, leaf_a2 = tree.children[parent_a]
    before = list(tree.texts)
    tree.llm.batches.clear()
    new = tree.insert_unit(unit("a3", 3))
    # a3 is closer to a1 (0.958) than to a2 (0.940): path root -> parent_a -> copy_a1 (expanded).
    assert tree.parent[new] == copy_a1 and tree.depth[new] == 3
    assert len(tree.llm.batches) == 1 and len(tree.llm.batches[0]) == 2
    changed = {v for v in range(len(before)) if tree.texts[v] != before[v]}
    assert changed == {parent_a, copy_a1}
    assert tree.texts[parent_a] == "((a1+a2#1)+a3#2)"  # conditioned on the 2 entries it summarised
    assert tree.texts[copy_a1] == "(a1+a3#1)"
    assert tree.texts[tree.children[copy_a1][0]] == "a1"
    assert tree.texts[0] == "" and tree.texts[b_leaf] == "b" and tree.texts[leaf_a2] == "a2"
    assert tree.n_units[0] == 4 and tree.n_units[parent_a] == 3 and tree.height[0] == 3


def test_descends_at_exactly_the_threshold():
    table = {"x": [1, 0], "y": [0.4, math.sqrt(1 - 0.16)]}
    tree = make_tree(table, threshold_form="exponential", base_threshold=0.4 - 1e-6)
    tree.insert_unit(unit("x"))
    tree.insert_unit(unit("y", 1))
    assert len(tree.children[1]) == 2  # descended (>=) and expanded the leaf
    tree2 = make_tree(table, threshold_form="exponential", base_threshold=0.4 + 1e-4)
    tree2.insert_unit(unit("x"))
    tree2.insert_unit(unit("y", 1))
    assert len(tree2.children[0]) == 2  # just below: new leaf of the root


def test_deeper_threshold_stops_descent():
    # c has cosine ~0.6 with the a-parent: passes θ(0)=0.4 but not θ(1)=0.4·e^0.5=0.66.
    tree = make_tree(TABLE, threshold_form="exponential")
    for i, t in enumerate(["a1", "a2"]):
        tree.insert_unit(unit(t, i))
    parent_a = tree.children[0][0]
    leaf = tree.insert_unit(unit("c", 2))
    assert tree.parent[leaf] == parent_a and len(tree.children[parent_a]) == 3
    assert tree.insertions[-1]["llm_calls"] == 1


def test_threshold_forms():
    tree = make_tree(TABLE, base_threshold=0.4, rate=0.5)
    assert tree.depth_threshold(0) == pytest.approx(0.4)
    assert tree.depth_threshold(1) == pytest.approx(
        0.4 * math.exp(0.5)
    )  # empty tree: max_depth >= 1
    for i, t in enumerate(["a1", "a2", "a3"]):
        tree.insert_unit(unit(t, i))
    assert tree.tree_max_depth == 3
    assert tree.depth_threshold(2) == pytest.approx(0.4 * math.exp(0.5 * 2 / 3))
    fixed = make_tree(TABLE, max_depth=10)
    assert fixed.depth_threshold(4) == pytest.approx(0.4 * math.exp(0.2))
    expo = make_tree(TABLE, threshold_form="exponential", base_threshold=0.1, rate=0.25)
    assert expo.depth_threshold(3) == pytest.approx(0.1 * math.exp(0.75))
    # settings are checked from their declarations before a run starts (memsys.settings)
    from memharness.memsys.settings_check import check_target

    problems = check_target(
        {"_target_": "memharness.memsys.memtree.MemTree", "threshold_form": "linear"}, "memory"
    )
    assert problems == ["memory.threshold_form='linear': expected one of scaled | exponential"]


def test_failed_aggregation_keeps_old_content_and_is_counted():
    tree = make_tree(TABLE, llm=MergeLLM(fail_when="a1"))
    tree.insert_unit(unit("a1"))
    old = tree.embeddings[1].copy()
    tree.insert_unit(unit("a2", 1))
    assert tree.texts[1] == "a1" and len(tree.children[1]) == 2
    np.testing.assert_array_equal(tree.embeddings[1], old)
    assert tree.aggregation_failures == 1 and tree.insertions[-1]["failures"] == 1
    assert tree.stats()["insertion"]["aggregation_failures"] == 1


def test_serial_updates_build_the_same_tree_one_call_per_batch():
    trees = []
    for parallel in (True, False):
        tree = make_tree(TABLE, parallel_updates=parallel)
        for i, t in enumerate(["a1", "a2", "b", "a3", "c"]):
            tree.insert_unit(unit(t, i))
        trees.append(tree)
    assert trees[0].texts == trees[1].texts and trees[0].parent == trees[1].parent
    assert all(len(b) == 1 for b in trees[1].llm.batches)
    assert any(len(b) > 1 for b in trees[0].llm.batches)


def test_insert_order_seed_shuffles_deterministically():
    units = [unit(t, i) for i, t in enumerate(["a1", "b", "a2", "d", "a3", "c"])]
    order = []
    for seed in (None, 1, 1, 2):
        tree = make_tree(TABLE, insert_order_seed=seed)
        tree.add(units)
        order.append([r["unit"] for r in tree.insertions])
    assert order[0] == [u.id for u in units]
    assert order[1] == order[2] and sorted(order[1]) == sorted(order[0])
    assert order[1] != order[0] or order[3] != order[0]


def _built():
    tree = make_tree(TABLE, top_k=2)
    for i, t in enumerate(["a1", "a2", "b", "a3", "d"]):
        tree.insert_unit(unit(t, i))
    return tree


def test_collapsed_retrieval_ranks_all_nodes_filters_and_fills_budget():
    tree = _built()
    q = tree.embedder.embed(["a1"])[0]
    sims = tree.embeddings[1:] @ q
    ranked = tree.collapsed_retrieve(q, 3)
    expect = (np.argsort(-sims, kind="stable")[:3] + 1).tolist()
    assert [v for v, _ in ranked] == expect and 0 not in [
        v for v, _ in tree.collapsed_retrieve(q, 99)
    ]
    assert [s for _, s in ranked] == sorted([s for _, s in ranked], reverse=True)
    tree.retrieve_threshold = 0.5
    assert all(s >= 0.5 for _, s in tree.collapsed_retrieve(q, 99))
    assert len(tree.collapsed_retrieve(q, 99)) == int((sims >= 0.5).sum())
    tree.retrieve_threshold = 0.0
    items = tree.search("a1", budget_tokens=1000)
    assert len(items) == 2 and items[0].text == "a1" and items[0].level == 0
    top_parent = tree.children[0][0]
    item = next(
        i for i in tree.search(tree.texts[top_parent], 1000) if i.node_id == tree.ids[top_parent]
    )
    assert item.level == tree.height[top_parent] > 0 and len(item.source_unit_ids) == 3
    assert tree.search("a1", budget_tokens=1)[0].tokens <= 1


def test_traversal_retrieval_takes_top_k_per_level():
    tree = _built()
    q = tree.embedder.embed(["a3"])[0]
    ranked = tree.traversal_retrieve(q, 1)
    nodes = [v for v, _ in ranked]
    assert [tree.depth[v] for v in nodes] == list(range(1, len(nodes) + 1))
    for parent, child in zip(nodes, nodes[1:], strict=False):
        assert tree.parent[child] == parent
        siblings = tree.children[parent]
        assert child == siblings[int(np.argmax(tree.embeddings[siblings] @ q))]
    assert tree.texts[nodes[-1]] == "a3"
    two = tree.traversal_retrieve(q, 2)
    assert len([v for v, _ in two if tree.depth[v] == 1]) == 2
    tree.traversal = "top_down"
    assert [i.node_id for i in tree.search("a3", 1000)][:2] == [tree.ids[v] for v, _ in two][:2]


def test_empty_tree_returns_nothing():
    tree = make_tree(TABLE)
    assert tree.search("a1", 100) == [] and tree.stats()["structure"]["nodes"] == 0


def test_node_ids_stay_unique_when_the_same_leaf_copy_is_expanded_again():
    table = {"a": [1.0, 0.0], "b": [1.0, 0.0], "c": [1.0, 0.0], "d": [1.0, 0.0]}
    tree = make_tree(table, base_threshold=0.1)
    tree.insert([unit(w, i) for i, w in enumerate("abcd")])
    assert len(tree.ids) == len(set(tree.ids))


def test_an_insert_batch_is_embedded_in_one_request_and_builds_the_same_tree():
    units = [unit(t, i) for i, t in enumerate(["a1", "b", "a2", "c", "a3", "d"])]
    batched = make_tree(TABLE)
    batched.add(units)
    one_by_one = make_tree(TABLE)
    for u in units:
        one_by_one.insert_unit(u)
    # the units' texts went out together, once; only re-embeddings of aggregated paths follow
    assert batched.embedder.calls[0] == [u.text for u in units]
    assert not any(
        call == [u.text] for call in batched.embedder.calls[1:] for u in units
    )  # none alone again
    assert len(batched.embedder.calls) < len(one_by_one.embedder.calls)
    assert batched.texts == one_by_one.texts and batched.children == one_by_one.children
    np.testing.assert_allclose(batched.embeddings, one_by_one.embeddings, atol=1e-6)
