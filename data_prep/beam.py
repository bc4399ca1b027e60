"""BEAM, "Beyond a Million Tokens" (arXiv 2510.27246; HF ``Mohammadta/BEAM`` splits 100K / 500K /
1M and ``Mohammadta/BEAM-10M`` split 10M; code mohammadtavakoli78/BEAM @b2a3ee8).

A row is one conversation: ``conversation_id``, ``chat`` (a list of batches, each a list of
messages {``role``, ``id``, ``content``, and on a batch's user questions ``time_anchor``,
``index``, ``question_type``}) and ``probing_questions`` (a Python-literal string, as upstream
reads it with ``ast.literal_eval``, of ability -> list of question objects, each with a
``question`` and a ``rubric`` list). The 10M rows hold their conversation in ``plans``, each plan
with its own ``chat``, read in order (upstream's ``combine_10m_chats``).

Each conversation is one episode: every message one unit, in order, whose source is its batch and
whose timestamp is the latest ``time_anchor`` seen (as an ISO date when it reads as
``March-15-2024``). Every probing question is asked after the last message, with its ability as
category, its rubric as ``Question.rubric`` (the nugget judge, eval/judge/nuggets.py) and the gold
answer field its ability uses (``answer``, ``ideal_response``, ``ideal_answer``,
``ideal_summary`` or ``expected_compliance``). Rows are parsed one at a time (a jsonl line, a
parquet row), so reading holds one conversation's messages beyond the episodes kept;
``conversations`` keeps only the listed ids.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.types import Episode, Question, Unit, content_id

SCALES = {  # dataset.loader.scale -> (Hub id, split)
    "128k": ("Mohammadta/BEAM", "100K"),
    "500k": ("Mohammadta/BEAM", "500K"),
    "1m": ("Mohammadta/BEAM", "1M"),
    "10m": ("Mohammadta/BEAM-10M", "10M"),
}
ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
GOLD_FIELDS = ("answer", "ideal_response", "ideal_answer", "ideal_summary", "expected_compliance")
ANCHOR_FORMAT = "%B-%d-%Y"  # "March-15-2024"


def iso_anchor(anchor: str) -> str:
    """An ISO date for a ``time_anchor`` such as ``March-15-2024``; other forms are kept as given."""
    try:
        return datetime.strptime(anchor.strip(), ANCHOR_FORMAT).date().isoformat()
    except ValueError:
        return anchor


def batches_of(row: dict[str, Any], where: str) -> list[tuple[str, list[Any]]]:
    """(batch label, messages) in conversation order; a 10M row's plans one after another."""
    if row.get("plans"):
        out = []
        for p, plan in enumerate(hub.need(row, "plans", list, where)):
            chat = hub.need(plan, "chat", list, f"{where}.plans[{p}]")
            out += [(f"plan-{p + 1}/batch-{b + 1}", batch) for b, batch in enumerate(chat)]
        return out
    chat = hub.need(row, "chat", list, where)
    return [(f"batch-{b + 1}", batch) for b, batch in enumerate(chat)]


def probing_questions(row: dict[str, Any], where: str) -> dict[str, list[dict[str, Any]]]:
    """The ``probing_questions`` field parsed (a Python-literal or JSON string, or an object)."""
    raw = hub.need(row, "probing_questions", (str, dict), where)
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raise DatasetError(
                    f"{where}.probing_questions: neither a Python literal nor JSON"
                ) from None
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}.probing_questions: expected ability -> list of questions")
    unknown = sorted(set(raw) - set(ABILITIES))
    if unknown:
        raise DatasetError(f"{where}.probing_questions: unknown abilities {unknown}")
    return raw


def conversation_units(row: dict[str, Any], where: str, ep_id: str, turn_format: str) -> list[Unit]:
    """Every message of the conversation as a unit, dated by the latest time anchor."""
    units: list[Unit] = []
    anchor: str | None = None
    for label, batch in batches_of(row, where):
        if not isinstance(batch, list):
            raise DatasetError(f"{where} {label}: a batch should be a list of messages")
        for m, msg in enumerate(batch):
            loc = f"{where} {label}[{m}]"
            role = hub.need(msg, "role", str, loc)
            content = hub.need(msg, "content", str, loc)
            if msg.get("time_anchor"):
                anchor = iso_anchor(str(msg["time_anchor"]))
            text = turn_format.format(date=anchor or "", role=role, content=content)
            pos = len(units)
            units.append(
                Unit(
                    id=content_id(ep_id, pos, text, prefix="u-"),
                    text=text,
                    source_id=label,
                    position=pos,
                    timestamp=anchor,
                    metadata={"role": role, "chat_id": msg.get("id")},
                )
            )
    return units


