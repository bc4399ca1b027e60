"""Offline indexing α: named entities, then NER-conditioned OpenIE triples, per passage.

HippoRAG (legacy ``openie_extraction_instructions.py``; v2 ``prompts/templates/ner.py`` and
``triple_extraction.py``) reads each passage twice:

1. NER: the reply is a JSON object ``{"named_entities": [...]}``;
2. OpenIE conditioned on those entities: the passage and the NER JSON in, ``{"triples": [[s, p, o], ...]}``
   out.

Both steps go out as one concurrent batch each (all NER calls, then all OpenIE calls). Every phrase
is normalised as HippoRAG's ``processing_phrases`` does (lower case, every character that is not a
letter, digit or space turned into a space) and, ours, runs of spaces are collapsed. A triple that is
not three strings, or whose subject or object is empty once normalised, is dropped and counted.

Nothing fails silently: a failed call, a reply whose JSON does not parse (or lacks its list), a
malformed triple and a passage left without any triple are each counted (``FailureLog``, raw reply
kept). A passage whose OpenIE reply did not parse has no triples: the share of such passages is the
extraction failure rate ``memory_stats.json`` shows (HippoRAG#64 reports about 10 % with small models).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.extraction.chunks import TextUnit
from memharness.memsys.extraction.parsing import FailureLog, fill, parse_json_object
from memharness.memsys.services.types import ChatRequest

Triple = tuple[str, str, str]

# Per-passage outcome of the OpenIE step (``PassageTriples.status``).
OK, EMPTY, UNPARSED, FAILED = "ok", "no_triples", "unparsed", "call_failed"


def normalise_phrase(phrase: Any) -> str:
    """HippoRAG's phrase normalisation (lower case, non-alphanumerics to spaces), spaces collapsed."""
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", str(phrase).lower()).split())


@dataclass
class PassageTriples:
    """What extraction produced for one passage (text unit)."""

    chunk: str
    entities: list[str] = field(default_factory=list)  # as the NER reply wrote them
    triples: list[Triple] = field(default_factory=list)  # normalised
    ner_status: str = OK
    status: str = OK  # the OpenIE step: ok | no_triples | unparsed | call_failed

    def to_json(self) -> dict[str, Any]:
        return {
            "chunk": self.chunk,
            "entities": list(self.entities),
            "triples": [list(t) for t in self.triples],
            "ner_status": self.ner_status,
            "status": self.status,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PassageTriples:
        return cls(
            chunk=d["chunk"],
            entities=list(d["entities"]),
            triples=[tuple(t) for t in d["triples"]],  # type: ignore[misc]
            ner_status=d["ner_status"],
            status=d["status"],
        )


def request(prompt: str, max_tokens: int) -> ChatRequest:
    """One JSON-mode call at temperature 0 (HippoRAG's extraction and query NER settings)."""
    return ChatRequest.user(prompt, max_tokens=max_tokens, temperature=0.0, json_output=True)


def parse_entities(reply: str) -> list[str] | None:
    """The ``named_entities`` list of a NER reply (non-strings dropped), or None when unreadable."""
    data = parse_json_object(reply)
    if data is None or not isinstance(data.get("named_entities"), list):
        return None
    return list(dict.fromkeys(str(e).strip() for e in data["named_entities"] if str(e).strip()))


def parse_triples(reply: str, chunk: str, log: FailureLog) -> tuple[list[Triple] | None, int]:
    """Normalised triples of an OpenIE reply (None when its JSON is unreadable) and how many were dropped."""
    data = parse_json_object(reply)
    if data is None or not isinstance(data.get("triples"), list):
        return None, 0
    out: list[Triple] = []
    dropped = 0
    for raw in data["triples"]:
        if not isinstance(raw, list | tuple) or len(raw) != 3:
            log.add("malformed_triple", json.dumps(raw, ensure_ascii=False), chunk=chunk)
            dropped += 1
            continue
        s, p, o = (normalise_phrase(x) for x in raw)
        if not s or not o:
            log.add("empty_phrase", json.dumps(raw, ensure_ascii=False), chunk=chunk)
            dropped += 1
            continue
        out.append((s, p, o))
    return out, dropped


def run_openie(
    llm: Any,
    text_units: Sequence[TextUnit],
    ner_prompt: str,
    triple_prompt: str,
    max_tokens: int,
    log: FailureLog,
) -> tuple[list[PassageTriples], dict[str, int]]:
    """NER for every passage, then OpenIE for every passage given its entities (an unreadable NER reply
    leaves the list empty, counted, and OpenIE still runs, as in HippoRAG 2's ``openie``)."""
    out = [PassageTriples(tu.id) for tu in text_units]
    calls = {"ner": len(text_units), "triples": len(text_units)}
    ner = llm.complete(
        [request(fill(ner_prompt, passage=tu.text), max_tokens) for tu in text_units],
        desc="hipporag ner",
    )
    for rec, comp in zip(out, ner, strict=True):
        if not comp.ok:
            rec.ner_status = FAILED
            log.add("ner_call_failed", comp.error or "", chunk=rec.chunk)
            continue
        entities = parse_entities(comp.text)
        if entities is None:
            rec.ner_status = UNPARSED
            log.add("ner_unparsed", comp.text, chunk=rec.chunk)
        else:
            rec.entities = entities
    prompts = [
        fill(
            triple_prompt,
            passage=tu.text,
            named_entity_json=json.dumps({"named_entities": rec.entities}, ensure_ascii=False),
        )
        for tu, rec in zip(text_units, out, strict=True)
    ]
    replies = llm.complete([request(p, max_tokens) for p in prompts], desc="hipporag openie")
    for rec, comp in zip(out, replies, strict=True):
        if not comp.ok:
            rec.status = FAILED
            log.add("triples_call_failed", comp.error or "", chunk=rec.chunk)
            continue
        triples, _ = parse_triples(comp.text, rec.chunk, log)
        if triples is None:
            rec.status = UNPARSED
            log.add("triples_unparsed", comp.text, chunk=rec.chunk)
        elif not triples:
            rec.status = EMPTY
            log.add("no_triples", comp.text, chunk=rec.chunk)
        else:
            rec.triples = triples
    return out, calls


def extraction_summary(records: Sequence[PassageTriples]) -> dict[str, Any]:
    """Triples per passage and the failure rates (every rate present, zeros included)."""
    n = len(records)
    status = {s: sum(r.status == s for r in records) for s in (OK, EMPTY, UNPARSED, FAILED)}
    ner = {s: sum(r.ner_status == s for r in records) for s in (OK, UNPARSED, FAILED)}
    triples = sum(len(r.triples) for r in records)
    return {
        "passages": n,
        "triples": triples,
        "triples_per_passage": triples / n if n else None,
        "entities_per_passage": sum(len(r.entities) for r in records) / n if n else None,
        "openie_status": status,
        "ner_status": ner,
        # passages left without triples because the OpenIE JSON did not parse
        "extraction_failure_rate": status[UNPARSED] / n if n else None,
        # passages without triples for any reason (unparsed, empty list, failed call)
        "empty_triple_rate": (n - status[OK]) / n if n else None,
    }
