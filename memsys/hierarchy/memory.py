"""The base class of every hierarchical memory: store, traversal, diagnostics, persistence, view.

A subclass contributes only its own extraction α, grouping π, representative ρ and insertion
rules (``add`` for online systems, ``build`` for offline ones) and writes nodes into
``self.store``. Retrieval runs the traversal named in config over the store; ``stats()`` runs the
shared diagnostics; ``save()`` / ``load()`` persist the store with the system's hyperparameters and
state; the HTML view shows any hierarchy with the nodes each question retrieved.

Every constructor parameter of a subclass must be stored as an attribute of the same name:
``hyperparameters()`` reads them back to save the memory, ``load`` passes them to the constructor.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import numpy as np
from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.diagnostics import hierarchy_stats
from memharness.memsys.hierarchy.forget import Pruned, prune_units
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services import files as fileio
from memharness.memsys.settings import ChoicesFrom, Range
from memharness.memsys.types import RetrievedItem

DIAGNOSTICS = {
    "revenue_exact_max_leaves": 1500,
    "revenue_samples": 20000,
    "coherence_exact_max_members": 2000,
    "coherence_samples": 20000,
    "ss_theta_groups": 0,
    "ss_theta_max_tokens": 256,
}
_SERVICES = ("self", "llm", "embedder", "tokenizer")


class DiagnosticsSettings(TypedDict, total=False):
    """``memory.diagnostics``: cost bounds of the shared diagnostics (``hierarchy_stats``)."""

    revenue_exact_max_leaves: Annotated[int, Range(0)]
    revenue_samples: Annotated[int, Range(1)]
    coherence_exact_max_members: Annotated[int, Range(0)]
    coherence_samples: Annotated[int, Range(1)]
    ss_theta_groups: Annotated[int, Range(0)]
    ss_theta_max_tokens: Annotated[int, Range(1)]


class HierarchicalMemory(MemorySystem):
    """A memory organised as levels of representatives over atoms (theory paper, Sec. 2)."""

    with_root = False  # MemTree: a content-less root above the top nodes
    traversals = traverse.TRAVERSALS
    # the shared settings that never change what is built (snapshots are reused across them)
    retrieval_settings = (
        "traversal",
        "top_k",
        "retrieve_threshold",
        "stop_at_first_overflow",
        "top_down_returns",
        "diagnostics",
        "html_max_nodes",
    )

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        traversal: Annotated[str, ChoicesFrom("traversals")] = "collapsed",
        top_k: Annotated[int, Range(1)] = 10,
        retrieve_threshold: Annotated[float, Range(-1, 1)] = -1.0,
        stop_at_first_overflow: bool = False,
        top_down_returns: Literal["all", "atoms"] = "all",
        diagnostics: DiagnosticsSettings | None = None,
        seed: Annotated[int, Range(0)] = 0,
        html_max_nodes: Annotated[int, Range(0)] = 5000,
    ) -> None:
        # Settings are declared by the annotations above (memsys.settings) and checked before the run
        # starts; subclasses inherit these declarations through **kwargs (see docs/config.md).
        super().__init__(llm=llm, embedder=embedder, tokenizer=tokenizer)
        self.traversal, self.top_k, self.retrieve_threshold = (
            traversal,
            int(top_k),
            float(retrieve_threshold),
        )
        self.stop_at_first_overflow, self.top_down_returns = (
            bool(stop_at_first_overflow),
            top_down_returns,
        )
        self.diagnostics = {**DIAGNOSTICS, **(diagnostics or {})}
        self.seed, self.html_max_nodes = seed, int(html_max_nodes)
        self.store = HierarchyStore(with_root=self.with_root)
        # per question: the nodes it retrieved, by id (stable across save/load) and by index (for the view)
        self.retrievals: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ retrieval
    def traverse(self, question: str, vector: np.ndarray) -> traverse.Ranked:
        """Rank nodes for a query with the configured traversal (systems may add their own)."""
        if self.traversal == "collapsed":
            return traverse.collapsed(self.store, vector, self.top_k, self.retrieve_threshold)
        if self.traversal == "collapsed_expand":
            return traverse.collapsed_expand(
                self.store, vector, self.top_k, self.retrieve_threshold
            )
        if self.traversal == "top_down":
            return traverse.top_down(
                self.store, vector, self.top_k, self.retrieve_threshold, self.top_down_returns
            )
        raise ValueError(f"{type(self).__name__} has no traversal {self.traversal!r}")

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Traverse, attach provenance, fill the budget; remember what was retrieved for the view."""
        if self.store.is_empty():
            return []
        ranked = self.traverse(question, self.embedder.embed([question])[0])
        items = [self.store.item(v, s, self.tokenizer) for v, s in ranked]
        kept = fill_budget(items, budget_tokens, self.tokenizer, self.stop_at_first_overflow)
        index = {self.store.ids[v]: v for v, _ in ranked}
        self.retrievals.append(
            retrieval_record(
                question,
                [i.node_id for i in kept],
                [index[i.node_id] for i in kept],
                [i.score for i in kept],
            )
        )
        return kept

    # ------------------------------------------------------------------ forgetting
    def prune_store(self, unit_ids: set[str]) -> Pruned:
        """The core's forgetting rule (``hierarchy/forget.py``) on this memory: the units leave
        ``self.units``, the store is compacted; the caller rewrites ``affected`` with its own ρ."""
        self.remove_units(unit_ids)
        pruned = prune_units(self.store, unit_ids)
        self.store = pruned.store
        self.retrievals = restore_retrievals(self.store, self.retrievals)
        return pruned

    # ------------------------------------------------------------------ diagnostics
    def size(self) -> dict[str, int]:
        """What the built memory holds: its nodes with text (leaves and summaries) and their
        tokens (the runner's ingestion cost per episode, ``memory_items`` / ``memory_tokens``)."""
        texts = [t for t in self.store.texts if t]
        return {"items": len(texts), "tokens": sum(self.tokenizer.count(t) for t in texts)}

    def stats(self) -> dict[str, Any]:
        """Shared hierarchy diagnostics plus the traversal settings; subclasses add their own counters."""
        return {
            **super().stats(),
            **hierarchy_stats(
                self.store, self.tokenizer, self.llm, seed=self.seed, **self.diagnostics
            ),
            "traversal": {
                "name": self.traversal,
                "top_k": self.top_k,
                "threshold": self.retrieve_threshold,
                "stop_at_first_overflow": self.stop_at_first_overflow,
            },
        }

    # ------------------------------------------------------------------ persistence
    def hyperparameters(self) -> dict[str, Any]:
        """The constructor's parameters, read back from the attributes of the same name (a grouped
        settings object as its mapping, as the YAML section it was built from)."""
        names = [
            p.name
            for cls in type(self).__mro__
            if issubclass(cls, HierarchicalMemory)
            for p in inspect.signature(cls.__init__).parameters.values()
            if p.name not in _SERVICES and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        ]
        values = {n: getattr(self, n) for n in dict.fromkeys(names) if hasattr(self, n)}
        return {
            n: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v
            for n, v in values.items()
        }

    def state(self) -> dict[str, Any]:
        """System-specific state to save beside the store (counters, per-insertion records)."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what ``state()`` saved."""

    def save(self, out_dir: str | Path, view: bool = True) -> None:
        """Write hierarchy.json, embeddings.npy and (with ``view``) view.html into ``out_dir``."""
        from memharness.memsys.hierarchy.view import render_html

        system = public_class_path(type(self))
        self.store.save(
            out_dir,
            extra={
                "system": system,
                "hyperparameters": self.hyperparameters(),
                "state": self.state(),
                "retrievals": self.retrievals,
                "degradation": self.degraded,
            },
        )
        if not view:
            return
        html = render_html(
            self.store,
            title=f"{self.name}: {len(self.store.content_nodes())} nodes",
            retrievals=self.retrievals,
            max_nodes=self.html_max_nodes,
        )
        fileio.write_text(Path(out_dir) / "view.html", html)

    @classmethod
    def load(
        cls,
        in_dir: str | Path,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        **overrides: Any,
    ) -> HierarchicalMemory:
        """Rebuild a saved memory without any LLM call; missing embeddings are recomputed with ``embedder``."""
        store, doc = HierarchyStore.load(in_dir)
        params = {**doc.get("hyperparameters", {}), **overrides}
        memory = cls(llm=llm, embedder=embedder, tokenizer=tokenizer, **params)
        if store.dim == 0 and not store.is_empty():
            nodes = store.content_nodes()
            vectors = embedder.embed([store.texts[v] for v in nodes])
            for v, vec in zip(nodes, vectors, strict=False):
                store.set_text(v, store.texts[v], vec)
        memory.store = store
        memory._pending = False
        memory.degradation.update(doc.get("degradation", {}))
        memory.load_state(doc.get("state", {}))
        memory.retrievals = restore_retrievals(store, doc.get("retrievals", []))
        return memory


