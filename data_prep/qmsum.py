"""QMSum (Zhong et al., NAACL 2021) in its upstream JSON schema: one file per meeting.

Each meeting (``data/ALL/{train,val,test}/<meeting id>.json`` in Yale-LILY/QMSum): ``topic_list``
[{topic, relevant_text_span}], ``general_query_list`` [{query, answer}], ``specific_query_list``
[{query, answer, relevant_text_span}], ``meeting_transcripts`` [{speaker, content}]. A span is
``[first turn, last turn]`` as two strings, both ends inclusive (the repo's data_process.ipynb reads
``range(st, ed + 1)``). The ``jsonl`` variant has the same objects one per line, without the
meeting id (the line stands in for it).

Each meeting is an episode: its turns (``speaker: content``) packed in order into units of at
most ``chunk_size`` tokens (a turn is never split unless it alone exceeds the size; null = one
unit per turn). Every query is asked after the whole meeting; the reference summary is its answer.
A specific query's spans become evidence over the units holding those turns; a general query
("Summarize the whole meeting") has none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.settings import Range
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id

URL = "https://github.com/Yale-LILY/QMSum (data/ALL: train/, val/, test/ or jsonl/)"
SPLITS = ("train", "val", "test")
Split = Literal["all", "train", "val", "test"]
TurnChunk = Annotated[int, Range(1)] | None


def parse_span(raw: Any, n_turns: int, where: str) -> tuple[int, int]:
    """``["st", "ed"]`` (strings upstream; ints accepted), inclusive, within the transcript."""
    if not (isinstance(raw, list) and len(raw) == 2):
        raise DatasetError(f"{where}: should be [first turn, last turn], got {raw!r}")
    try:
        st, ed = int(raw[0]), int(raw[1])
    except (TypeError, ValueError):
        raise DatasetError(f"{where}: turn indices should be integers, got {raw!r}") from None
    if not 0 <= st <= ed < n_turns:
        raise DatasetError(f"{where}: span {raw!r} outside the transcript's turns 0..{n_turns - 1}")
    return st, ed


def turn_units(
    episode_id: str, turns: list[str], chunk_size: int | None
) -> tuple[list[Unit], list[tuple[int, int]]]:
    """Units packing consecutive turns, and each turn's (first, last) unit position."""
    tok = get_tokenizer("cl100k_base")
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    current: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        if current:
            texts.append("\n".join(current))
            current, size = [], 0

    for turn in turns:
        n = len(tok.encode(turn)) if chunk_size else 0
        if chunk_size and n > chunk_size:  # a turn longer than a unit: its own token windows
            flush()
            pieces = chunk_text(turn, tok, chunk_size) or [turn]
            spans.append((len(texts), len(texts) + len(pieces) - 1))
            texts.extend(pieces)
            continue
        if chunk_size is None or (current and size + n + 1 > chunk_size):
            flush()
        spans.append((len(texts), len(texts)))
        current.append(turn)
        size += n + 1
    flush()
    units = [
        Unit(
            id=content_id(episode_id, i, t, prefix="u-"),
            text=t,
            source_id=episode_id,
            position=i,
        )
        for i, t in enumerate(texts)
    ]
    return units, spans


