"""GraphRAG-lite's offline build as one free function: text units → extraction → merge and
description summaries → entity atoms → hierarchical Leiden → community reports → community nodes.

``GraphRAG.build`` (memory.py) calls :func:`build_graph` with its grouped settings; every LLM step
runs as concurrent batches metered under "build", and every failure is counted in the returned log.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memharness.memsys.extraction.chunks import TextUnit, make_text_units
from memharness.memsys.extraction.entities import ExtractSettings, run_extraction
from memharness.memsys.extraction.parsing import FailureLog
from memharness.memsys.graphrag.communities import hierarchical_leiden
from memharness.memsys.graphrag.merge import SummarySettings, merge_graph, summarize_descriptions
from memharness.memsys.graphrag.reports import ContextBuilder, ReportSettings, generate_reports
from memharness.memsys.graphrag.to_store import add_communities, add_entities
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.cpu import run_cpu
from memharness.memsys.types import Unit


@dataclass(frozen=True)
class LeidenSettings:
    """Hierarchical Leiden's knobs (documented in conf/memory/graphrag.yaml)."""

    max_cluster_size: int = 10
    seed: int = 0
    use_lcc: bool = True
    resolution: float = 1.0
    iterations: int = 1
    backend: str = "igraph"
    randomness: float = 0.001


@dataclass(frozen=True)
class BuildSettings:
    """Every setting of the build, grouped by step."""

    extract: ExtractSettings
    summary: SummarySettings
    report: ReportSettings
    leiden: LeidenSettings
    chunk_size: int | None = None
    chunk_overlap: int = 100
    missing_endpoint: str = "drop"  # drop | create
    report_relationships: str = "all"  # all | per_entity
    report_substitution: bool = True
    max_failures_kept: int = 20


def build_settings_of(memory: Any) -> BuildSettings:
    """The build's settings from the groups a memory holds (conf/memory/graphrag.yaml's sections:
    ``chunks``, ``extraction``, ``summaries``, ``communities``, ``reports``, ``prompts``)."""
    x, p, c = memory.extraction, memory.prompts, memory.communities
    extract = ExtractSettings(
        prompt=p.extract_json_prompt if x.format == "json" else p.extract_prompt,
        continue_prompt=p.continue_prompt,
        loop_prompt=p.loop_prompt,
        entity_types=list(x.entity_types),
        format=x.format,
        max_gleanings=int(x.max_gleanings),
        max_tokens=int(x.max_tokens),
        tuple_delimiter=x.tuple_delimiter,
        record_delimiter=x.record_delimiter,
        completion_delimiter=x.completion_delimiter,
        entity_types_case=x.entity_types_case,
        line_records=bool(x.line_records),
    )
    s = memory.summaries
    summary = SummarySettings(
        prompt=p.summarize_prompt,
        threshold_tokens=int(s.threshold_tokens),
        max_input_tokens=int(s.max_input_tokens),
        max_words=int(s.max_words),
        max_tokens=int(s.max_tokens),
        separator=s.separator,
    )
    r = memory.reports
    report = ReportSettings(
        prompt=p.report_prompt,
        max_input_tokens=int(r.max_input_tokens),
        max_words=int(r.max_words),
        max_tokens=int(r.max_tokens),
    )
    leiden = LeidenSettings(
        max_cluster_size=int(c.max_cluster_size),
        seed=memory.seed if c.seed is None else c.seed,
        use_lcc=bool(c.use_lcc),
        resolution=float(c.resolution),
        iterations=int(c.iterations),
        backend=c.backend,
        randomness=float(c.randomness),
    )
    return BuildSettings(
        extract,
        summary,
        report,
        leiden,
        chunk_size=memory.chunks.size,
        chunk_overlap=int(memory.chunks.overlap),
        missing_endpoint=x.missing_endpoint,
        report_relationships=r.relationships,
        report_substitution=bool(r.substitution),
        max_failures_kept=memory.max_failures_kept,
    )


@dataclass
class BuiltGraph:
    """What a build leaves: the text units, the build record (stats) and the failure log."""

    text_units: dict[str, TextUnit]
    record: dict[str, Any]
    log: FailureLog


def build_graph(
    store: HierarchyStore,
    units: Sequence[Unit],
    llm: Any,
    embedder: Any,
    tokenizer: Any,
    settings: BuildSettings,
) -> BuiltGraph:
    """Build the entity graph and its community reports from ``units`` into the empty ``store``."""
    log, timings, start = FailureLog(settings.max_failures_kept), {}, time.perf_counter()
    text_units = make_text_units(units, tokenizer, settings.chunk_size, settings.chunk_overlap)
    extraction = run_extraction(llm, text_units, settings.extract, log)
    timings["extract_s"] = time.perf_counter() - start
    graph = merge_graph(
        extraction.entities, extraction.relations, text_units, log, settings.missing_endpoint
    )
    summarize_descriptions(llm, graph, settings.summary, tokenizer, log)
    add_entities(store, embedder, graph)
    timings["merge_s"] = time.perf_counter() - start - timings["extract_s"]
    edges = [(r.source, r.target, _positive(r.weight, log, r.id)) for r in graph.relations]
    lei = settings.leiden
    # Leiden's levels and their Python bookkeeping hold the interpreter: in the run's CPU pool
    communities, leiden = run_cpu(
        hierarchical_leiden,
        len(graph.entities),
        edges,
        lei.max_cluster_size,
        lei.seed,
        lei.use_lcc,
        lei.resolution,
        lei.iterations,
        lei.backend,
        lei.randomness,
    )
    incident: list[list[int]] = [[] for _ in graph.entities]
    for i, r in enumerate(graph.relations):
        incident[r.source].append(i)
        incident[r.target].append(i)
    report_start = time.perf_counter()
    context = ContextBuilder(
        graph, incident, tokenizer, settings.report_relationships, settings.report_substitution
    )
    reports, report_record = generate_reports(llm, context, communities, settings.report, log)
    add_communities(store, embedder, graph, communities, reports)
    timings["reports_s"] = time.perf_counter() - report_start
    calls = {**extraction.calls, "summarize": graph.summary_calls, "report": report_record["calls"]}
    record = {
        "units": len(units),
        "text_units": len(text_units),
        "chunking": "dataset units"
        if settings.chunk_size is None
        else f"{settings.chunk_size}/{settings.chunk_overlap} tokens",
        "llm_calls": {**calls, "total": sum(calls.values())},
        "extraction": {
            "replies": extraction.replies,
            "replies_at_cap": dict(extraction.replies_at_cap),
            "entity_records": len(extraction.entities),
            "relationship_records": len(extraction.relations),
        },
        "graph": {
            "entities": len(graph.entities),
            "relationships": len(graph.relations),
            "descriptions_summarised": graph.summarised,
        },
        "communities": leiden,
        "reports": {k: v for k, v in report_record.items() if k != "calls"},
        "failures": log.to_json(),
        "seconds": {**timings, "total_s": time.perf_counter() - start},
    }
    return BuiltGraph({tu.id: tu for tu in text_units}, record, log)


def _positive(weight: float, log: FailureLog, rel_id: str) -> float:
    """Leiden needs positive weights: a summed strength <= 0 clusters as 1e-6 (the stored weight is kept); counted."""
    if weight > 0:
        return weight
    log.add("nonpositive_weight", str(weight), relationship=rel_id)
    return 1e-6
