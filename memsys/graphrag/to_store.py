"""The built graph written into the hierarchy store: entities as level-0 atoms (relationships as
their edges, with meta), community reports as the nodes above, deepest level first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from memharness.memsys.graphrag.communities import Community
from memharness.memsys.graphrag.merge import Graph
from memharness.memsys.graphrag.reports import Report
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.types import content_id


def add_entities(store: HierarchyStore, embedder: Any, graph: Graph) -> None:
    """Entities become level-0 atoms (node index = entity position); relationships, edges with meta."""
    texts = [f"{e.name}: {e.description}" for e in graph.entities]
    vectors = embedder.embed(texts) if texts else np.zeros((0, 0), np.float32)
    for e, text, vector in zip(graph.entities, texts, vectors, strict=False):
        store.add_node(
            content_id("graphrag-entity", e.name, prefix="e-"),
            text,
            vector,
            level=0,
            units=e.units,
            meta={
                "name": e.name,
                "type": e.type,
                "description": e.description,
                "text_units": e.chunks,
                "frequency": e.frequency,
                "degree": e.degree,
            },
        )
    for r in graph.relations:
        a, b = graph.entities[r.source].name, graph.entities[r.target].name
        r.id = content_id("graphrag-relation", a, b, prefix="r-")
        store.add_edge(r.source, r.target, r.weight)
        store.meta[r.source].setdefault("relations", []).append(
            {
                "id": r.id,
                "target": store.ids[r.target],
                "description": r.description,
                "weight": r.weight,
                "rank": r.rank,
                "text_units": r.chunks,
                "units": list(r.units),
            }
        )


def add_communities(
    store: HierarchyStore,
    embedder: Any,
    graph: Graph,
    communities: Sequence[Community],
    reports: dict[int, Report],
) -> None:
    """Community nodes, deepest level first, above their sub-communities or entities."""
    if not communities:
        return
    levels = max(c.level for c in communities) + 1
    ordered = sorted(communities, key=lambda c: (-c.level, c.key))
    texts = [
        reports[c.key].text
        if reports[c.key].ok
        else f"Community {c.key} (no report): "
        + ", ".join(graph.entities[m].name for m in c.members)
        for c in ordered
    ]
    vectors = embedder.embed(texts)
    node_of: dict[int, int] = {}
    for c, text, vector in zip(ordered, texts, vectors, strict=False):
        r = reports[c.key]
        children = [node_of[k] for k in c.children] if c.children else list(c.members)
        names = sorted(graph.entities[m].name for m in c.members)
        node_of[c.key] = store.add_node(
            content_id("graphrag-community", c.level, names, prefix="c-"),
            text,
            vector,
            level=levels - c.level,
            children=children,
            meta={
                "community": c.key,
                "community_level": c.level,
                "parent": c.parent,
                "size": len(c.members),
                "report_status": r.status,
                "title": r.title,
                "summary": r.summary,
                "rating": r.rating,
                "rating_explanation": r.rating_explanation,
                "findings": r.findings,
                "context_tokens": r.context_tokens,
            },
        )
