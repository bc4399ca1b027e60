"""Label propagation (against networkx's semi-synchronous variant), size caps, super-graph, matching."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from memharness.memsys.cam.clustering import (
    communities,
    greedy_colouring,
    plan_clusters,
    propagate_labels,
    super_edges,
)
from memharness.memsys.cam.network import Replicas


def replicas_of(graph: nx.Graph) -> Replicas:
    """A replica network that is ``graph`` itself (one replica per node, id = node)."""
    reps = Replicas(next_id=graph.number_of_nodes())
    for v in graph.nodes:
        reps.owner[v], reps.members[v], reps.label[v], reps.adj[v] = (
            f"n{v}",
            frozenset(),
            v,
            set(graph[v]),
        )
        reps.of_node[f"n{v}"] = [v]
    return reps


def partition(reps: Replicas) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for r in reps.owner:
        groups.setdefault(reps.label[r], set()).add(r)
    return {frozenset(g) for g in groups.values()}


@pytest.mark.parametrize("seed", range(12))
def test_propagation_over_every_replica_is_networkx_label_propagation_communities(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 60))
    graph = nx.gnp_random_graph(n, float(rng.uniform(0.03, 0.25)), seed=seed)
    reps = replicas_of(graph)
    result = propagate_labels(reps, list(graph.nodes), max_rounds=None)
    expected = {frozenset(c) for c in nx.community.label_propagation_communities(graph)}
    assert partition(reps) == expected and not result.hit_limit


def test_two_triangles_joined_by_one_edge_give_two_communities():
    graph = nx.Graph([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)])
    reps = replicas_of(graph)
    propagate_labels(reps, list(graph.nodes), None)
    assert partition(reps) == {frozenset({0, 1, 2}), frozenset({3, 4, 5})}


def test_greedy_colouring_is_networkx_largest_first():
    graph = nx.gnp_random_graph(30, 0.2, seed=3)
    reps = replicas_of(graph)
    classes = greedy_colouring(list(graph.nodes), reps.adj)
    colours = nx.coloring.greedy_color(graph, strategy="largest_first")
    assert {frozenset(c) for c in classes} == {
        frozenset(v for v in graph if colours[v] == c) for c in set(colours.values())
    }


def test_online_propagation_starts_from_the_affected_replicas_and_grows_when_labels_change():
    # settled: a path 0-1-2 (label 2) and a triangle 6-7-8 (label 8); then new replicas 10, 11, 12
    # (a triangle) join node 2. Only 2 and the new replicas are active at first.
    graph = nx.Graph([(0, 1), (1, 2), (6, 7), (7, 8), (6, 8)])
    reps = replicas_of(graph)
    propagate_labels(reps, list(graph.nodes), None)
    assert reps.label == {0: 2, 1: 2, 2: 2, 6: 8, 7: 8, 8: 8}
    for v, nbrs in ((10, {11, 12, 2}), (11, {10, 12, 2}), (12, {10, 11, 2})):
        reps.owner[v], reps.members[v], reps.label[v], reps.adj[v] = (
            f"n{v}",
            frozenset(),
            v,
            set(nbrs),
        )
    reps.adj[2] |= {10, 11, 12}
    result = propagate_labels(reps, [10, 11, 12, 2], None)
    # 2 follows the new triangle's label, so its neighbour 1 joins the active set; 1 keeps its label
    # (a tie, Prec-Max keeps its own), so 0 never becomes active; the other triangle is never touched
    assert reps.label == {0: 2, 1: 2, 2: 12, 6: 8, 7: 8, 8: 8, 10: 12, 11: 12, 12: 12}
    assert result.active == {1, 2, 10, 11, 12} and result.changed == {2, 10, 11}


def test_iteration_limit_stops_and_is_reported():
    graph = nx.gnp_random_graph(40, 0.08, seed=2)  # needs 6 rounds to settle
    result = propagate_labels(replicas_of(graph), list(graph.nodes), max_rounds=2)
    full = propagate_labels(replicas_of(graph), list(graph.nodes), max_rounds=None)
    assert (result.rounds, result.hit_limit) == (2, True) and (full.rounds, full.hit_limit) == (
        6,
        False,
    )


def test_oversized_communities_are_cut_into_consecutive_slices_and_mapped_to_nodes():
    reps = Replicas()
    for r in range(30):
        node = f"n{r // 2}"  # two replicas per node: a node can land in two slices
        reps.owner[r], reps.members[r], reps.label[r], reps.adj[r] = node, frozenset(), 7, set()
        reps.of_node.setdefault(node, []).append(r)
    reps.label[29] = 99
    order = {f"n{i}": i for i in range(15)}
    comms = communities(reps, 12, order)
    assert [key for key, _ in comms] == [(7, 0), (7, 1), (7, 2), (99, 0)]
    assert comms[0][1] == tuple(f"n{i}" for i in range(6))  # replicas 0..11
    assert comms[2][1] == ("n12", "n13", "n14") and comms[3][1] == ("n14",)
    assert len(communities(reps, None, order)) == 2


def test_super_edges_join_communities_sharing_a_member_or_an_edge():
    adj = {"a": {"b": 1}, "b": {"a": 1}, "c": {}, "d": {}}
    edges = super_edges({"P": ["a"], "Q": ["b"], "R": ["c", "d"], "S": ["d"]}, adj)
    assert edges == {"P": {"Q": 1.0}, "Q": {"P": 1.0}, "R": {"S": 1.0}, "S": {"R": 1.0}}


def test_plan_keeps_identical_communities_and_resummarises_changed_or_dirty_ones():
    old = {
        "s1": ((1, 0), ("a", "b")),
        "s2": ((2, 0), ("c", "d")),
        "s3": ((3, 0), ("e",)),
        "s4": ((4, 0), ("f",)),
    }
    new = [
        ((9, 0), ("a", "b")),  # same members under a new label: kept, not re-summarised
        ((2, 0), ("c", "d", "x")),  # same label, a member more: kept node, re-summarised
        ((3, 0), ("e",)),  # unchanged but its member's text changed: re-summarised
        ((8, 0), ("y",)),
    ]  # new
    plan = plan_clusters(old, new, dirty={"e"})
    assert [sid for sid, _, _ in plan.assignment] == ["s1", "s2", "s3", None]
    assert plan.resummarise == {"s2", "s3"} and plan.removed == ["s4"]


def test_without_ripple_the_active_set_stays_the_affected_replicas():
    graph = nx.Graph([(0, 1), (1, 2), (6, 7), (7, 8), (6, 8)])
    reps = replicas_of(graph)
    propagate_labels(reps, list(graph.nodes), None)
    for v, nbrs in ((10, {11, 12, 2}), (11, {10, 12, 2}), (12, {10, 11, 2})):
        reps.owner[v], reps.members[v], reps.label[v], reps.adj[v] = (
            f"n{v}",
            frozenset(),
            v,
            set(nbrs),
        )
    reps.adj[2] |= {10, 11, 12}
    result = propagate_labels(reps, [10, 11, 12, 2], None, ripple=False)
    assert result.active == {2, 10, 11, 12} and result.changed == {
        2,
        10,
        11,
    }  # 1 never joins (ripple: it does)
