"""Merging the extracted records into one entity graph, and summarising long description lists.

- **Entities** are merged by normalised name (upper-cased, cleaned). GraphRAG groups by
  (name, type) and its finalising step then keeps only the first row per name, dropping the other
  types' descriptions; here one entity per name keeps every description and takes the most
  frequent type (nano-graphrag's rule; ties: the type seen first). Names seen with several types
  are counted (``type_conflicts``).
- **Relationships** are merged by their unordered endpoint pair with **summed** weights (the graph
  is undirected for clustering in both implementations; nano-graphrag merges both directions the
  same way). A relationship whose endpoint is not an extracted entity is dropped (GraphRAG,
  ``missing_endpoint: drop``) or gets an entity of type UNKNOWN (nano, ``create``); either way it
  is counted. Self-loops are dropped and counted.
- Every entity and relationship keeps the ids of the text units it came from (first-seen order)
  and the dataset units beneath them (provenance).
- **Descriptions**: the unique descriptions, sorted. One → kept. Joined (``separator``) shorter
  than ``threshold_tokens`` → kept joined. At least that long → an LLM summary (nano-graphrag's
  trigger, which summarises from exactly 500 tokens on; GraphRAG
  summarises every list of two or more, which ``threshold_tokens: 0`` reproduces: 0 means "always",
  whatever the joined text's token count, even 0). A summary reads
  descriptions up to ``max_input_tokens`` at a time and carries its partial summary into the next
  window (GraphRAG). All lists needing a call in a window round go out as one batch. A failed or
  empty summary keeps that window's joined descriptions and is counted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.extraction.chunks import TextUnit
from memharness.memsys.extraction.entities import EntityRecord, RelationRecord
from memharness.memsys.extraction.parsing import FailureLog, fill
from memharness.memsys.services.types import ChatRequest


@dataclass
class Entity:
    name: str
    type: str
    descriptions: list[str]
    chunks: list[str]  # text unit ids, first-seen order
    frequency: int  # records merged into it
    description: str = ""
    units: tuple[str, ...] = ()  # dataset units beneath the chunks
    degree: int = 0


@dataclass
class Relation:
    source: int  # entity positions, source < target
    target: int
    descriptions: list[str]
    chunks: list[str]
    weight: float
    description: str = ""
    units: tuple[str, ...] = ()
    rank: int = 0  # combined degree of the endpoints (GraphRAG's relationship rank)
    id: str = ""


@dataclass
class SummarySettings:
    prompt: str
    threshold_tokens: int = 500
    max_input_tokens: int = 4000
    max_words: int = 500
    max_tokens: int = 700
    separator: str = "\n"


@dataclass
class Graph:
    """The merged entity graph; entity positions follow sorted names."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    summary_calls: int = 0
    summarised: int = 0


def merge_graph(
    entity_records: Sequence[EntityRecord],
    relation_records: Sequence[RelationRecord],
    text_units: Sequence[TextUnit],
    log: FailureLog,
    missing_endpoint: str = "drop",
) -> Graph:
    """Merge records into entities and undirected relationships with provenance (no LLM call)."""
    if missing_endpoint not in ("drop", "create"):
        raise ValueError(
            f"memory.extraction.missing_endpoint must be 'drop' or 'create', got {missing_endpoint!r}"
        )
    types: dict[str, Counter[str]] = {}
    first_type: dict[str, dict[str, int]] = {}
    descriptions: dict[str, list[str]] = {}
    chunks: dict[str, list[str]] = {}
    for r in entity_records:
        types.setdefault(r.name, Counter())[r.type] += 1
        first_type.setdefault(r.name, {}).setdefault(r.type, len(first_type[r.name]))
        descriptions.setdefault(r.name, []).append(r.description)
        chunks.setdefault(r.name, []).append(r.chunk)
    extracted = set(types)
    for r in relation_records:
        missing = [end for end in (r.source, r.target) if end not in extracted]
        if not missing:
            continue
        log.add(
            "missing_endpoint",
            f"{r.source} -> {r.target}: {r.description}",
            endpoints=missing,
            chunk=r.chunk,
        )
        if missing_endpoint == "create":
            for end in missing:
                if end not in types:
                    types[end], first_type[end] = Counter({"UNKNOWN": 1}), {"UNKNOWN": 0}
                    descriptions[end], chunks[end] = [], []
                chunks[end].append(r.chunk)
    for name, counts in types.items():
        if len(counts) > 1:
            log.add("type_conflict", json.dumps(dict(counts)), entity=name)
    graph = Graph()
    position = {}
    for name in sorted(types):
        best = max(types[name].items(), key=lambda kv: (kv[1], -first_type[name][kv[0]]))[0]
        position[name] = len(graph.entities)
        graph.entities.append(
            Entity(
                name=name,
                type=best,
                descriptions=descriptions[name],
                chunks=list(dict.fromkeys(chunks[name])),
                frequency=sum(types[name].values()),
            )
        )
    graph.relations = _merge_relations(relation_records, position, log)
    _attach_provenance(graph, text_units)
    return graph


