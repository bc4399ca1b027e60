"""Read-side view of a GraphRAG store: entities, relationships, communities and text units by id.

The store holds everything (``memsys.hierarchy.HierarchyStore``):

- level 0: one node per entity, text ``NAME: description`` (what GraphRAG embeds), ``units`` = the
  dataset units beneath its text units; meta ``name, type, description, text_units, frequency,
  degree`` and, on the endpoint with the lower index, ``relations``: one record per relationship
  (``id, target`` (node id), ``description, weight, rank, text_units, units``). Each relationship
  is also a weighted same-level edge of the store;
- levels ≥ 1: one node per community, text = its report (``full_content``), children = its
  sub-communities or, for a final community, its entities. Store level = ``levels - L`` for
  GraphRAG level ``L`` (GraphRAG's level 0, the coarsest, is the top of the store; its deepest
  level sits at store level 1; a final community's entities may sit several store levels below
  it). Meta ``community, community_level, parent, title, summary, rating, rating_explanation,
  findings, report_status, size, context_tokens``.

Text units (the chunks) are not nodes: they live in the memory's state and are returned by local
search with their dataset units as provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memharness.memsys.extraction.chunks import TextUnit
from memharness.memsys.hierarchy.store import HierarchyStore


@dataclass
class Rel:
    """A relationship as search sees it (endpoints are store node indices)."""

    id: str
    source: int
    target: int
    description: str
    weight: float
    rank: int
    units: tuple[str, ...]
    text_units: tuple[str, ...]


@dataclass
class CommunityView:
    node: int
    key: int
    level: int  # GraphRAG level (0 = coarsest)
    members: list[int]  # entity nodes beneath
    rating: float
    has_report: bool


ROLLUPS = ("entity", "all_levels")


class GraphIndex:
    """Lookups built once per build or load; search reads only this and the store."""

    def __init__(self, store: HierarchyStore, text_units: dict[str, TextUnit]) -> None:
        self.store, self.text_units = store, text_units
        self.entities = [v for v in store.content_nodes() if store.levels[v] == 0]
        by_id = {store.ids[v]: v for v in self.entities}
        self.relations: list[Rel] = []
        self.incident: dict[int, list[int]] = {v: [] for v in self.entities}
        for v in self.entities:
            for r in store.meta[v].get("relations", []):
                rel = Rel(
                    id=r["id"],
                    source=v,
                    target=by_id[r["target"]],
                    description=r["description"],
                    weight=float(r["weight"]),
                    rank=int(r["rank"]),
                    units=tuple(r["units"]),
                    text_units=tuple(r["text_units"]),
                )
                self.incident[rel.source].append(len(self.relations))
                self.incident[rel.target].append(len(self.relations))
                self.relations.append(rel)
        self.communities: list[CommunityView] = []
        self.entity_communities: dict[int, list[int]] = {
            v: [] for v in self.entities
        }  # community views, coarse first
        for v in store.content_nodes():
            m = store.meta[v]
            if store.levels[v] == 0 or "community" not in m:
                continue
            view = CommunityView(
                node=v,
                key=int(m["community"]),
                level=int(m["community_level"]),
                members=store.atoms_under(v),
                rating=float(m.get("rating", 0.0)),
                has_report=m.get("report_status") == "parsed",
            )
            for e in view.members:
                self.entity_communities.setdefault(e, []).append(len(self.communities))
            self.communities.append(view)
        for views in self.entity_communities.values():
            views.sort(key=lambda i: self.communities[i].level)
        self._rollup: dict[tuple[int, str], list[int]] = {}
        self._contiguous = self.entities == list(range(len(self.entities)))

    def entity_similarities(self, vector: Any) -> Any:
        """Cosine of ``vector`` with every entity (a slice when entities are the first nodes, as built)."""
        if self._contiguous:
            return self.store.embeddings[: len(self.entities)] @ vector
        return self.store.similarities(vector, self.entities)

    def name(self, entity: int) -> str:
        return self.store.meta[entity].get("name", self.store.texts[entity])

    def relation_text(self, rel: Rel) -> str:
        return f"{self.name(rel.source)} -> {self.name(rel.target)}: {rel.description}"

    def rollup_reports(self, community_level: int, rollup: str = "entity") -> list[int]:
        """The reports search reads at ``community_level``. ``entity`` (default; GraphRAG's code up to
        v1 and the roll-up its code comments describe): every entity rolls up to its deepest community
        at or above that level, and those communities' reports are used (a community split below the
        level is replaced by its sub-communities). ``all_levels`` (GraphRAG v2-v3.1.2 as released: its
        roll-up groups by the community's title, so no community is rolled up): every report at or
        above the level, parents and children together. Communities without a report are left out.
        Community view indices in key order (computed once per level and mode)."""
        if rollup not in ROLLUPS:
            raise ValueError(f"rollup must be one of {' | '.join(ROLLUPS)}, got {rollup!r}")
        if (community_level, rollup) in self._rollup:
            return self._rollup[(community_level, rollup)]
        chosen: set[int] = set()
        for views in self.entity_communities.values():
            eligible = [i for i in views if self.communities[i].level <= community_level]
            if rollup == "all_levels":
                chosen.update(eligible)
            elif eligible:
                chosen.add(eligible[-1])
        self._rollup[(community_level, rollup)] = sorted(
            (i for i in chosen if self.communities[i].has_report),
            key=lambda i: self.communities[i].key,
        )
        return self._rollup[(community_level, rollup)]

    def entity_text_units(self, entity: int) -> list[str]:
        return list(self.store.meta[entity].get("text_units", []))

    def describe(self) -> dict[str, Any]:
        return {
            "entities": len(self.entities),
            "relationships": len(self.relations),
            "communities": len(self.communities),
            "text_units": len(self.text_units),
            "reports": sum(c.has_report for c in self.communities),
        }
