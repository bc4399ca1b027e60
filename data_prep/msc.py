"""MSC-Self-Instruct (MemGPT's DMR task): one episode per row, one unit per dialogue round.

Sessions 1-4 (``previous_dialogs``) and session 5 (``dialog``) are inserted in
order, each round (a Speaker 1 turn and the Speaker 2 reply) as one unit with
its speaker labels and session index. The question is ``self_instruct.B`` and
the reference answer ``self_instruct.A``; both are asked after the last round.
Personas and summaries are never read: the answer is often written there verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.types import Episode, Question, content_id, units_from_texts

HUB_ID = "MemGPT/MSC-Self-Instruct"
FILENAME = "msc_self_instruct.jsonl"
SPEAKERS = ("Speaker 1", "Speaker 2")


@dataclass(frozen=True)
class Turn:
    session: int  # 1-based; sessions 1-4 are previous_dialogs, the last is dialog
    speaker: str
    text: str


def row_turns(row: dict[str, Any], where: str) -> list[Turn]:
    """Every turn of a row in order. Previous sessions alternate from Speaker 1 (they carry no id)."""
    previous = hub.need(row, "previous_dialogs", list, where)
    current = hub.need(row, "dialog", list, where)
    turns: list[Turn] = []
    for s, session in enumerate(previous, 1):
        dialog = hub.need(session, "dialog", list, f"{where}: previous_dialogs[{s - 1}]")
        for t, turn in enumerate(dialog):
            text = hub.need(turn, "text", str, f"{where}: previous_dialogs[{s - 1}].dialog[{t}]")
            turns.append(Turn(s, SPEAKERS[t % 2], text))
    last = len(previous) + 1
    for t, turn in enumerate(current):
        text = hub.need(turn, "text", str, f"{where}: dialog[{t}]")
        speaker = turn.get("id") or SPEAKERS[t % 2]
        if not isinstance(speaker, str):
            raise DatasetError(
                f"{where}: dialog[{t}].id should be str, got {type(speaker).__name__}"
            )
        turns.append(Turn(last, speaker, text))
    return turns


def group_rounds(turns: list[Turn], per_round: int = 2) -> list[list[Turn]]:
    """Consecutive turns of the same session grouped ``per_round`` at a time."""
    rounds: list[list[Turn]] = []
    for turn in turns:
        if rounds and rounds[-1][0].session == turn.session and len(rounds[-1]) < per_round:
            rounds[-1].append(turn)
        else:
            rounds.append([turn])
    return rounds


def round_text(round_: list[Turn]) -> str:
    lines = [f"[Session {round_[0].session}]"] + [f"{t.speaker}: {t.text}" for t in round_]
    return "\n".join(lines)


def row_episode(row: dict[str, Any], index: int, where: str, unit: str = "round") -> Episode:
    """One MSC row as an episode (rounds or single turns as units, the question at the end)."""
    if unit not in {"round", "turn"}:
        raise DatasetError(f"dataset.loader.unit must be 'round' or 'turn', got {unit!r}")
    qa = hub.need(row, "self_instruct", dict, where)
    question = hub.need(qa, "B", str, f"{where}: self_instruct")
    answer = hub.need(qa, "A", str, f"{where}: self_instruct")
    meta = row.get("metadata") or {}
    data_id = meta.get("initial_data_id") if isinstance(meta, dict) else None
    ep_id = f"msc-{index:04d}" + (f"-{data_id}" if data_id else "")
    rounds = group_rounds(row_turns(row, where), 2 if unit == "round" else 1)
    units = []
    for r in rounds:
        units += units_from_texts(
            [round_text(r)],
            source_id=f"{ep_id}/session-{r[0].session}",
            start=len(units),
            session=r[0].session,
        )
    q = Question(
        id=content_id(ep_id, question, prefix="msc-q-"),
        text=question,
        answers=(answer,),
        position=len(units),
        categories={"type": "msc"},
    )
    return Episode(
        id=ep_id,
        units=units,
        questions=[q],
        metadata={"initial_data_id": data_id, "sessions": rounds[-1][0].session if rounds else 0},
    )


def episodes_from_rows(
    rows: Iterable[tuple[str, dict[str, Any]]], unit: str = "round"
) -> list[Episode]:
    """Episodes from (location, row) pairs: file lines or ``datasets`` rows."""
    return [row_episode(row, i, where, unit) for i, (where, row) in enumerate(rows)]


def _find_file(path: Path) -> Path:
    if path.is_dir():
        path = path / FILENAME
        if not path.is_file():
            raise DatasetError(f"dataset.loader.path: no {FILENAME} in folder {path.parent}")
    return path


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    unit: Literal["round", "turn"] = "round",
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load MSC-Self-Instruct from ``path`` (the jsonl or its folder), the data-dir cache or the Hub."""
    cache = hub.cache_dir(data_dir, "msc")
    local = hub.local_path(path)
    rev = "local"
    if local is None and (cache / FILENAME).is_file():
        local, rev = cache / FILENAME, hub.cached_revision(cache) or "cache"
    if local is None:
        reason = hub.hub_offline_reason()
        if reason:
            raise hub.unavailable(
                "msc",
                HUB_ID,
                cache,
                reason,
                f"Download {FILENAME} from https://huggingface.co/datasets/{HUB_ID}.",
            )
        local, sha = hub.hub_download(HUB_ID, FILENAME, cache, revision)
        rev = f"{HUB_ID}@{sha}"
    file = _find_file(local)
    rows = ((f"{file}:{n}", row) for n, row in hub.read_jsonl(file))
    episodes = episodes_from_rows(rows, unit)
    if not episodes:
        raise DatasetError(f"{file}: no rows (the file is empty)")
    ds = Dataset(
        name="msc",
        episodes=episodes,
        files=hub.file_hashes([file]),
        revision=rev,
        metadata={"hub_id": HUB_ID, "unit": unit},
    )
    return hub.finish(ds, integrity)
