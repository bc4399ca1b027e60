"""Grouping π: hierarchical Leiden communities of the entity graph (python-igraph + leidenalg).

GraphRAG calls graspologic's ``hierarchical_leiden`` (modularity, resolution 1.0, one iteration,
``max_cluster_size`` 10, seed 0xDEADBEEF) on the deduplicated undirected edge list of the largest
connected component. That algorithm, rebuilt on python-igraph (or leidenalg):

- the graph holds the entities that have at least one relationship (an edge list has no isolated
  nodes); with ``use_lcc`` only its largest connected component (ties: the one holding the
  lowest entity position);
- level 0 = one Leiden partition of that graph, maximising modularity at ``resolution`` with
  ``iterations`` Leiden iterations. ``backend: igraph`` (default) is
  igraph's C-core Leiden (``Graph.community_leiden``, by the algorithm's author), whose ``beta`` is
  graspologic's ``randomness`` (GraphRAG 0.001); ``backend: leidenalg`` is
  ``leidenalg.find_partition`` with ``RBConfigurationVertexPartition`` (no randomness parameter;
  10-30x slower here, see eval/bench/graphrag.py);
- every community with ``max_cluster_size`` members or more is re-partitioned on its induced
  subgraph as level + 1, until none is that big; a community whose partition does not split
  stays as it is (recorded in ``unsplittable``). A community under the cap has no deeper
  entries. The cap is reached at *greater or equal*, as graspologic (which GraphRAG and
  nano-graphrag both call) compares: a community of exactly the cap is split too.

GraphRAG's level 0 is the coarsest. Every partition is seeded with ``seed``; the same graph and
seed give the same hierarchy. Communities are numbered level by level (their human ids).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Community:
    key: int  # human id, level by level
    level: int  # GraphRAG's level: 0 = coarsest
    members: list[int]  # entity positions (every entity beneath), ascending
    parent: int = -1
    children: list[int] = field(
        default_factory=list
    )  # sub-community keys (empty: a final community)


def hierarchical_leiden(
    n_entities: int,
    edges: Sequence[tuple[int, int, float]],
    max_cluster_size: int = 10,
    seed: int = 0,
    use_lcc: bool = True,
    resolution: float = 1.0,
    iterations: int = 1,
    backend: str = "igraph",
    randomness: float = 0.001,
) -> tuple[list[Community], dict[str, Any]]:
    """Communities (level 0 first) and a record of the run (sizes, seed, unsplittable ones, time)."""
    import igraph as ig

    if max_cluster_size < 1:
        raise ValueError(
            f"memory.communities.max_cluster_size must be >= 1, got {max_cluster_size}"
        )
    if backend not in ("igraph", "leidenalg"):
        raise ValueError(
            f"memory.communities.backend must be 'igraph' or 'leidenalg', got {backend!r}"
        )
    start = time.perf_counter()
    nodes = sorted({u for u, v, _ in edges} | {v for u, v, _ in edges})
    info: dict[str, Any] = {
        "seed": seed,
        "max_cluster_size": max_cluster_size,
        "use_lcc": use_lcc,
        "resolution": resolution,
        "iterations": iterations,
        "backend": backend,
        "randomness": randomness if backend == "igraph" else None,
        "entities": n_entities,
        "graph_nodes": len(nodes),
        "graph_edges": len(edges),
    }
    if not nodes:
        return [], {
            **info,
            "clustered_nodes": 0,
            "levels": 0,
            "communities": 0,
            "unsplittable": [],
            "seconds": time.perf_counter() - start,
        }
    index = {v: i for i, v in enumerate(nodes)}
    graph = ig.Graph(n=len(nodes), edges=[(index[u], index[v]) for u, v, _ in edges])
    graph.es["weight"] = [float(w) for _, _, w in edges]
    graph.vs["entity"] = nodes
    if use_lcc:
        graph = _largest_component(graph)
    communities: list[Community] = []
    frontier = [
        (None, graph)
    ]  # (parent key, subgraph to split); each subgraph carries its entity ids
    level, unsplittable = 0, []
    while frontier:
        next_frontier = []
        for parent, sub in frontier:
            parts = _partition(sub, seed, resolution, iterations, backend, randomness)
            if parent is not None and len(parts) <= 1:
                unsplittable.append(parent)
                continue
            entity_of = sub.vs["entity"]
            for part in parts:
                c = Community(
                    key=len(communities),
                    level=level,
                    members=sorted(entity_of[v] for v in part),
                    parent=-1 if parent is None else parent,
                )
                communities.append(c)
                if parent is not None:
                    communities[parent].children.append(c.key)
                if len(part) >= max_cluster_size:  # graspologic splits at the cap itself
                    next_frontier.append((c.key, sub.induced_subgraph(part)))
        frontier, level = next_frontier, level + 1
    levels = max(c.level for c in communities) + 1
    info.update(
        clustered_nodes=graph.vcount(),
        levels=levels,
        communities=len(communities),
        per_level={str(lv): sum(1 for c in communities if c.level == lv) for lv in range(levels)},
        max_final_size=max((len(c.members) for c in communities if not c.children), default=0),
        unsplittable=unsplittable,
        seconds=time.perf_counter() - start,
    )
    return communities, info


def _largest_component(graph: Any) -> Any:
    """The largest connected component; ties go to the component with the lowest entity position."""
    components = graph.connected_components()
    entity_of = graph.vs["entity"]
    best = max(components, key=lambda comp: (len(comp), -min(entity_of[v] for v in comp)))
    return graph.induced_subgraph(sorted(best))


def _partition(
    sub: Any, seed: int, resolution: float, iterations: int, backend: str, randomness: float
) -> list[list[int]]:
    """One seeded Leiden partition of ``sub``; parts as its vertex ids, ordered by their lowest entity."""
    if sub.ecount() == 0:
        parts = [[v] for v in range(sub.vcount())]
    else:
        groups: dict[int, list[int]] = {}
        for v, community in enumerate(
            _membership(sub, seed, resolution, iterations, backend, randomness)
        ):
            groups.setdefault(community, []).append(v)
        parts = list(groups.values())
    entity_of = sub.vs["entity"]
    return sorted(parts, key=lambda part: min(entity_of[v] for v in part))


def _membership(
    sub: Any, seed: int, resolution: float, iterations: int, backend: str, randomness: float
) -> list[int]:
    if backend == "leidenalg":
        import leidenalg

        return leidenalg.find_partition(
            sub,
            leidenalg.RBConfigurationVertexPartition,
            weights="weight",
            resolution_parameter=resolution,
            n_iterations=iterations,
            seed=seed,
        ).membership
    import igraph as ig

    ig.set_random_number_generator(
        random.Random(seed)
    )  # igraph's RNG is global: seed it, then restore
    try:
        return sub.community_leiden(
            objective_function="modularity",
            weights="weight",
            resolution=resolution,
            beta=randomness,
            n_iterations=iterations,
        ).membership
    finally:
        ig.set_random_number_generator(random)
