"""CAM's memory development (Sec. 4.1): one incremental update, level by level, for a batch of chunks.

For a batch: the chunks join the foundational network (eq. 2, top-k edges with s >= θ); the
affected set A is the new chunks and their new neighbours; replicas are rebuilt for A only; labels
propagate from the affected replicas outward (``clustering.propagate_labels``); the communities
are recomputed and matched to the existing supernodes, so only new or changed communities are
summarised (one concurrent LLM batch per level); the supernodes that appeared, vanished, changed
text or whose ego-network changed (their own edges, or an edge between two of their neighbours,
``network.ego_changes``) are the next level's affected set, and the same update runs there.

Stop rules (released code): after the communities of level l are known, no level above l is built
when l >= ``max_level`` or the level has at least as many communities as nodes. Online, a rule
that starts to hold removes the levels above; one that stops holding builds the next level afresh.

Which replicas label propagation re-labels (``Settings.label_scope``, config ``clustering.online_label_scope``)
is a choice the paper leaves vague (Sec. 4.1.3 names the affected set Ã and the ripple to the
neighbours of "an existing node" whose label changes, but not whether a new replica's change
ripples, nor whether replicas left unsettled by an earlier batch's iteration limit are revisited):
``ripple`` (default): Ã, and the neighbours of every replica whose label changes join it;
``affected``: Ã only, never grown; ``level``: every replica of the level (the kept labels are the
starting point, so a settled level stays as it is and only unsettled replicas move).

Offline CAM is this same update fed every chunk as one batch: every replica is then new and the
propagation runs over all of them, which is the released code's one-shot build.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from memharness.memsys.cam.clustering import (
    Propagation,
    communities,
    plan_clusters,
    propagate_labels,
    super_edges,
)
from memharness.memsys.cam.network import (
    Adjacency,
    Replicas,
    composite_similarity,
    ego_changes,
    expand_network,
    link_shared_entities,
)
from memharness.memsys.types import content_id

Summariser = Callable[
    [list[list[str]]], list[tuple[str, bool]]
]  # member texts -> (summary, failed)
Embed = Callable[[list[str]], np.ndarray]


@dataclass
class Node:
    id: str
    level: int
    text: str
    vector: np.ndarray | None
    children: tuple[str, ...] = ()
    units: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Level:
    """One level's graph (nodes in level order, same-level edges), replicas and communities."""

    order: list[str] = field(default_factory=list)
    adj: Adjacency = field(default_factory=dict)
    replicas: Replicas = field(default_factory=Replicas)
    clusters: dict[str, tuple[tuple[int, int], tuple[str, ...]]] = field(
        default_factory=dict
    )  # supernode -> (key, members)
    _pos: dict[str, int] | None = None

    def position(self) -> dict[str, int]:
        if self._pos is None:
            self._pos = {v: i for i, v in enumerate(self.order)}
        return self._pos

    def append(self, node: str) -> None:
        self.order.append(node)
        self._pos = None

    def remove(self, ids: Sequence[str]) -> None:
        gone = set(ids)
        self.order = [v for v in self.order if v not in gone]
        self._pos = None


@dataclass
class Delta:
    """What changed in one level: nodes removed, nodes whose ego-network changed (new ones included),
    nodes whose text changed (their communities must be re-summarised)."""

    removed: list[str] = field(default_factory=list)
    affected: set[str] = field(default_factory=set)
    dirty: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.removed or self.affected or self.dirty)


@dataclass
class Settings:
    alpha: float = 0.6
    sigma: float = 1.0
    theta: float = 0.6
    k: int = 10
    clip_cosine: bool = False
    max_cluster_size: int | None = 12
    max_level: int = 10
    hierarchy: bool = True
    ego_splitting: bool = True
    lp_max_rounds: int | None = 100
    label_scope: str = "ripple"  # ripple | affected | level (see the module doc)
    entity_k: int = 0  # CAM w/ FM: links per new chunk to chunks sharing an entity (0 = off)


