"""CAM's foundational network (eq. 2, top-k edges) and ego-splitting, on hand-made inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cam_fakes import make_cam, units
from memharness.memsys.cam.network import (
    Replicas,
    composite_similarity,
    ego_components,
    expand_network,
)


def _unit(angle: float) -> np.ndarray:
    return np.array([math.cos(angle), math.sin(angle)], np.float32)


def test_eq2_mixes_cosine_and_gaussian_proximity_and_zeroes_proximity_across_documents():
    new = np.stack([_unit(0.0)])
    allv = np.stack(
        [_unit(0.0), _unit(math.acos(0.4)), _unit(math.acos(-0.5)), _unit(math.acos(0.4))]
    )
    s = composite_similarity(
        new, allv, [0], [0, 2, 1, 1], ["d"], ["d", "d", "d", "other"], alpha=0.7, sigma=1.5
    )
    prox = lambda d: math.exp(-d * d / (2 * 1.5**2))  # noqa: E731
    assert s[0, 0] == pytest.approx(0.7 * 1 + 0.3 * 1)
    assert s[0, 1] == pytest.approx(0.7 * 0.4 + 0.3 * prox(2), abs=1e-6)
    assert s[0, 2] == pytest.approx(
        0.7 * -0.5 + 0.3 * prox(1), abs=1e-6
    )  # the paper's plain cosine
    assert s[0, 3] == pytest.approx(0.7 * 0.4, abs=1e-6)  # another document: no proximity
    clipped = composite_similarity(
        new, allv, [0], [0, 2, 1, 1], ["d"], ["d"] * 4, 0.7, 1.5, clip_cosine=True
    )
    assert clipped[0, 2] == pytest.approx(0.3 * prox(1), abs=1e-6)  # the code's max(0, cos)


def test_top_k_edges_above_theta_ties_in_level_order_and_degree_may_exceed_k():
    ids = ["n0", "n1", "n2", "n3", "n4"]
    adj = {v: {} for v in ids}
    sims = np.array(
        [
            [9, 0.8, 0.5, 0.8, 0.79],  # n0: 0.8 tie between n1 and n3 -> level order; 0.5 < θ
            [0.8, 9, 0.1, 0.2, 0.95],
        ]
    )  # n1: n4 first, then n0 (already linked)
    added = expand_network(adj, ["n0", "n1"], ids, sims, theta=0.6, k=2)
    assert added == [("n0", "n1", 0.8), ("n0", "n3", 0.8), ("n1", "n4", 0.95)]
    assert adj["n1"] == {"n0": 0.8, "n4": 0.95} and adj["n4"] == {"n1": 0.95}
    assert "n4" not in adj["n0"]  # 0.79 was third for n0 (k = 2)
    more = expand_network(adj, ["n2"], ids, np.array([[0.9, 0.9, 9, 0.9, 0.1]]), theta=0.6, k=3)
    assert len(more) == 3 and len(adj["n0"]) == 3  # n0 now has 3 neighbours although k was 2 for it


EQ2 = {"alpha": 0.5, "sigma": 1.0, "theta": 0.5}


def test_memory_links_chunks_with_eq2_and_theta_within_a_document_only():
    # two texts at cosine 0.4: adjacent in one document s = 0.5*0.4 + 0.5*exp(-1/2) = 0.503 >= 0.5
    table = {"x": [1.0, 0.0], "y": [0.4, math.sqrt(1 - 0.16)]}
    cam = make_cam(table, network=EQ2, hierarchy=False)
    cam.insert(units(["x", "y"]))
    assert cam.store.edges[0] == {1: pytest.approx(0.2 + 0.5 * math.exp(-0.5), abs=1e-6)}
    other = make_cam(table, network=EQ2, hierarchy=False)
    other.insert(units(["x"], source="a") + units(["y"], source="b", start=1))
    assert other.store.edges[0] == {}
    wider = make_cam(table, network={**EQ2, "proximity_scope": "episode"}, hierarchy=False)
    wider.insert(units(["x"], source="a") + units(["y"], source="b", start=1))
    assert 1 in wider.store.edges[0]


GRAPH = {  # v's ego-network has two components: {x, y} (joined) and {z}
    "v": {"x": 1, "y": 1, "z": 1},
    "x": {"v": 1, "y": 1},
    "y": {"v": 1, "x": 1},
    "z": {"v": 1, "w": 1},
    "w": {"z": 1},
    "lone": {},
}
ORDER = {n: i for i, n in enumerate(["v", "x", "y", "z", "w", "lone"])}


def test_ego_network_components_and_the_no_splitting_variant():
    assert ego_components(GRAPH, "v", ORDER) == [("x", "y"), ("z",)]
    assert ego_components(GRAPH, "z", ORDER) == [("v",), ("w",)]
    assert ego_components(GRAPH, "v", ORDER, split=False) == [("x", "y", "z")]
    assert ego_components(GRAPH, "lone", ORDER) == []


def test_replicas_one_per_component_and_edges_mapped_as_the_paper_defines():
    reps = Replicas()
    fresh, active = reps.resplit(GRAPH, list(ORDER), ORDER)
    assert (
        len(reps.of_node["v"]) == 2
        and len(reps.of_node["z"]) == 2
        and len(reps.of_node["lone"]) == 1
    )
    assert fresh == active == set(reps.owner) and len(reps.owner) == 8
    vxy, vz = reps.of_node["v"]
    assert reps.members[vxy] == {"x", "y"} and reps.members[vz] == {"z"}
    # (u, v) in E, u in C_v^j, v in C_u^i  ->  edge (u_i, v_j)
    assert reps.adj[vz] == {reps.via["z"]["v"]}
    assert reps.adj[vxy] == {reps.via["x"]["v"], reps.via["y"]["v"]}
    assert reps.adj[reps.via["z"]["w"]] == {reps.via["w"]["z"]}
    assert all(reps.label[r] == r for r in reps.owner)  # fresh labels are the replica ids
    assert reps.adj[reps.of_node["lone"][0]] == set()


def test_resplit_keeps_old_replicas_and_labels_and_gives_new_ones_fresh_labels():
    graph = {k: dict(v) for k, v in GRAPH.items()}
    order = dict(ORDER)
    reps = Replicas()
    reps.resplit(graph, list(order), order)
    vxy, vz = reps.of_node["v"]
    reps.label[vxy] = reps.label[vz] = 42
    # a new node n joins v, x and z (the affected set A = {n, v, x, z}): v's two components merge
    # into one, kept by the replica that overlaps it most
    graph["n"] = {"v": 1, "x": 1, "z": 1}
    graph["v"]["n"] = graph["x"]["n"] = graph["z"]["n"] = 1
    order["n"] = len(order)
    fresh, active = reps.resplit(graph, ["n", "v", "x", "z"], order)
    assert reps.of_node["v"] == [vxy] and vz not in reps.owner and reps.label[vxy] == 42
    assert reps.members[vxy] == {"x", "y", "z", "n"} and vxy in active
    (n_rep,) = reps.of_node["n"]
    assert n_rep in fresh and reps.label[n_rep] == n_rep > max(r for r in reps.owner if r != n_rep)
    assert reps.via["x"]["n"] in active and n_rep in active


def test_removed_nodes_retire_their_replicas():
    reps = Replicas()
    reps.resplit(GRAPH, list(ORDER), ORDER)
    (w,) = reps.of_node["w"]
    neighbour = reps.via["z"]["w"]
    touched = reps.remove_nodes(["w"])
    assert w not in reps.owner and touched == {neighbour} and w not in reps.adj[neighbour]


def test_ego_changes_include_common_neighbours_of_an_edge_that_appears_or_disappears():
    from memharness.memsys.cam.network import ego_changes

    def graph(*edges):
        out = {v: {} for v in "abcde"}
        for u, v in edges:
            out[u][v] = out[v][u] = 1.0
        return out

    base = graph(("a", "c"), ("b", "c"), ("d", "e"))
    # a-b appears: c's own edges are unchanged but its ego-network gains the edge a-b
    assert ego_changes(base, graph(("a", "c"), ("b", "c"), ("d", "e"), ("a", "b"))) == {
        "a",
        "b",
        "c",
    }
    assert ego_changes(graph(("a", "c"), ("b", "c"), ("d", "e"), ("a", "b")), base) == {
        "a",
        "b",
        "c",
    }
    assert ego_changes(base, base) == set()
    # a node that appears with an edge to d: d and the new node; e is d's neighbour, not a common one
    grown = {**graph(("a", "c"), ("b", "c"), ("d", "e")), "f": {"d": 1.0}}
    grown["d"]["f"] = 1.0
    assert ego_changes(base, grown) == {"d", "f"}
