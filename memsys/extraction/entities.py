"""Extraction α: entities and relationships from every text unit, with gleaning.

Per text unit, one conversation (GraphRAG's ``GraphExtractor``):

1. the extraction prompt; the reply holds entity and relationship records;
2. for each gleaning round (``max_gleanings``, default 1): the reply so far stays in the
   conversation as an assistant message and a continue prompt asks for what was missed; its
   records are added to the first reply's;
3. before every further round a loop prompt asks whether more remain (constrained to Y / N);
   only an exact "Y" continues (GraphRAG). With one gleaning the loop prompt is never sent. The
   question and its "Y" stay in the conversation (GraphRAG keeps the question only, which leaves
   two user turns in a row).

Every step of every text unit goes out as one concurrent batch (the first pass for all units, then
each gleaning round, then each loop check), so a build's extraction takes 2·gleanings round trips
(1 with no gleaning) whatever the number of units.

Two reply formats (``extraction_format``): GraphRAG's delimited records
``("entity"<|>NAME<|>TYPE<|>DESCRIPTION)`` / ``("relationship"<|>SOURCE<|>TARGET<|>DESCRIPTION<|>STRENGTH)``
separated by ``##`` and ended by ``<|COMPLETE|>``, or a JSON object
``{"entities": [{name, type, description}], "relationships": [{source, target, description, strength}]}``.
Names and types are upper-cased and cleaned (GraphRAG's ``clean_str``). A strength that is not a
number becomes 1.0 (GraphRAG) and is counted. Every reply that yields nothing usable, every
record that cannot be read and every failed call is counted and its raw text kept
(``FailureLog``); nothing is dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.extraction.chunks import TextUnit
from memharness.memsys.extraction.parsing import FailureLog, clean_str, fill, parse_json_object
from memharness.memsys.services.types import ChatRequest

# Every failure kind extraction counts (a build record lists each, zeros included).
EXTRACTION_FAILURES = (
    "call_failed",
    "loop_unparsed",
    "unparsed_reply",
    "malformed_record",
    "weight_defaulted",
)


@dataclass(frozen=True)
class EntityRecord:
    name: str
    type: str
    description: str
    chunk: str  # text unit id


@dataclass(frozen=True)
class RelationRecord:
    source: str
    target: str
    description: str
    weight: float
    chunk: str


@dataclass
class ExtractSettings:
    """The extraction step's prompts and knobs (documented in conf/memory/graphrag.yaml)."""

    prompt: str
    continue_prompt: str
    loop_prompt: str
    entity_types: Sequence[str] = ("organization", "person", "geo", "event")
    format: str = "records"  # records | json
    max_gleanings: int = 1
    max_tokens: int = 1500
    tuple_delimiter: str = "<|>"
    record_delimiter: str = "##"
    completion_delimiter: str = "<|COMPLETE|>"
    entity_types_case: str = (
        "upper"  # upper (ours) | as_given (GraphRAG, nano: the list as configured)
    )
    line_records: bool = (
        True  # also split records at line breaks (ours); False = only the delimiter
    )


@dataclass
class Extraction:
    """Everything a build's extraction produced, with its call counts."""

    entities: list[EntityRecord] = field(default_factory=list)
    relations: list[RelationRecord] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=lambda: {"extract": 0, "glean": 0, "loop": 0})
    replies: int = 0
    # replies that stopped at max_tokens (kept and parsed; their last record is often cut off)
    replies_at_cap: dict[str, int] = field(default_factory=lambda: {"extract": 0, "glean": 0})


def extraction_prompt(settings: ExtractSettings, text: str) -> str:
    upper = settings.entity_types_case == "upper"
    types = ",".join(t.upper() if upper else t for t in settings.entity_types)
    return fill(
        settings.prompt,
        entity_types=types,
        input_text=text,
        tuple_delimiter=settings.tuple_delimiter,
        record_delimiter=settings.record_delimiter,
        completion_delimiter=settings.completion_delimiter,
    )