class Development:
    """The levels of one CAM memory and the update that brings a batch of chunks in."""

    def __init__(self, settings: Settings, summarise: Summariser, embed: Embed) -> None:
        self.settings, self.summarise, self.embed = settings, summarise, embed
        self.nodes: dict[str, Node] = {}
        self.levels: list[Level] = [Level()]
        self.serial = 0  # supernodes created so far (part of their content-addressed id)

    # ------------------------------------------------------------------ level 0
    def insert(self, chunks: Sequence[Node]) -> dict[str, Any]:
        """Add chunks (level-0 nodes with ``meta`` position / document) and update every level."""
        base, s = self.levels[0], self.settings
        for c in chunks:
            self.nodes[c.id] = c
            base.append(c.id)
            base.adj[c.id] = {}
        ids = base.order
        vectors = np.stack([self.nodes[v].vector for v in ids])
        positions = [self.nodes[v].meta["position"] for v in ids]
        documents = [self.nodes[v].meta["document"] for v in ids]
        new = slice(len(ids) - len(chunks), len(ids))
        sims = composite_similarity(
            vectors[new],
            vectors,
            positions[new],
            positions,
            documents[new],
            documents,
            s.alpha,
            s.sigma,
            s.clip_cosine,
        )
        added = expand_network(base.adj, [c.id for c in chunks], ids, sims, s.theta, s.k)
        linked = []
        if s.entity_k:
            entities = {v: self.nodes[v].meta.get("entities", ()) for v in ids}
            linked = link_shared_entities(
                base.adj, [c.id for c in chunks], ids, sims, entities, s.theta, s.entity_k
            )
        affected = {c.id for c in chunks} | {u for _, u, _ in added + linked}
        record: dict[str, Any] = {
            "chunks": len(chunks),
            "edges_added": len(added) + len(linked),
            "entity_edges_added": len(linked),
            "affected_chunks": len(affected),
            "levels": [],
        }
        self.update_levels(Delta(affected=affected), record)
        return record

    def remove(self, chunk_ids: Sequence[str]) -> dict[str, Any]:
        """Forget level-0 chunks: drop them and their edges. Their former neighbours are exactly the
        chunks whose ego-networks changed (every dropped edge touches a dropped chunk), so they are
        the affected set and the update runs as for an insert: communities that lost a member are
        matched by label and re-summarised, emptied ones removed, level by level. Kept chunks do
        not re-rank their top-k (as when chunks arrive, eq. 2 links each chunk once)."""
        base, gone = self.levels[0], set(chunk_ids)
        removed = [v for v in base.order if v in gone]
        neighbours: set[str] = set()
        for v in removed:
            for u in base.adj.pop(v):
                if u not in gone:
                    base.adj[u].pop(v, None)
                    neighbours.add(u)
            del self.nodes[v]
        base.remove(removed)
        record: dict[str, Any] = {
            "chunks_removed": len(removed),
            "affected_chunks": len(neighbours),
            "levels": [],
        }
        self.update_levels(Delta(removed=removed, affected=neighbours), record)
        return record

    def update_levels(self, delta: Delta | None, record: dict[str, Any]) -> None:
        """Run ``update_level`` from level 0 up while something changes; records each level."""
        level = 0
        while self.settings.hierarchy and delta:
            level_record, delta = self.update_level(level, delta)
            record["levels"].append(level_record)
            level += 1

    # ------------------------------------------------------------------ one level
    def update_level(self, level: int, delta: Delta) -> tuple[dict[str, Any], Delta | None]:
        """Ego-splitting, propagation and community update at ``level``; summaries one level up."""
        s, here = self.settings, self.levels[level]
        order = here.position()
        touched = here.replicas.remove_nodes(delta.removed)
        fresh, active = here.replicas.resplit(
            here.adj, [v for v in delta.affected if v in order], order, s.ego_splitting
        )
        active |= touched
        if active and s.label_scope == "level":
            active = set(here.replicas.owner)
        prop = (
            propagate_labels(
                here.replicas, active, s.lp_max_rounds, ripple=s.label_scope != "affected"
            )
            if active
            else Propagation(0, False, set(), set())
        )
        comms = communities(here.replicas, s.max_cluster_size, order)
        record = {
            "level": level,
            "nodes": len(here.order),
            "affected_nodes": len(delta.affected),
            "new_replicas": len(fresh),
            "active_replicas": len(prop.active),
            "lp_rounds": prop.rounds,
            "lp_hit_limit": prop.hit_limit,
            "labels_changed": len(prop.changed),
            "communities": len(comms),
        }
        if level >= s.max_level or len(comms) >= len(here.order):
            record["stopped"] = True
            self.drop_above(level)
            return record, None
        if level + 1 == len(self.levels):
            self.levels.append(Level())
        plan = plan_clusters(here.clusters, comms, delta.dirty)
        up = self.levels[level + 1]
        for sid in plan.removed:
            del self.nodes[sid]
        up.remove(plan.removed)
        clusters, new_ids, summarise = {}, [], []
        for sid, key, members in plan.assignment:
            if sid is None:
                self.serial += 1
                sid = content_id(
                    "cam-node", level + 1, members, self.serial, prefix=f"s{level + 1}-"
                )
                self.nodes[sid] = Node(sid, level + 1, "", None, children=members)
                up.append(sid)
                new_ids.append(sid)
                summarise.append(sid)
            elif sid in plan.resummarise:
                self.nodes[sid].children = members
                summarise.append(sid)
            clusters[sid] = (key, members)
        here.clusters = clusters
        record.update(
            summarised=len(summarise),
            new=len(new_ids),
            removed=len(plan.removed),
            summary_failures=self.write_summaries(summarise),
        )
        edges = super_edges({sid: members for sid, (_, members) in clusters.items()}, here.adj)
        changed = ego_changes(up.adj, edges)  # own edges changed, or edges among the neighbours
        up.adj = edges
        gone = set(plan.removed)
        nxt = Delta(
            removed=plan.removed,
            affected=(changed | set(new_ids)) - gone,
            dirty=set(summarise) - set(new_ids),
        )
        return record, (nxt if nxt else None)

    def write_summaries(self, ids: Sequence[str]) -> int:
        """Summarise the communities of ``ids`` as one batch, embed the results; return failures."""
        if not ids:
            return 0
        groups = [[self.nodes[c].text for c in self.nodes[sid].children] for sid in ids]
        results = self.summarise(groups)
        vectors = self.embed([text for text, _ in results])
        failures = 0
        for sid, (text, failed), vector in zip(ids, results, vectors, strict=False):
            node = self.nodes[sid]
            node.text, node.vector = text, vector
            node.meta = {"summary_failed": True} if failed else {}
            failures += int(failed)
        return failures

    def drop_above(self, level: int) -> None:
        """Remove every level above ``level`` (a stop rule now holds there)."""
        for upper in self.levels[level + 1 :]:
            for v in upper.order:
                del self.nodes[v]
        del self.levels[level + 1 :]
        self.levels[level].clusters = {}

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        return {
            "serial": self.serial,
            "levels": [
                {
                    "order": lvl.order,
                    "replicas": lvl.replicas.to_json(),
                    "clusters": [
                        [sid, list(key), list(members)]
                        for sid, (key, members) in lvl.clusters.items()
                    ],
                }
                for lvl in self.levels
            ],
        }

    def load_json(
        self, doc: dict[str, Any], nodes: dict[str, Node], edges: dict[str, dict[str, float]]
    ) -> None:
        """Restore from ``to_json`` plus the nodes and same-level edges read back from the store."""
        self.serial, self.nodes, self.levels = int(doc["serial"]), nodes, []
        for lvl in doc["levels"]:
            level = Level(order=list(lvl["order"]), replicas=Replicas.from_json(lvl["replicas"]))
            level.adj = {v: dict(edges.get(v, {})) for v in level.order}
            level.clusters = {
                sid: (tuple(key), tuple(members)) for sid, key, members in lvl["clusters"]
            }
            self.levels.append(level)
