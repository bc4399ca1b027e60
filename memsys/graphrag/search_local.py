"""Local search τ_local: from the entities nearest the question to reports, relationships and text units.

The context is returned as retrieved items (the harness's shared answer prompt numbers them),
in GraphRAG's section order: community reports, entities, relationships, text units. Every item
carries the dataset units it stands on. Two styles (``local_search.style``):

``graphrag`` (``query/structured_search/local_search/mixed_context.py``):
  1. entities: vector search over the entity embeddings (``NAME: description``) for
     ``top_k_entities × oversample`` entities (GraphRAG keeps all oversampled matches);
  2. reports, ``community_prop`` of the budget: the communities of the selected entities among
     the reports chosen at ``community_level`` (see ``GraphIndex.rollup_reports``), ranked by
     (selected entities inside, rating);
  3. entities, then relationships, share ``1 - community_prop - text_unit_prop``: entity rows until
     that budget is full; then relationships grown entity by entity (in-network first by rank, then
     out-of-network by (links to selected entities, rank), at most ``top_k_relationships`` per
     entity) while entities + relationships fit;
  4. text units, ``text_unit_prop``: the selected entities' text units in entity order, then by how
     many of the entity's relationships come from the same unit.

``nano`` (nano-graphrag ``_build_local_query_context``): entities first (nano never cuts them; here
they stop at the budget), then the rest split by ``nano_split`` (reports : relationships : text
units = 3,200 : 4,800 : 4,000 tokens in nano): every community at or above ``community_level`` of
the selected entities by (count, rating); all their relationships by (rank, weight); text units
as above.

Each list stops at its first item that does not fit its budget (both implementations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

import numpy as np
from memharness.memsys.graphrag.index import GraphIndex, Rel
from memharness.memsys.hierarchy.traverse import top_k_positions
from memharness.memsys.settings import Range
from memharness.memsys.types import RetrievedItem

LOCAL_DEFAULTS = {
    "style": "graphrag",
    "top_k_entities": 10,
    "oversample": 2,
    "entity_threshold": -1.0,
    "top_k_relationships": 10,
    "community_prop": 0.15,
    "text_unit_prop": 0.5,
    "community_level": 2,
    "rollup": "entity",
    "nano_split": [3200, 4800, 4000],
}


@dataclass
class LocalResult:
    items: list[RetrievedItem]
    entities: list[tuple[int, float]]  # selected (node, cosine)
    budgets: dict[str, int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    communities: list[int] = field(default_factory=list)  # store nodes of the reports used


class LocalSearchSettings(TypedDict, total=False):
    """``memory.local_search`` (documented in conf/memory/graphrag.yaml)."""

    style: Literal["graphrag", "nano"]
    top_k_entities: Annotated[int, Range(1)]
    oversample: Annotated[int, Range(1)]
    entity_threshold: Annotated[float, Range(-1, 1)]
    top_k_relationships: Annotated[int, Range(0)]
    community_prop: Annotated[float, Range(0, 1)]
    text_unit_prop: Annotated[float, Range(0, 1)]
    community_level: Annotated[int, Range(0)]
    rollup: Literal["entity", "all_levels"]
    nano_split: list[Annotated[int, Range(0)]]


def local_settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    """The defaults with ``settings`` over them (the settings checker has validated the values)."""
    return {**LOCAL_DEFAULTS, **(settings or {})}


def local_settings_problems(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """Rules between local-search settings, as (key under memory.local_search, message)."""
    s, out = local_settings(settings), []
    if s["community_prop"] + s["text_unit_prop"] > 1:
        out.append(("text_unit_prop", "community_prop + text_unit_prop must not exceed 1"))
    if len(s["nano_split"]) != 3 or sum(s["nano_split"]) <= 0:
        out.append(
            (
                "nano_split",
                "must be three token budgets (reports, relationships, text units) with a "
                "positive sum",
            )
        )
    return out


def _fill(
    candidates: Sequence[tuple[RetrievedItem, Any]], budget: int
) -> tuple[list[tuple[RetrievedItem, Any]], int]:
    """Keep candidates in order until the first one that does not fit."""
    kept, used = [], 0
    for item, key in candidates:
        if used + item.tokens > budget:
            break
        kept.append((item, key))
        used += item.tokens
    return kept, used


class LocalSearch:
    """Builds the local context for one question over a ``GraphIndex``."""

    def __init__(self, index: GraphIndex, settings: dict[str, Any], tokenizer: Any) -> None:
        self.index, self.s, self.tokenizer = index, local_settings(settings), tokenizer

    # ------------------------------------------------------------------ candidates
    def select_entities(self, vector: np.ndarray) -> list[tuple[int, float]]:
        nodes = self.index.entities
        k = int(self.s["top_k_entities"]) * (
            int(self.s["oversample"]) if self.s["style"] == "graphrag" else 1
        )
        if not nodes or k <= 0:
            return []
        sims = self.index.entity_similarities(vector)
        order = top_k_positions(sims, k)  # by cosine, ties by entity order
        return [(nodes[i], float(sims[i])) for i in order if sims[i] >= self.s["entity_threshold"]]

    def _entity_item(self, v: int, score: float) -> RetrievedItem:
        return self.index.store.item(v, score, self.tokenizer)

    def _relation_item(self, r: int) -> RetrievedItem:
        rel = self.index.relations[r]
        text = self.index.relation_text(rel)
        return RetrievedItem(
            text=text,
            score=rel.weight,
            node_id=rel.id,
            level=0,
            source_unit_ids=rel.units,
            tokens=self.tokenizer.count(text),
        )

    def community_candidates(self, entities: list[int]) -> list[tuple[RetrievedItem, int]]:
        """Reports of the selected entities' communities by (matches, rating), highest first."""
        level = int(self.s["community_level"])
        allowed = (
            set(self.index.rollup_reports(level, self.s["rollup"]))
            if self.s["style"] == "graphrag"
            else {
                i for i, c in enumerate(self.index.communities) if c.level <= level and c.has_report
            }
        )
        matches: dict[int, int] = {}
        for e in entities:
            for c in self.index.entity_communities.get(e, []):
                if c in allowed:
                    matches[c] = matches.get(c, 0) + 1
        views = self.index.communities
        ranked = sorted(matches, key=lambda c: (-matches[c], -views[c].rating, views[c].key))
        return [
            (self.index.store.item(views[c].node, matches[c], self.tokenizer), views[c].node)
            for c in ranked
        ]

    def relationships_for(self, entities: list[int]) -> list[int]:
        """GraphRAG's relationship order: in-network by rank, then out-of-network by (links, rank), capped."""
        chosen = set(entities)
        touching = sorted({r for e in entities for r in self.index.incident.get(e, [])})
        rels = self.index.relations
        inside = sorted(
            (r for r in touching if rels[r].source in chosen and rels[r].target in chosen),
            key=lambda r: (-rels[r].rank, r),
        )
        outside = [r for r in touching if (rels[r].source in chosen) != (rels[r].target in chosen)]
        links: dict[int, set[int]] = {}
        for r in outside:
            inner, outer = (
                (rels[r].source, rels[r].target)
                if rels[r].source in chosen
                else (rels[r].target, rels[r].source)
            )
            links.setdefault(outer, set()).add(inner)

        def outer_links(r: int) -> int:
            return len(links[rels[r].target if rels[r].source in chosen else rels[r].source])

        outside.sort(key=lambda r: (-outer_links(r), -rels[r].rank, r))
        return inside + outside[: int(self.s["top_k_relationships"]) * len(entities)]

    def text_unit_candidates(self, entities: list[int]) -> list[tuple[RetrievedItem, str]]:
        """Text units in selected-entity order, then by the entity's relationships from the same unit."""
        seen: set[str] = set()
        ranked: list[tuple[int, int, str]] = []
        for order, e in enumerate(entities):
            rels: list[Rel] = [self.index.relations[r] for r in self.index.incident.get(e, [])]
            for tu in self.index.entity_text_units(e):
                if tu in seen or tu not in self.index.text_units:
                    continue
                seen.add(tu)
                ranked.append((order, -sum(tu in rel.text_units for rel in rels), tu))
        ranked.sort(key=lambda x: (x[0], x[1]))
        out = []
        for _, negcount, tu_id in ranked:
            tu = self.index.text_units[tu_id]
            out.append(
                (
                    RetrievedItem(
                        text=tu.text,
                        score=float(-negcount),
                        node_id=tu.id,
                        level=0,
                        source_unit_ids=tu.units,
                        tokens=self.tokenizer.count(tu.text),
                    ),
                    tu_id,
                )
            )
        return out

    # ------------------------------------------------------------------ context
    def search(self, vector: np.ndarray, budget: int) -> LocalResult:
        selected = self.select_entities(vector)
        result = LocalResult(items=[], entities=selected)
        if not selected:
            return result
        if self.s["style"] == "graphrag":
            self._graphrag_context(result, budget)
        else:
            self._nano_context(result, budget)
        return result

    def _graphrag_context(self, result: LocalResult, budget: int) -> None:
        entities = [v for v, _ in result.entities]
        b = {
            "reports": max(int(budget * self.s["community_prop"]), 0),
            "text_units": max(int(budget * self.s["text_unit_prop"]), 0),
        }
        b["entities_and_relationships"] = max(
            int(budget * (1 - self.s["community_prop"] - self.s["text_unit_prop"])), 0
        )
        reports, used_reports = _fill(self.community_candidates(entities), b["reports"])
        entity_items, used_entities = _fill(
            [(self._entity_item(v, s), v) for v, s in result.entities],
            b["entities_and_relationships"],
        )
        relation_items: list[tuple[RetrievedItem, int]] = []
        used_relations = 0
        cache: dict[int, RetrievedItem] = {}
        for n in range(
            1, len(entities) + 1
        ):  # grow entity by entity while entities + relationships fit
            order = self.relationships_for(entities[:n])
            for r in order:
                if r not in cache:
                    cache[r] = self._relation_item(r)
            candidate, used = _fill([(cache[r], r) for r in order], b["entities_and_relationships"])
            if used_entities + used > b["entities_and_relationships"]:
                break
            relation_items, used_relations = candidate, used
        units, used_units = _fill(self.text_unit_candidates(entities), b["text_units"])
        _record(
            result,
            b,
            reports,
            entity_items,
            relation_items,
            units,
            {
                "reports": used_reports,
                "entities": used_entities,
                "relationships": used_relations,
                "text_units": used_units,
            },
        )

    def _nano_context(self, result: LocalResult, budget: int) -> None:
        entities = [v for v, _ in result.entities]
        entity_items, used_entities = _fill(
            [(self._entity_item(v, s), v) for v, s in result.entities], budget
        )
        rest = budget - used_entities
        split = [float(x) for x in self.s["nano_split"]]
        b = {
            "entities": budget,
            "reports": int(rest * split[0] / sum(split)),
            "relationships": int(rest * split[1] / sum(split)),
            "text_units": int(rest * split[2] / sum(split)),
        }
        reports, used_reports = _fill(self.community_candidates(entities), b["reports"])
        rels = self.index.relations
        touching = sorted(
            {r for e in entities for r in self.index.incident.get(e, [])},
            key=lambda r: (-rels[r].rank, -rels[r].weight, r),
        )
        relation_items, used_relations = _fill(
            [(self._relation_item(r), r) for r in touching], b["relationships"]
        )
        units, used_units = _fill(self.text_unit_candidates(entities), b["text_units"])
        _record(
            result,
            b,
            reports,
            entity_items,
            relation_items,
            units,
            {
                "reports": used_reports,
                "entities": used_entities,
                "relationships": used_relations,
                "text_units": used_units,
            },
        )


def _record(
    result: LocalResult,
    budgets: dict[str, int],
    reports: list,
    entities: list,
    relations: list,
    units: list,
    used: dict[str, int],
) -> None:
    """Write one built context onto ``result``: items in report, entity, relation, text-unit order."""
    result.items = [i for i, _ in [*reports, *entities, *relations, *units]]
    result.budgets = budgets
    result.used = used
    result.communities = [node for _, node in reports]
