"""CAM (Li et al., 2025, arXiv 2510.05520): constructivist agentic memory on the hierarchy core.

Level 0 is the foundational network of chunks (eq. 2 edges, stored as the core's same-level
edges); every level above holds one LLM summary per community of the level below, found by label
propagation on the ego-split replica network, so a node can feed several parents (``store.link``
many-to-one). Construction is the paper's online batch update (``develop.py``); ``construction:
offline`` is the same update fed every unit as one batch, rebuilt when new units arrive (the
released code's one-shot build). Retrieval is Prune-and-Grow (``retrieval.py``) or one of the core
traversals (Table 3: ``top_down`` = hierarchical traversal, ``collapsed`` = global retrieval).

Table 3's variants are settings: ``hierarchy: false`` keeps the foundational network only;
``ego_splitting: false`` propagates labels on the network itself (disjoint communities).

Paper vs code, both exposed, the paper's as default: the plain cosine in eq. 2
(``network.clip_cosine``; code max(0, cos)), s = 5 initial nodes (``top_k``; code 10),
Prune-and-Grow's stop rule (``selection.stop_when``: paper "until P no longer grows"; code: the
candidates stop changing) and whose neighbours grow (``selection.grow_scope``: paper every
activated node; code the last picks). Where the paper is silent the choice is a setting: the
propagation limit (``clustering.lp_max_rounds``), which replicas an online batch re-labels
(``clustering.online_label_scope``), how selections are parsed (``selection.parse``), the chunker
(``chunks.mode``), the evidence order under the budget (``evidence.order``); the online update's
unspecified details (replica and community identity across batches) are documented in
``develop.py`` and docs/cam.md. Settings are grouped by concern (``cam/settings.py``, the sections
of ``conf/memory/cam.yaml``); the ones the paper tables select runs by stay top-level.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.base import fill_budget
from memharness.memsys.cam.chunking import chunks_of
from memharness.memsys.cam.develop import Development, Node, Settings
from memharness.memsys.cam.retrieval import (
    Exploration,
    consecutive_runs,
    evidence_items,
    exploration_summary,
    explore,
    numbered_passages,
)
from memharness.memsys.cam.settings import (
    Chunks,
    Clustering,
    Evidence,
    Network,
    Selection,
    Summaries,
)
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.memory import HierarchicalMemory, retrieval_record
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.settings import Range, group
from memharness.memsys.types import RetrievedItem, Unit, content_id


class CAM(HierarchicalMemory):
    """The CAM memory system; hyperparameters are documented in ``conf/memory/cam.yaml``."""

    name = "cam"
    traversals = (*traverse.TRAVERSALS, "prune_and_grow")

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        construction: Literal["online", "offline"] = "online",
        k: Annotated[int, Range(1)] = 10,
        hierarchy: bool = True,
        ego_splitting: bool = True,
        traversal: str = "prune_and_grow",
        top_k: int = 5,
        chunks: Chunks | None = None,
        network: Network | None = None,
        clustering: Clustering | None = None,
        summaries: Summaries | None = None,
        selection: Selection | None = None,
        evidence: Evidence | None = None,
        **core: Any,
    ) -> None:
        # The settings the paper tables select runs by are top-level; the rest are declared by the
        # annotations of the groups (cam/settings.py), each a section of conf/memory/cam.yaml.
        super().__init__(
            llm=llm,
            embedder=embedder,
            tokenizer=tokenizer,
            traversal=traversal,
            top_k=top_k,
            **core,
        )
        self.construction, self.online = construction, construction == "online"
        self.k, self.hierarchy, self.ego_splitting = int(k), bool(hierarchy), bool(ego_splitting)
        self.chunks, self.network = group(Chunks, chunks), group(Network, network)
        self.clustering, self.summaries = group(Clustering, clustering), group(Summaries, summaries)
        self.selection, self.evidence = group(Selection, selection), group(Evidence, evidence)
        self.batches: list[dict[str, Any]] = []
        self.forget_updates: list[dict[str, Any]] = []  # Development.remove's records (forget)
        self.explorations: list[dict[str, Any]] = []
        self.summary_calls = self.summary_failures = 0
        self._retrieval_ids: list[str] = []  # the ids the node indices in self.retrievals refer to
        self._reset()

    def _reset(self) -> None:
        net, clusters = self.network, self.clustering
        settings = Settings(
            alpha=float(net.alpha),
            sigma=float(net.sigma),
            theta=float(net.theta),
            k=self.k,
            clip_cosine=bool(net.clip_cosine),
            max_cluster_size=clusters.max_cluster_size,
            max_level=int(clusters.max_level),
            hierarchy=self.hierarchy,
            ego_splitting=self.ego_splitting,
            lp_max_rounds=clusters.lp_max_rounds,
            label_scope=clusters.online_label_scope,
        )
        self.development = Development(
            settings, self._summarise, lambda texts: self.embedder.embed(texts)
        )
        self.next_position = 0
        self.store = HierarchyStore()
        self._positions: dict[int, int] = {}
        self.degradation.pop("summary_failed", None)  # an empty memory stands in for no summary

    # ------------------------------------------------------------------ construction
    def add(self, units: Sequence[Unit]) -> None:
        """Online: integrate one batch of units (Sec. 4.1)."""
        self._integrate(units, rebuild=False)

    def build(self, units: Sequence[Unit]) -> None:
        """Offline: the same update with every unit in one batch, from an empty memory."""
        self._reset()
        self._integrate(units, rebuild=True)

    def _integrate(self, units: Sequence[Unit], rebuild: bool) -> None:
        start, calls = time.perf_counter(), self.summary_calls
        chunks = chunks_of(list(units), self.chunks.mode, self.tokenizer, int(self.chunks.size))
        if not chunks:
            return
        vectors = self.embedder.embed([c.text for c in chunks])
        nodes = []
        for chunk, vector in zip(chunks, vectors, strict=False):
            position = self.next_position
            self.next_position += 1
            document = chunk.source if self.network.proximity_scope == "source" else "episode"
            node_id = content_id("cam-chunk", chunk.units, position, chunk.text, prefix="c-")
            nodes.append(
                Node(
                    node_id,
                    0,
                    chunk.text,
                    vector,
                    units=chunk.units,
                    meta={"position": position, "document": document},
                )
            )
        self._annotate(nodes)
        record = self.development.insert(nodes)
        self._materialise()
        covered = {u for c in chunks for u in c.units}
        record.update(
            units=len(units),
            units_without_text=sum(u.id not in covered for u in units),
            rebuild=rebuild,
            llm_calls=self.summary_calls - calls,
            seconds=time.perf_counter() - start,
        )
        self.batches.append(record)

    def drop_units(self, unit_ids: set[str]) -> str:
        """Own forget: drop the chunks of ``unit_ids`` from the foundational network and update the
        levels above as for an insert (``Development.remove``): only communities that lost a member
        are re-summarised. The default rebuild when a chunk also holds kept units (``chunks.mode:
        pack``: its text would keep the forgotten one), nothing would remain, or nothing is built."""
        dev = self.development
        gone = [v for v in dev.levels[0].order if set(dev.nodes[v].units) & unit_ids]
        mixed = any(set(dev.nodes[v].units) - unit_ids for v in gone)
        if self._pending or mixed or all(u.id in unit_ids for u in self.units):
            return super().drop_units(unit_ids)
        start, calls = time.perf_counter(), self.summary_calls
        self.remove_units(unit_ids)
        record = dev.remove(gone)
        self._materialise()
        record.update(
            units=len(unit_ids),
            llm_calls=self.summary_calls - calls,
            seconds=time.perf_counter() - start,
        )
        self.forget_updates.append(record)
        return "prune_and_resummarise"

    def _annotate(self, nodes: Sequence[Node]) -> None:
        """Hook for variants that label new chunks before they join the network (CAM w/ FM)."""

    def _summarise(self, groups: list[list[str]]) -> list[tuple[str, bool]]:
        """One summary per community, all of a level as one concurrent batch; a failure is counted
        (``summary_failures``) and leaves the members' text, cut to the summary length, in its place,
        marked ``summary_failed`` (the memory's ``degradation`` counts those nodes)."""
        requests = [
            ChatRequest.user(
                self.summaries.prompt.format(passages=numbered_passages(texts)),
                max_tokens=int(self.summaries.max_tokens),
                temperature=0.0,
            )
            for texts in groups
        ]
        completions = self.llm.complete(requests, desc="cam summaries")
        self.summary_calls += len(requests)
        out = []
        for texts, completion in zip(groups, completions, strict=False):
            text = completion.text.strip() if completion.ok else ""
            if text:
                out.append((text, False))
            else:  # the community keeps its members' text, cut, as its summary (counted in _materialise)
                self.summary_failures += 1
                out.append(
                    (
                        self.tokenizer.truncate("\n".join(texts), int(self.summaries.max_tokens)),
                        True,
                    )
                )
        return out

    def _materialise(self) -> None:
        """Write the levels into a fresh store in the code's node order (level by level); keep the
        nodes recorded by earlier retrievals pointing at the same ids."""
        old_ids, store, index = self._retrieval_ids, HierarchyStore(), {}
        dev = self.development
        for level in dev.levels:
            for v in level.order:
                n = dev.nodes[v]
                index[v] = store.add_node(
                    v,
                    n.text,
                    n.vector,
                    n.level,
                    children=[index[c] for c in n.children],
                    units=n.units,
                    meta=n.meta,
                )
        for level in dev.levels:
            for v, nbrs in level.adj.items():
                for u, w in nbrs.items():
                    if index[v] < index[u]:
                        store.add_edge(index[v], index[u], w)
        for r in self.retrievals:  # a vanished node leaves the record with its score
            kept = [
                (index[old_ids[v]], s)
                for v, s in zip(r["nodes"], r["scores"], strict=False)
                if old_ids[v] in index
            ]
            r["nodes"], r["scores"] = [v for v, _ in kept], [s for _, s in kept]
        self.store, self._retrieval_ids = store, list(store.ids)
        self._positions = {index[v]: dev.nodes[v].meta["position"] for v in dev.levels[0].order}
        # degradation = the nodes standing in for a summary now; a node re-summarised successfully or
        # removed no longer counts (summary_failures stays the cumulative count of failed calls)
        self.degradation["summary_failed"] = sum(1 for m in store.meta if m.get("summary_failed"))

    # ------------------------------------------------------------------ retrieval
    def explore(self, question: str, vector: np.ndarray) -> Exploration:
        """Prune-and-Grow for one question (recorded for ``stats``)."""
        pick = self.selection
        record = explore(
            self.store,
            vector,
            question,
            self.llm,
            top_k=self.top_k,
            max_turns=int(pick.max_turns),
            tolerance=int(pick.tolerance),
            prompt=pick.prompt,
            max_tokens=int(pick.max_tokens),
            parse=pick.parse,
            retry_temperature=float(pick.retry_temperature),
            stop_when=pick.stop_when,
            grow_scope=pick.grow_scope,
            evidence_order=self.evidence.order,
        )
        self.explorations.append(
            {
                "turns": len(record.turns),
                "selected": sum(len(t["selected"] or []) for t in record.turns),
                "evidence": len(record.evidence),
                "selection_calls": record.selection_calls,
                "parse_failures": record.parse_failures,
                "call_failures": record.call_failures,
                "tolerance_exhausted": record.exhausted,
                "fallback_to_initial": record.fallback,
            }
        )
        return record

    def traverse(self, question: str, vector: np.ndarray) -> traverse.Ranked:
        if self.traversal != "prune_and_grow":
            return super().traverse(question, vector)
        evidence = self.explore(question, vector).evidence
        return list(
            zip(evidence, map(float, self.store.similarities(vector, evidence)), strict=False)
        )

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Prune-and-Grow: evidence in the code's order, consecutive chunks merged, then the budget."""
        if self.traversal != "prune_and_grow":
            return super().search(question, budget_tokens)
        if self.store.is_empty():
            return []
        ranked = self.traverse(question, self.embedder.embed([question])[0])
        score = dict(ranked)
        runs = (
            consecutive_runs(self.store, [v for v, _ in ranked], self._positions)
            if self.evidence.merge_consecutive
            else [[v] for v, _ in ranked]
        )
        items = evidence_items(self.store, runs, score, self.tokenizer)
        kept = fill_budget(
            [i for i, _ in items.values()],
            budget_tokens,
            self.tokenizer,
            self.stop_at_first_overflow,
        )
        nodes = [v for item in kept for v in items[item.node_id][1]]
        self.retrievals.append(
            retrieval_record(
                question, [self.store.ids[v] for v in nodes], nodes, [score[v] for v in nodes]
            )
        )
        return kept

    # ------------------------------------------------------------------ diagnostics and persistence
    def stats(self) -> dict[str, Any]:
        """Core diagnostics plus per-batch construction records and Prune-and-Grow counters."""
        calls = [b["llm_calls"] for b in self.batches]
        secs = [b["seconds"] for b in self.batches]
        construction = {
            "construction": self.construction,
            "batches": len(self.batches),
            "chunks": len(self.development.levels[0].order),
            "summary_calls": self.summary_calls,
            "summary_failures": self.summary_failures,
            "lp_limit_hits": sum(lv["lp_hit_limit"] for b in self.batches for lv in b["levels"]),
            "llm_calls_per_batch_mean": float(np.mean(calls)) if calls else 0.0,
            "seconds_per_batch_mean": float(np.mean(secs)) if secs else 0.0,
        }
        return {
            **super().stats(),
            "construction": construction,
            "batches": list(self.batches),
            **({"forget_updates": list(self.forget_updates)} if self.forget_updates else {}),
            "prune_and_grow": exploration_summary(self.explorations),
        }

    def state(self) -> dict[str, Any]:
        return {
            "development": self.development.to_json(),
            "next_position": self.next_position,
            "batches": self.batches,
            "summary_calls": self.summary_calls,
            "summary_failures": self.summary_failures,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Rebuild the development state (levels, replicas, labels, communities) from the store."""
        if not state:
            return
        store, nodes, edges = self.store, {}, {}
        for v in store.content_nodes():
            nid = store.ids[v]
            nodes[nid] = Node(
                nid,
                store.levels[v],
                store.texts[v],
                store.embeddings[v].copy(),
                children=tuple(store.ids[c] for c in store.children[v]),
                units=store.units[v],
                meta=dict(store.meta[v]),
            )
            edges[nid] = {store.ids[u]: w for u, w in store.edges[v].items()}
        self.development.load_json(state["development"], nodes, edges)
        self.next_position = int(state["next_position"])
        self.batches = list(state.get("batches", []))
        self.summary_calls, self.summary_failures = (
            int(state["summary_calls"]),
            int(state["summary_failures"]),
        )
        self._positions = {
            v: store.meta[v]["position"] for v in store.content_nodes() if store.levels[v] == 0
        }
        self._retrieval_ids = list(store.ids)