def _merge_relations(
    records: Sequence[RelationRecord], position: dict[str, int], log: FailureLog
) -> list[Relation]:
    merged: dict[tuple[int, int], Relation] = {}
    for r in records:
        if r.source not in position or r.target not in position:
            continue  # dropped (missing_endpoint: drop), counted above
        if r.source == r.target:
            log.add("self_loop", f"{r.source}: {r.description}", chunk=r.chunk)
            continue
        a, b = sorted((position[r.source], position[r.target]))
        rel = merged.setdefault(
            (a, b), Relation(source=a, target=b, descriptions=[], chunks=[], weight=0.0)
        )
        rel.descriptions.append(r.description)
        rel.chunks.append(r.chunk)
        rel.weight += r.weight
    out = [merged[k] for k in sorted(merged)]
    for rel in out:
        rel.chunks = list(dict.fromkeys(rel.chunks))
    return out


def _attach_provenance(graph: Graph, text_units: Sequence[TextUnit]) -> None:
    """Dataset units beneath each entity's and relationship's chunks; degrees and relationship ranks."""
    units_of = {tu.id: tu.units for tu in text_units}
    for item in [*graph.entities, *graph.relations]:
        item.units = tuple(dict.fromkeys(u for c in item.chunks for u in units_of.get(c, ())))
    for rel in graph.relations:
        graph.entities[rel.source].degree += 1
        graph.entities[rel.target].degree += 1
    for rel in graph.relations:
        rel.rank = graph.entities[rel.source].degree + graph.entities[rel.target].degree


# ---------------------------------------------------------------------- description summaries
@dataclass
class _Pending:
    """One description list being summarised window by window."""

    target: Entity | Relation
    label: str
    queue: list[str]
    carry: str | None = None


def summarize_descriptions(
    llm: Any, graph: Graph, settings: SummarySettings, tokenizer: Any, log: FailureLog
) -> None:
    """Set every entity's and relationship's ``description``; LLM summaries only over the threshold."""
    pending: list[_Pending] = []
    names = [e.name for e in graph.entities]
    for item in [*graph.entities, *graph.relations]:
        unique = sorted(set(d for d in item.descriptions if d))
        joined = settings.separator.join(unique)
        always = settings.threshold_tokens == 0  # GraphRAG: every list of two or more is summarised
        if len(unique) <= 1 or (
            not always and tokenizer.count(joined) < settings.threshold_tokens  # nano: < keeps
        ):
            item.description = joined
            continue
        label = (
            item.name
            if isinstance(item, Entity)
            else json.dumps([names[item.source], names[item.target]])
        )
        pending.append(_Pending(target=item, label=label, queue=unique))
    graph.summarised = len(pending)
    prompt_tokens = tokenizer.count(settings.prompt)
    while pending:
        windows = [_next_window(p, settings, tokenizer, prompt_tokens) for p in pending]
        requests = [
            ChatRequest.user(
                fill(
                    settings.prompt,
                    entity_name=p.label,
                    max_length=settings.max_words,
                    description_list=json.dumps(w, ensure_ascii=False),
                ),
                max_tokens=settings.max_tokens,
                temperature=0.0,
            )
            for p, w in zip(pending, windows, strict=False)
        ]
        completions = llm.complete(requests, desc="graphrag summaries")
        graph.summary_calls += len(requests)
        still = []
        for p, window, comp in zip(pending, windows, completions, strict=False):
            text = comp.text.strip() if comp.ok else ""
            if not text:
                log.add(
                    "summary_failed" if not comp.ok else "summary_empty",
                    comp.error or comp.text,
                    item=p.label,
                )
                text = settings.separator.join(window)
            if p.queue:
                p.carry = text
                still.append(p)
            else:
                p.target.description = text
        pending = still


def _next_window(
    p: _Pending, settings: SummarySettings, tokenizer: Any, prompt_tokens: int
) -> list[str]:
    """Take descriptions (after the carried partial summary) until the input budget is used up;
    at least two items per window so every call makes progress."""
    window = [p.carry] if p.carry is not None else []
    usable = settings.max_input_tokens - prompt_tokens - sum(tokenizer.count(w) for w in window)
    while p.queue:
        d = p.queue.pop(0)
        usable -= tokenizer.count(d)
        window.append(d)
        if usable < 0 and len(window) > 1:
            break
    return window