def _request(
    messages: list[tuple[str, str]], settings: ExtractSettings, **params: Any
) -> ChatRequest:
    params.setdefault("max_tokens", settings.max_tokens)
    params.setdefault("json_output", settings.format == "json")
    if settings.format == "records" and "choices" not in params:
        params.setdefault("stop", (settings.completion_delimiter,))
    return ChatRequest(messages=tuple(messages), temperature=0.0, **params)


def run_extraction(
    llm: Any, text_units: Sequence[TextUnit], settings: ExtractSettings, log: FailureLog
) -> Extraction:
    """Extract from every text unit: the first pass, gleanings and loop checks, each as one batch."""
    out = Extraction()
    conversations = {tu.id: [("user", extraction_prompt(settings, tu.text))] for tu in text_units}
    active = _answer_round(
        llm, conversations, list(conversations), None, settings, out, log, "extract"
    )
    for round_ in range(settings.max_gleanings):
        active = _answer_round(
            llm, conversations, active, fill(settings.continue_prompt), settings, out, log, "glean"
        )
        if round_ >= settings.max_gleanings - 1 or not active:
            break
        active = _loop_check(llm, conversations, active, settings, out, log)
    return out


def _answer_round(
    llm: Any,
    conversations: dict[str, list[tuple[str, str]]],
    ids: list[str],
    follow_up: str | None,
    settings: ExtractSettings,
    out: Extraction,
    log: FailureLog,
    kind: str,
) -> list[str]:
    """Send one extraction or gleaning turn for ``ids``; parse the replies; return the ids still going."""
    if not ids:
        return []
    if follow_up is not None:
        for i in ids:
            conversations[i].append(("user", follow_up))
    completions = llm.complete(
        [_request(conversations[i], settings) for i in ids], desc=f"graphrag {kind}"
    )
    out.calls[kind] += len(ids)
    going = []
    for i, comp in zip(ids, completions, strict=False):
        if not comp.ok:
            log.add("call_failed", comp.error or "", step=kind, chunk=i)
            continue
        out.replies += 1
        out.replies_at_cap[kind] += comp.reached_cap(settings.max_tokens)
        conversations[i].append(("assistant", comp.text))
        entities, relations = parse_reply(comp.text, i, settings, log)
        out.entities.extend(entities)
        out.relations.extend(relations)
        going.append(i)
    return going


def _loop_check(
    llm: Any,
    conversations: dict[str, list[tuple[str, str]]],
    ids: list[str],
    settings: ExtractSettings,
    out: Extraction,
    log: FailureLog,
) -> list[str]:
    """Ask whether more entities remain; only an exact "Y" goes on (question and answer stay in history)."""
    question = fill(settings.loop_prompt)
    requests = [
        _request(
            [*conversations[i], ("user", question)],
            settings,
            max_tokens=1,
            choices=("Y", "N"),
            json_output=False,
        )
        for i in ids
    ]
    completions = llm.complete(requests, desc="graphrag loop")
    out.calls["loop"] += len(ids)
    going = []
    for i, comp in zip(ids, completions, strict=False):
        if not comp.ok:
            log.add("call_failed", comp.error or "", step="loop", chunk=i)
        elif comp.text.strip() == "Y":
            conversations[i].extend([("user", question), ("assistant", comp.text)])
            going.append(i)
        elif comp.text.strip() != "N":
            log.add("loop_unparsed", comp.text, chunk=i)
    return going


def parse_reply(
    reply: str, chunk: str, settings: ExtractSettings, log: FailureLog
) -> tuple[list[EntityRecord], list[RelationRecord]]:
    """Entities and relationships of one reply in the configured format; failures go to ``log``."""
    if settings.format == "json":
        return parse_json_reply(reply, chunk, log)
    return parse_records(
        reply,
        chunk,
        log,
        settings.tuple_delimiter,
        settings.record_delimiter,
        settings.completion_delimiter,
        settings.line_records,
    )