def gold_answer(item: dict[str, Any], where: str) -> str:
    for key in GOLD_FIELDS:
        if isinstance(item.get(key), str) and item[key].strip():
            return item[key]
    raise DatasetError(f"{where}: no gold answer (none of {', '.join(GOLD_FIELDS)})")


def conversation_episode(row: dict[str, Any], where: str, scale: str, turn_format: str) -> Episode:
    """One conversation as an episode (see the module docstring)."""
    conv = str(hub.need(row, "conversation_id", (str, int), where))
    probes = probing_questions(row, where)
    ep_id = f"beam-{scale}-{conv}"
    units = conversation_units(row, where, ep_id, turn_format)
    questions = []
    for ability in ABILITIES:
        for i, item in enumerate(probes.get(ability, [])):
            loc = f"{where}.probing_questions.{ability}[{i}]"
            rubric = hub.need(item, "rubric", list, loc)
            if not rubric or not all(isinstance(r, str) and r.strip() for r in rubric):
                raise DatasetError(f"{loc}: the rubric should be a non-empty list of strings")
            questions.append(
                Question(
                    id=f"{ep_id}-{ability}-{i}",
                    text=hub.need(item, "question", str, loc),
                    answers=(gold_answer(item, loc),),
                    position=len(units),
                    categories={"ability": ability},
                    rubric=tuple(rubric),
                )
            )
    meta = {"conversation_id": conv, "messages": len(units)}
    return Episode(id=ep_id, units=units, questions=questions, metadata=meta)


def iter_rows(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, row) one conversation at a time: a jsonl line or a parquet row; the file is never
    read whole (a 10M split is gigabytes)."""
    if file.suffix == ".parquet":
        import pyarrow.parquet as pq

        for b, batch in enumerate(pq.ParquetFile(file).iter_batches(batch_size=1)):
            for row in batch.to_pylist():
                yield f"{file}[{b}]", row
        return
    yield from _jsonl_lines(file)


def _jsonl_lines(file: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """JSON lines read line by line; errors name the file, line and column, never the content."""
    with open(file, "rb") as f:
        lines = iter(f)
        line = next(lines, None)
        lineno = 0
        while line is not None:
            lineno += 1
            following = next(lines, None)
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DatasetError(
                    f"{file}:{lineno}:{err.start + 1}: not valid UTF-8 (byte 0x{line[err.start]:02x}); "
                    "re-save the file as UTF-8"
                ) from None
            if text.strip():
                try:
                    row = json.loads(text)
                except json.JSONDecodeError as err:
                    last = "; the file may be truncated" if following is None else ""
                    raise DatasetError(
                        f"{file}:{lineno}:{err.colno}: not valid JSON ({err.msg}{last})"
                    ) from None
                if not isinstance(row, dict):
                    raise DatasetError(f"{file}:{lineno}: expected a JSON object")
                yield f"{file}:{lineno}", row
            line = following


def load(
    scale: Literal["128k", "500k", "1m", "10m"] = "128k",
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    conversations: list[str | int] | None = None,
    turn_format: str = "[{date}] {role}: {content}",
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load one BEAM scale: ``path`` (the split's jsonl / parquet file or its folder), the
    data-dir cache, or the Hub (``datasets.load_dataset(<id>, split=<split>)``, kept as jsonl)."""
    if scale not in SCALES:
        raise DatasetError(f"dataset.loader.scale={scale!r}: should be one of {', '.join(SCALES)}")
    hub_id, split = SCALES[scale]
    local, rev = hub.split_file(
        "beam", hub_id, split, path, data_dir, revision, (".jsonl", ".parquet")
    )
    wanted = {str(c) for c in conversations} if conversations else None
    episodes, seen = [], []
    for where, row in iter_rows(local):
        conv = str(row.get("conversation_id"))
        seen.append(conv)
        if wanted is None or conv in wanted:
            episodes.append(conversation_episode(row, where, scale, turn_format))
    missing = sorted(wanted - set(seen)) if wanted else []
    if missing:
        raise DatasetError(
            f"dataset.loader.conversations: {missing} not in {local} (ids there: {seen[:10]})"
        )
    ds = Dataset(name="beam", episodes=episodes)
    ds.files, ds.revision = hub.file_hashes([local]), rev
    ds.metadata.update(hub_id=hub_id, split=split, scale=scale, conversations=len(episodes))
    return hub.finish(ds, integrity)