def retrieval_record(
    question: str, node_ids: list[str], nodes: list[int], scores: list[float]
) -> dict[str, Any]:
    """One question's retrieval: node ids (what identifies a node across save/load), the indices they
    had in the store at retrieval time (what the view draws) and the scores."""
    return {
        "question": question,
        "node_ids": list(node_ids),
        "nodes": [int(v) for v in nodes],
        "scores": [round(float(s), 4) for s in scores],
    }


def restore_retrievals(
    store: HierarchyStore, records: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Saved retrieval records with each node's index looked up again by its id in ``store``.

    Records written before node ids were recorded keep their indices; ids no longer in the store
    are dropped from ``nodes`` (they stay in ``node_ids``), so the view never points at another node.
    """
    index = {node_id: v for v, node_id in enumerate(store.ids)}
    out = []
    for r in records:
        if "node_ids" in r:
            r = {
                **r,
                "nodes": [index[i] for i in r["node_ids"] if i in index],
                "scores": [
                    s for i, s in zip(r["node_ids"], r["scores"], strict=False) if i in index
                ],
            }
        out.append(r)
    return out


def public_class_path(cls: type) -> str:
    """Dotted path of ``cls``, shortened to its package when the package re-exports it
    (``memharness.memsys.raptor.Raptor``, as YAML ``_target_``s name it), so saved files do not
    change when a package's inner modules move."""
    module = cls.__module__
    package = module.rpartition(".")[0]
    if package and getattr(importlib.import_module(package), cls.__qualname__, None) is cls:
        module = package
    return f"{module}.{cls.__qualname__}"


def load_memory(in_dir: str | Path, **services: Any) -> HierarchicalMemory:
    """Load any saved hierarchical memory by the system class recorded in its hierarchy.json."""
    _, doc = HierarchyStore.load(in_dir)
    module, _, name = doc["system"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    return cls.load(in_dir, **services)
