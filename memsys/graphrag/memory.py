"""GraphRAG-lite on the hierarchy core: an offline memory rebuilt from every inserted unit.

Build (α, π, ρ; every LLM step as concurrent batches, metered under "build"):
text units (``extraction/chunks.py``) → entity / relationship extraction with gleaning
(``extraction/entities.py``; both shared with CAM w/ FM and HippoRAG) → merge and description
summaries (``merge.py``) → entity atoms, relationship edges (``index.py`` for the store layout)
→ hierarchical Leiden (``communities.py``) → community reports deepest level first
(``reports.py``) → community nodes above the entities.

Retrieval (``traversal``): ``local`` (default; ``search_local.py``) and ``global``
(``search_global.py``, map-reduce: the memory answers the question itself) are GraphRAG's own;
the core's ``collapsed``, ``collapsed_expand`` and ``top_down`` run on the same store (entities and
reports in one pool; top-down from the coarsest communities) for the traversal-coupling
experiment. Hyperparameters and every prompt: ``conf/memory/graphrag.yaml``; see docs/graphrag.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import fields, replace
from typing import Annotated, Any

import numpy as np
from memharness.memsys.extraction.chunks import Chunks, TextUnit, chunk_problems
from memharness.memsys.extraction.parsing import FailureLog
from memharness.memsys.extraction.prompts import default_prompts
from memharness.memsys.graphrag.build import build_graph, build_settings_of
from memharness.memsys.graphrag.index import GraphIndex
from memharness.memsys.graphrag.records import build_provenance, bump
from memharness.memsys.graphrag.reuse import ReplyLedger
from memharness.memsys.graphrag.search_global import (
    GlobalSearch,
    GlobalSearchSettings,
    global_settings,
)
from memharness.memsys.graphrag.search_local import (
    LocalSearch,
    LocalSearchSettings,
    local_settings,
    local_settings_problems,
)
from memharness.memsys.graphrag.settings import (
    Communities,
    Extraction,
    Prompts,
    Reports,
    Summaries,
)
from memharness.memsys.hierarchy import traverse
from memharness.memsys.hierarchy.memory import HierarchicalMemory, retrieval_record
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.types import Completion
from memharness.memsys.settings import Range, group
from memharness.memsys.types import Question, RetrievedItem, Unit

log = logging.getLogger(__name__)


class GraphRAG(HierarchicalMemory):
    """GraphRAG-lite; hyperparameters are documented in ``conf/memory/graphrag.yaml``."""

    online = False
    name = "graphrag"
    traversals = traverse.TRAVERSALS + ("local", "global")

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        chunks: Chunks | None = None,
        extraction: Extraction | None = None,
        summaries: Summaries | None = None,
        communities: Communities | None = None,
        reports: Reports | None = None,
        local_search: LocalSearchSettings | None = None,
        global_search: GlobalSearchSettings | None = None,
        prompts: Prompts | None = None,
        max_failures_kept: Annotated[int, Range(0)] = 20,
        traversal: str = "local",
        top_k: int = 10,
        retrieve_threshold: float = -1.0,
        **core: Any,
    ) -> None:
        # Settings are declared by the annotations of the groups (graphrag/settings.py), checked
        # before a run starts; each group is a section of conf/memory/graphrag.yaml.
        super().__init__(
            llm=llm,
            embedder=embedder,
            tokenizer=tokenizer,
            traversal=traversal,
            top_k=top_k,
            retrieve_threshold=retrieve_threshold,
            **core,
        )
        self.chunks, self.extraction = group(Chunks, chunks), group(Extraction, extraction)
        self.summaries, self.reports = group(Summaries, summaries), group(Reports, reports)
        self.communities = group(Communities, communities)
        self.max_failures_kept = int(max_failures_kept)
        self.local_search, self.global_search = (
            local_settings(local_search),
            global_settings(global_search),
        )
        given = group(Prompts, prompts)  # null prompts are the ones in conf/memory/graphrag.yaml
        missing = [f.name for f in fields(given) if getattr(given, f.name) is None]
        defaults = default_prompts() if missing else {}
        self.prompts = replace(given, **{key: defaults[key] for key in missing})
        self.text_units: dict[str, TextUnit] = {}
        self.build_record: dict[str, Any] = {}
        self._replies: dict[str, Completion] = {}  # the last build's LLM outputs (reuse.py)
        self.search_failures = FailureLog(self.max_failures_kept)
        self.search_record: dict[str, Any] = {"queries": 0, "local": {}, "global": {}}
        self.index: GraphIndex | None = None
        self._global: GlobalSearch | None = None
        self._map_outcome: tuple[str, dict[str, int]] | None = (
            None  # the last question's map calls (answer reads it)
        )

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """Rules between settings: the chunk overlap and the local-search budget split."""
        yield from chunk_problems(settings)
        for key, message in local_settings_problems(settings.get("local_search") or {}):
            yield f"local_search.{key}", message

    @property
    def answers_itself(self) -> bool:
        """Global search produces the answer (its reduce step); the runner then calls ``answer``."""
        return self.traversal == "global"

    # ------------------------------------------------------------------ build
    def build(self, units: Sequence[Unit]) -> None:
        """Rebuild everything from ``units``: extraction, merge, communities, reports (build.py)."""
        self._build(units, None)

    def _build(self, units: Sequence[Unit], previous: dict[str, Completion] | None) -> None:
        """The build; with ``previous`` (the last build's outputs) a repeated request is served
        from them instead of the LLM (forget, reuse.py)."""
        # a rebuild starts over: earlier retrievals point at the previous store, earlier failures are gone
        self.store, self.retrievals, self.index, self._global = HierarchyStore(), [], None, None
        self.degradation.clear()
        ledger = None if self.llm is None else ReplyLedger(self.llm, previous)
        built = build_graph(
            self.store,
            units,
            ledger or self.llm,
            self.embedder,
            self.tokenizer,
            build_settings_of(self),
        )
        self.text_units, self.build_record = built.text_units, built.record
        self._replies = {} if ledger is None else ledger.outputs
        if ledger is not None and previous is not None:
            self.build_record["reuse"] = ledger.counts
        self.index = GraphIndex(self.store, self.text_units)
        self._record_degradation(built.log)

    def drop_units(self, unit_ids: set[str]) -> str:
        """Own forget (reuse.py): the build again over the remaining units, the LLM asked only for
        the extractions, description summaries and reports whose inputs changed. The default when
        nothing is built yet, nothing would remain, or the outputs are not at hand (a loaded
        snapshot)."""
        remaining = [u for u in self.units if u.id not in unit_ids]
        if self._pending or not remaining or not self._replies:
            return super().drop_units(unit_ids)
        before = self.communities_by_members()
        self.remove_units(unit_ids)
        self._build(self.units, self._replies)
        after = self.communities_by_members()
        self.build_record["reuse"]["communities_changed"] = len(after - before)
        return "rebuild_changed_only"

    def communities_by_members(self) -> set[tuple[int, frozenset[str]]]:
        """Each community as (level, its member entities' names): what Leiden's partition was."""
        index = self._graph_index()
        return {(c.level, frozenset(index.name(m) for m in c.members)) for c in index.communities}

    def _record_degradation(self, log: FailureLog) -> None:
        """Outputs the structure was built without (the runner flags questions answered from it)."""
        c = log.counts
        self.degrade("extraction_failed", c["call_failed"])
        self.degrade("extraction_unparsed", c["unparsed_reply"])
        self.degrade("summary_failed", c["summary_failed"])
        self.degrade("summary_unparsed", c["summary_empty"])
        self.degrade("report_failed", c["report_failed"])
        self.degrade("report_unparsed", c["report_unparsed"])

    # ------------------------------------------------------------------ retrieval
    def _local(self) -> LocalSearch:
        return LocalSearch(self._graph_index(), self.local_search, self.tokenizer)

    def _global_search(self) -> GlobalSearch:
        if self._global is None:
            self._global = GlobalSearch(
                self._graph_index(),
                self.global_search,
                self.tokenizer,
                self.prompts.map_prompt,
                self.prompts.reduce_prompt,
                self.prompts.reduce_mc_prompt,
            )
        return self._global

    def _graph_index(self) -> GraphIndex:
        if self.index is None:
            self.index = GraphIndex(self.store, self.text_units)
        return self.index

    def traverse(self, question: str, vector: np.ndarray) -> traverse.Ranked:
        """``local``: the entities the vector search selects; ``global``: the reports map-reduce reads
        (by occurrence weight); the core's traversals otherwise."""
        if self.traversal == "local":
            return self._local().select_entities(vector)
        if self.traversal == "global":
            g = self._global_search()
            s = self.global_search
            weights = g.weights(
                g.index.rollup_reports(int(s["community_level"]), s.get("rollup", "entity"))
            )
            return sorted(
                ((g.index.communities[c].node, w) for c, w in weights.items()),
                key=lambda x: (-x[1], x[0]),
            )
        return super().traverse(question, vector)

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Local context, global map step, or the core's traversal; remembers the nodes used (view)."""
        if self.traversal not in ("local", "global"):
            return super().search(question, budget_tokens)
        self.search_record["queries"] += 1
        if self.store.is_empty():
            bump(self.search_record[self.traversal], "empty_memory")
            return []
        if self.traversal == "local":
            result = self._local().search(self.embedder.embed([question])[0], budget_tokens)
            record = self.search_record["local"]
            bump(record, "entities_selected", len(result.entities))
            for section, used in result.used.items():
                bump(record, f"{section}_tokens", used)
            nodes = result.communities + [v for v, _ in result.entities]
            items = result.items
        else:
            g = self._global_search()
            points, record = g.run_map(self.llm, question, self.search_failures)
            items = g.reduce_items(points, budget_tokens)
            record["points_kept"] = len(items)
            for k, v in record.items():
                bump(self.search_record["global"], k, v)
            self._map_outcome = (
                question,
                {k: record[k] for k in ("map_calls", "map_failed", "map_unparsed")},
            )
            nodes = sorted(
                {g.index.communities[c].node for b in g.batches() for c in b.communities}
            )
        self.retrievals.append(
            retrieval_record(
                question, [self.store.ids[v] for v in nodes], nodes, [1.0] * len(nodes)
            )
        )
        return items

    def answer(
        self, question: Question, items: Sequence[RetrievedItem], multiple_choice: bool = False
    ) -> Completion:
        """Global search's reduce step (``GlobalSearch.answer``): a failed completion when every map
        batch of this question failed (the runner records ``answer_failed``)."""
        outcome = (
            self._map_outcome[1]
            if self._map_outcome and self._map_outcome[0] == question.text
            else {}
        )
        return self._global_search().answer(
            self.llm,
            question,
            items,
            multiple_choice,
            outcome,
            self.search_record["global"],
            self.search_failures,
        )

    # ------------------------------------------------------------------ diagnostics and persistence
    def stats(self) -> dict[str, Any]:
        """Core diagnostics plus the build record (calls, failures, Leiden run) and search counters."""
        build_failures = self.build_record.get("failures", {}).get("counts", {})
        search = {**self.search_record, "failures": self.search_failures.to_json()}
        failure_counts = dict(build_failures)
        for k, v in self.search_failures.counts.items():
            failure_counts[k] = failure_counts.get(k, 0) + v
        if self.traversal == "global" and len(self.store):
            search["global_reports"] = self._global_search().selection()
        return {
            **super().stats(),
            "graphrag": {
                "build": self.build_record,
                "search": search,
                "provenance": build_provenance(self.build_record),
                "failure_counts": failure_counts,
                "index": self._graph_index().describe() if len(self.store) else {},
            },
        }

    def state(self) -> dict[str, Any]:
        """Text units, records, and the inserted units (a later insert rebuilds over all of them)."""
        return {
            "text_units": [tu.to_json() for tu in self.text_units.values()],
            "build": self.build_record,
            "search": self.search_record,
            "search_failures": self.search_failures.to_json(),
            "units": [u.to_json() for u in self.units],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.units = [Unit.from_json(u) for u in state.get("units", [])]
        if "units" not in state and not self.store.is_empty():
            log.warning(
                "GraphRAG memory saved without its inserted units: a later insert rebuilds from the "
                "new units only"
            )
        self.text_units = {d["id"]: TextUnit.from_json(d) for d in state.get("text_units", [])}
        self.build_record = dict(state.get("build", {}))
        self.search_record = dict(state.get("search", {"queries": 0, "local": {}, "global": {}}))
        self.search_failures = FailureLog.from_json(
            state.get("search_failures"), self.max_failures_kept
        )
        self.index, self._global = GraphIndex(self.store, self.text_units), None