def parse_records(
    reply: str,
    chunk: str,
    log: FailureLog,
    tuple_delimiter: str = "<|>",
    record_delimiter: str = "##",
    completion_delimiter: str = "<|COMPLETE|>",
    line_records: bool = True,
) -> tuple[list[EntityRecord], list[RelationRecord]]:
    """Delimited records. Pieces are split on the record delimiter and, with ``line_records``, on
    line breaks too (a model that writes one record per line without ``##`` still parses; GraphRAG
    and nano split on the delimiter only, where such a reply reads as its first record with the rest
    run into its last field). A reply with text but no readable record counts once as
    ``unparsed_reply``; otherwise each unreadable piece counts as ``malformed_record``."""
    text = reply.replace(completion_delimiter, "\n" if line_records else "")
    parts = text.split(record_delimiter)
    pieces = [p.strip() for part in parts for p in (part.splitlines() if line_records else [part])]
    entities: list[EntityRecord] = []
    relations: list[RelationRecord] = []
    malformed: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        record = re.sub(r"^\(|\)$", "", piece.strip()).strip()
        fields = record.split(tuple_delimiter)
        kind = clean_str(fields[0]).lower()
        if kind == "entity" and len(fields) >= 4 and clean_str(fields[1]):
            entities.append(
                EntityRecord(
                    name=clean_str(fields[1]).upper(),
                    type=clean_str(fields[2]).upper(),
                    description=clean_str(fields[3]),
                    chunk=chunk,
                )
            )
        elif (
            kind == "relationship"
            and len(fields) >= 5
            and clean_str(fields[1])
            and clean_str(fields[2])
        ):
            weight = _weight(fields[-1], chunk, log)
            relations.append(
                RelationRecord(
                    source=clean_str(fields[1]).upper(),
                    target=clean_str(fields[2]).upper(),
                    description=clean_str(fields[3]),
                    weight=weight,
                    chunk=chunk,
                )
            )
        else:
            malformed.append(piece)
    if malformed and not entities and not relations:
        log.add("unparsed_reply", reply, chunk=chunk)
    else:
        for piece in malformed:
            log.add("malformed_record", piece, chunk=chunk)
    return entities, relations


def _weight(raw: Any, chunk: str, log: FailureLog) -> float:
    """The relationship strength as a float; anything else is 1.0 (GraphRAG) and counted."""
    try:
        return float(clean_str(raw))
    except (TypeError, ValueError):
        log.add("weight_defaulted", str(raw), chunk=chunk)
        return 1.0


def parse_json_reply(
    reply: str, chunk: str, log: FailureLog
) -> tuple[list[EntityRecord], list[RelationRecord]]:
    """The JSON format: ``{"entities": [...], "relationships": [...]}``."""
    data = parse_json_object(reply)
    if (
        data is None
        or not isinstance(data.get("entities", []), list)
        or not isinstance(data.get("relationships", []), list)
    ):
        log.add("unparsed_reply", reply, chunk=chunk)
        return [], []
    entities, relations = [], []
    for e in data.get("entities", []):
        if isinstance(e, dict) and clean_str(e.get("name")):
            entities.append(
                EntityRecord(
                    name=clean_str(e["name"]).upper(),
                    type=clean_str(e.get("type")).upper(),
                    description=clean_str(e.get("description")),
                    chunk=chunk,
                )
            )
        else:
            log.add("malformed_record", str(e), chunk=chunk)
    for r in data.get("relationships", []):
        if isinstance(r, dict) and clean_str(r.get("source")) and clean_str(r.get("target")):
            relations.append(
                RelationRecord(
                    source=clean_str(r["source"]).upper(),
                    target=clean_str(r["target"]).upper(),
                    description=clean_str(r.get("description")),
                    weight=_weight(r.get("strength", r.get("weight")), chunk, log),
                    chunk=chunk,
                )
            )
        else:
            log.add("malformed_record", str(r), chunk=chunk)
    return entities, relations
