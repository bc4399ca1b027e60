"""Extraction α of the structural memories (Zeng et al., 2024, Sec. 3.1): chunks, knowledge
triples, atomic facts with their key elements, summaries, and the mixed union of all four.

Each *source chunk* (a dataset unit, or a piece of one when ``extraction.chunk_tokens`` is set) gives:

- ``chunks``: the chunk itself (no LLM call);
- ``triples``: one LLM call; a line ``n. head; relation; tail`` per triple (the paper's
  ⟨head; relation; tail⟩ with ";" as separator; the released prompt writes "subject, relation,
  object" with commas, which is ambiguous when an entity holds a comma);
- ``atomic_facts``: one LLM call; a line ``n. fact | key element | key element ...`` per fact
  (the released prompt's format);
- ``summaries``: one LLM call; the whole reply is one summary of the chunk (the paper builds
  summaries from the raw documents; the released repository only has an unused GraphRAG-style
  template that merges atomic facts with their descriptions, and no construction code).

Parsing is strict about the line format and honest about what it drops: a non-blank line that
does not match is a *malformed line*, counted per kind; an atomic fact without key elements is
kept and counted (``facts_without_keys``); a failed call is counted (``failed``) and gives nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.services.tokens import chunk_text
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Unit

KINDS = ("chunks", "triples", "atomic_facts", "summaries")
STRUCTURES = (*KINDS, "mixed")
LLM_KINDS = ("triples", "atomic_facts", "summaries")
# Output caps of one extraction call per kind, as conf/memory/structmem.yaml ships them.
DEFAULT_CAPS = {"triples": 512, "atomic_facts": 1024, "summaries": 256}
_NUMBERED = re.compile(r"^\s*\(?\d+\s*[.):]\s*(.*\S)\s*$")


@dataclass(frozen=True)
class SourceChunk:
    """A piece of source text that extraction reads, with its provenance."""

    id: str  # the dataset unit's id, or "<unit id>#<piece>" when a unit was split
    text: str
    unit_id: str  # the dataset unit it belongs to
    doc_id: str  # the dataset unit's source document / session


@dataclass(frozen=True)
class MemoryUnit:
    """One extracted memory unit and where it came from."""

    kind: str
    text: str
    chunk: SourceChunk
    index: int  # position among the units the chunk gave for this kind
    keys: tuple[str, ...] = ()  # atomic facts: key elements; triples: (head, relation, tail)


@dataclass
class ExtractionCounts:
    """Counters per kind: LLM requests, failed calls, malformed lines, units kept."""

    chunks: int = 0
    requests: dict[str, int] = field(default_factory=lambda: {k: 0 for k in LLM_KINDS})
    failed: dict[str, int] = field(default_factory=lambda: {k: 0 for k in LLM_KINDS})
    malformed_lines: dict[str, int] = field(default_factory=lambda: {k: 0 for k in LLM_KINDS})
    units: dict[str, int] = field(default_factory=lambda: {k: 0 for k in KINDS})
    facts_without_keys: int = 0
    # replies that reached their output cap (cut there: a summary ends mid-sentence, a list loses its tail)
    at_cap: dict[str, int] = field(default_factory=lambda: {k: 0 for k in LLM_KINDS})
    duplicates_dropped: int = (
        0  # units not stored because their text was (memory.extraction.deduplicate)
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "chunks": self.chunks,
            "requests": dict(self.requests),
            "failed": dict(self.failed),
            "malformed_lines": dict(self.malformed_lines),
            "units": dict(self.units),
            "facts_without_keys": self.facts_without_keys,
            "replies_at_cap": dict(self.at_cap),
            "duplicates_dropped": self.duplicates_dropped,
            "requests_per_chunk": (sum(self.requests.values()) / self.chunks)
            if self.chunks
            else 0.0,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExtractionCounts:
        out = cls()
        out.chunks = int(data.get("chunks", 0))
        for name in ("requests", "failed", "malformed_lines", "units"):
            getattr(out, name).update(data.get(name, {}))
        out.facts_without_keys = int(data.get("facts_without_keys", 0))
        out.at_cap.update(data.get("replies_at_cap", {}))
        out.duplicates_dropped = int(data.get("duplicates_dropped", 0))
        return out


def kinds_of(structure: str) -> tuple[str, ...]:
    """The unit kinds a structure holds (mixed: all four)."""
    if structure not in STRUCTURES:
        raise ValueError(
            f"memory.structure must be one of {' | '.join(STRUCTURES)}, got {structure!r}"
        )
    return KINDS if structure == "mixed" else (structure,)


def source_chunks(
    units: Sequence[Unit], tokenizer: Any, chunk_tokens: int | None
) -> list[SourceChunk]:
    """The dataset units as source chunks; with ``chunk_tokens``, longer units are cut into pieces
    of at most that many tokens (the paper's chunk length L), each keeping its unit's provenance."""
    out = []
    for u in units:
        pieces = (
            [u.text]
            if chunk_tokens is None or tokenizer.count(u.text) <= chunk_tokens
            else chunk_text(u.text, tokenizer, int(chunk_tokens))
        )
        for i, piece in enumerate(pieces):
            cid = u.id if len(pieces) == 1 else f"{u.id}#{i}"
            out.append(SourceChunk(id=cid, text=piece, unit_id=u.id, doc_id=u.source_id))
    return out


def extraction_requests(
    chunks: Sequence[SourceChunk],
    kinds: Sequence[str],
    prompts: dict[str, str],
    max_tokens: dict[str, int],
    sampling: dict[str, Any] | None = None,
) -> list[tuple[SourceChunk, str, ChatRequest]]:
    """One request per chunk and LLM kind (chunks need none), chunk-major order; ``sampling`` holds
    the requests' temperature and seed."""
    out = []
    for chunk in chunks:
        for kind in kinds:
            if kind in LLM_KINDS:
                prompt = prompts[kind].format(text=chunk.text)
                request = ChatRequest.user(
                    prompt, max_tokens=int(max_tokens[kind]), **(sampling or {})
                )
                out.append((chunk, kind, request))
    return out


def _numbered_lines(reply: str) -> tuple[list[str], int]:
    """Bodies of the ``n. ...`` lines and the count of other non-blank lines (malformed)."""
    bodies, malformed = [], 0
    for line in reply.splitlines():
        if not line.strip():
            continue
        match = _NUMBERED.match(line)
        if match:
            bodies.append(match.group(1))
        else:
            malformed += 1
    return bodies, malformed


_PAIRS = {"⟨": "⟩", "<": ">", "(": ")", "[": "]"}


def _unwrap(body: str) -> str:
    """Drop one pair of brackets around the whole triple, if present."""
    if len(body) >= 2 and _PAIRS.get(body[0]) == body[-1]:
        return body[1:-1].strip()
    return body


def parse_triples(reply: str) -> tuple[list[tuple[str, str, str]], int]:
    """``n. head; relation; tail`` lines (optional ⟨⟩, <> or () around the triple) -> triples, malformed count.

    A numbered line without exactly three non-empty ";"-separated parts is malformed.
    """
    bodies, malformed = _numbered_lines(reply)
    triples = []
    for body in bodies:
        body = _unwrap(body.strip())
        parts = [p.strip() for p in body.split(";")]
        if len(parts) == 3 and all(parts):
            triples.append((parts[0], parts[1], parts[2]))
        else:
            malformed += 1
    return triples, malformed


def parse_atomic_facts(reply: str) -> tuple[list[tuple[str, tuple[str, ...]]], int, int]:
    """``n. fact | key | key ...`` lines -> (fact, keys) pairs, malformed count, facts without keys.

    A numbered line whose fact part is empty is malformed; a fact without keys is kept.
    """
    bodies, malformed = _numbered_lines(reply)
    facts, keyless = [], 0
    for body in bodies:
        fact, *keys = [p.strip() for p in body.split("|")]
        keys = tuple(k for k in keys if k)
        if not fact:
            malformed += 1
            continue
        keyless += not keys
        facts.append((fact, keys))
    return facts, malformed, keyless


def parse_summary(reply: str) -> tuple[list[str], int]:
    """The whole reply is one summary; an empty reply is one malformed line."""
    text = reply.strip()
    if text.lower().startswith("summary:"):
        text = text[len("summary:") :].strip()
    return ([text], 0) if text else ([], 1)


def triple_text(triple: tuple[str, str, str]) -> str:
    """How a triple is stored, embedded and shown: ``head; relation; tail``."""
    return "; ".join(triple)


def units_from_reply(
    chunk: SourceChunk, kind: str, reply: str, counts: ExtractionCounts
) -> list[MemoryUnit]:
    """Parse one extraction reply into memory units, updating ``counts``."""
    if kind == "triples":
        triples, bad = parse_triples(reply)
        units = [MemoryUnit(kind, triple_text(t), chunk, i, keys=t) for i, t in enumerate(triples)]
    elif kind == "atomic_facts":
        facts, bad, keyless = parse_atomic_facts(reply)
        counts.facts_without_keys += keyless
        units = [MemoryUnit(kind, f, chunk, i, keys=k) for i, (f, k) in enumerate(facts)]
    elif kind == "summaries":
        summaries, bad = parse_summary(reply)
        units = [MemoryUnit(kind, s, chunk, i) for i, s in enumerate(summaries)]
    else:
        raise ValueError(f"no parser for kind {kind!r}")
    counts.malformed_lines[kind] += bad
    return units


def extract(
    llm: Any,
    chunks: Sequence[SourceChunk],
    kinds: Sequence[str],
    prompts: dict[str, str],
    max_tokens: dict[str, int],
    counts: ExtractionCounts,
    sampling: dict[str, Any] | None = None,
) -> list[MemoryUnit]:
    """Every kind for every chunk: all LLM requests as one concurrent batch, then parsing.

    Units come out chunk by chunk, kinds in ``kinds`` order within a chunk.
    """
    requests = extraction_requests(chunks, kinds, prompts, max_tokens, sampling)
    completions = llm.complete([r for _, _, r in requests], desc="extract") if requests else []
    parsed: dict[tuple[str, str], list[MemoryUnit]] = {}
    for (chunk, kind, _), completion in zip(requests, completions, strict=False):
        counts.requests[kind] += 1
        if not completion.ok:
            counts.failed[kind] += 1
            continue
        if completion.reached_cap(int(max_tokens[kind])):
            counts.at_cap[kind] += 1
        parsed[(chunk.id, kind)] = units_from_reply(chunk, kind, completion.text, counts)
    out: list[MemoryUnit] = []
    for chunk in chunks:
        counts.chunks += 1
        for kind in kinds:
            units = (
                [MemoryUnit("chunks", chunk.text, chunk, 0)]
                if kind == "chunks"
                else parsed.get((chunk.id, kind), [])
            )
            counts.units[kind] += len(units)
            out.extend(units)
    return out