def meeting_episode(
    meeting_id: str, raw: Any, where: str, split: str, chunk_size: int | None
) -> Episode:
    """One meeting file as an episode; every schema error names the file and field."""
    transcript = hub.need(raw, "meeting_transcripts", list, where)
    turns = []
    for i, turn in enumerate(transcript):
        loc = f"{where}.meeting_transcripts[{i}]"
        turns.append(
            f"{hub.need(turn, 'speaker', str, loc)}: {hub.need(turn, 'content', str, loc)}"
        )
    if not turns:
        raise DatasetError(f"{where}: field 'meeting_transcripts' is empty")
    hub.need(raw, "topic_list", list, where)  # part of the schema; topics are not asked
    episode_id = f"qmsum-{meeting_id}"
    units, spans = turn_units(episode_id, turns, chunk_size)
    questions = []
    for kind in ("general", "specific"):
        for j, item in enumerate(hub.need(raw, f"{kind}_query_list", list, where)):
            loc = f"{where}.{kind}_query_list[{j}]"
            evidence: list[Evidence] = []
            if kind == "specific":
                for k, span in enumerate(hub.need(item, "relevant_text_span", list, loc)):
                    st, ed = parse_span(span, len(turns), f"{loc}.relevant_text_span[{k}]")
                    first, last = spans[st][0], spans[ed][1] + 1
                    evidence.append(Evidence(source_id=episode_id, position=first, end=last))
            questions.append(
                Question(
                    id=f"{meeting_id}-{kind[0]}{j}",
                    text=hub.need(item, "query", str, loc),
                    answers=(hub.need(item, "answer", str, loc),),
                    position=len(units),
                    categories={"query_type": kind, "split": split},
                    evidence=tuple(evidence),
                )
            )
    return Episode(
        id=episode_id,
        units=units,
        questions=questions,
        metadata={"meeting": meeting_id, "split": split, "turns": len(turns)},
    )


def find_files(root: Path, split: str) -> list[tuple[Path, str]]:
    """(file, split) pairs: a file, a folder of meeting files, or data/ALL with split folders."""
    if root.is_file():
        return [(root, split if split != "all" else root.parent.name)]
    wanted = SPLITS if split == "all" else (split,)
    if any((root / s).is_dir() for s in SPLITS):
        found = [(p, s) for s in wanted for p in sorted((root / s).glob("*.json"))]
    elif any((root / "jsonl" / f"{s}.jsonl").is_file() for s in SPLITS):
        found = [(root / "jsonl" / f"{s}.jsonl", s) for s in wanted]
        found = [(p, s) for p, s in found if p.is_file()]
    else:
        found = [(p, split) for p in sorted(root.glob("*.json"))]
    if not found:
        raise DatasetError(
            f"dataset.loader.path={str(root)!r}: no QMSum meeting files for split {split!r} "
            f"(expected <split>/<meeting>.json, jsonl/<split>.jsonl or *.json); get them from {URL}"
        )
    return found


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    split: Split = "all",
    chunk_size: TurnChunk = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load QMSum from ``path`` (QMSum's data/ALL folder, a split folder, one meeting .json or a
    split .jsonl), else ``<data_dir>/qmsum``. There is no Hub copy in the upstream schema."""
    if split not in ("all", *SPLITS):
        raise DatasetError(f"dataset.loader.split must be all, train, val or test, got {split!r}")
    cache = hub.cache_dir(data_dir, "qmsum")
    root = hub.local_path(path) or (cache if cache.is_dir() else None)
    if root is None:
        raise DatasetError(
            f"dataset 'qmsum': no local copy at {cache} and no Hub copy in the upstream schema; "
            f"download it from {URL} and place data/ALL's contents in {cache} or pass "
            "`dataset.loader.path=<QMSum>/data/ALL`"
        )
    episodes, files = [], []
    for file, file_split in find_files(root, split):
        files.append(file)
        if file.suffix == ".jsonl":
            for lineno, raw in hub.read_jsonl(file):
                where = f"{file}:{lineno}"
                episodes.append(
                    meeting_episode(f"{file.stem}{lineno}", raw, where, file_split, chunk_size)
                )
        else:
            episodes.append(
                meeting_episode(file.stem, hub.read_json(file), str(file), file_split, chunk_size)
            )
    ds = Dataset(
        name="qmsum",
        episodes=episodes,
        files=hub.file_hashes(files),
        revision="local" if hub.local_path(path) else (hub.cached_revision(cache) or "cache"),
        metadata={"split": split, "chunk_size": chunk_size, "meetings": len(episodes)},
    )
    return hub.finish(ds, integrity)
