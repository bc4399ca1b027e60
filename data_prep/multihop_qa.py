"""Shared episode building for the Wikipedia multi-hop QA sets (HotpotQA, 2WikiMultihopQA, MuSiQue).

Each dataset module parses its own upstream schema into ``Record``s (question, answers,
categories, the candidate passages as (title, sentences), the supporting facts as
(title, sentence index or None)); this module turns them into episodes under one of two
protocols:

- ``per_question`` (the structural-memory paper, App. A): each question's own candidate
  passages are its episode, the question asked after the last one;
- ``shared_corpus`` (HippoRAG / CAM Table 7): the distinct passages of every loaded question
  form one episode and every question is asked over it.

A unit is a passage (``granularity: passage``) or one sentence (``granularity: sentence``);
``source_id`` is the passage title. A supporting fact becomes an ``Evidence`` spanning the
units of its passage (passage granularity) or its sentence (sentence granularity), so evidence
recall counts a fact as found when that exact unit was retrieved.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.settings import Range
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id

Protocol = Literal["per_question", "shared_corpus"]
Granularity = Literal["passage", "sentence"]
SampleSize = Annotated[int, Range(1)] | None  # questions drawn before anything is built; None = all
SampleSeed = Annotated[int, Range(0)]


@dataclass(frozen=True)
class Record:
    """One question in a dataset-neutral shape (what every upstream schema is parsed into)."""

    id: str
    question: str
    answers: tuple[str, ...]
    categories: dict[str, str]
    passages: list[tuple[str, list[str]]]  # (title, sentences); MuSiQue: one "sentence" per passage
    # (title, or index into passages where titles repeat; sentence index, None = the whole passage)
    supporting: list[tuple[str | int, int | None]]
    sentence_split: bool = True  # False: the data has no sentence boundaries (MuSiQue)
    extra: dict[str, Any] = field(default_factory=dict)


def join_sentences(sentences: list[str]) -> str:
    """A passage's text from its sentences: HotpotQA's carry their leading space, 2Wiki's do not."""
    text = ""
    for s in sentences:
        if text and not text[-1].isspace() and not s[:1].isspace():
            text += " "
        text += s
    return text


def unit_text(title: str, body: str, with_title: bool) -> str:
    return f"{title}\n{body.strip()}" if with_title else body.strip()


class _Stream:
    """Units of one episode, passages deduplicated by (title, text), with each passage's span."""

    def __init__(self, episode_id: str, granularity: Granularity, with_title: bool) -> None:
        self.episode_id, self.granularity, self.with_title = episode_id, granularity, with_title
        self.units: list[Unit] = []
        self.spans: dict[tuple[str, str], list[int]] = {}  # passage -> position of each sentence

    def add(self, title: str, sentences: list[str]) -> list[int]:
        key = (title, join_sentences(sentences))
        if key in self.spans:
            return self.spans[key]
        if self.granularity == "passage":
            texts = [unit_text(title, key[1], self.with_title)]
        else:  # empty sentences (they occur upstream) stay as units so indices keep their meaning
            texts = [unit_text(title, s, self.with_title) or title for s in sentences]
        start = len(self.units)
        for i, text in enumerate(texts):
            pos = start + i
            self.units.append(
                Unit(
                    id=content_id(self.episode_id, pos, title, text, prefix="u-"),
                    text=text,
                    source_id=title,
                    position=pos,
                    metadata={"title": title, **({"sentence": i} if len(texts) > 1 else {})},
                )
            )
        positions = (
            [start] * len(sentences)
            if self.granularity == "passage"
            else list(range(start, start + len(texts)))
        )
        self.spans[key] = positions
        return positions


def _evidence(
    rec: Record, spans: list[tuple[list[str], list[int]]], counts: dict[str, int]
) -> tuple[Evidence, ...]:
    """Supporting facts pointed at their units; out-of-range sentences and unknown titles counted."""
    by_title: dict[str, int] = {}
    for i, (title, _) in enumerate(rec.passages):
        by_title.setdefault(title, i)
    out = []
    for ref, sent in rec.supporting:
        index = ref if isinstance(ref, int) else by_title.get(ref)
        if index is None or not 0 <= index < len(spans):
            counts["supporting_title_not_in_context"] += 1
            out.append(Evidence(source_id=str(ref)))  # reported as dangling by the integrity check
            continue
        title = rec.passages[index][0]
        sentences, positions = spans[index]
        first, last = positions[0], positions[-1] + 1
        if sent is None or not 0 <= sent < len(sentences):
            if sent is not None:
                counts["supporting_sentence_out_of_range"] += 1
            out.append(Evidence(source_id=title, text="", position=first, end=last))
        else:
            pos = positions[sent]
            out.append(Evidence(source_id=title, text=sentences[sent], position=pos, end=pos + 1))
    return tuple(out)


def build_dataset(
    name: str,
    records: list[Record],
    protocol: Protocol = "per_question",
    granularity: Granularity = "passage",
    with_title: bool = True,
) -> Dataset:
    """Episodes of the records under ``protocol`` (see the module docstring)."""
    if protocol not in ("per_question", "shared_corpus"):
        raise DatasetError(
            f"dataset.loader.protocol must be per_question or shared_corpus, got {protocol!r}"
        )
    if granularity not in ("passage", "sentence"):
        raise DatasetError(
            f"dataset.loader.granularity must be passage or sentence, got {granularity!r}"
        )
    if granularity == "sentence" and records and not records[0].sentence_split:
        raise DatasetError(
            f"dataset.loader.granularity=sentence: {name} passages have no sentence boundaries "
            "(supporting facts are whole paragraphs); use granularity=passage"
        )
    counts = {"supporting_title_not_in_context": 0, "supporting_sentence_out_of_range": 0}
    episodes: list[Episode] = []
    shared = _Stream(f"{name}-corpus", granularity, with_title)
    pending: list[tuple[Record, list[tuple[list[str], list[int]]]]] = []
    for rec in records:
        stream = (
            shared
            if protocol == "shared_corpus"
            else _Stream(f"{name}-{rec.id}", granularity, with_title)
        )
        spans = [(sentences, stream.add(title, sentences)) for title, sentences in rec.passages]
        if protocol == "shared_corpus":
            pending.append((rec, spans))
            continue
        question = _question(rec, len(stream.units), _evidence(rec, spans, counts))
        episodes.append(
            Episode(id=f"{name}-{rec.id}", units=stream.units, questions=[question], metadata={})
        )
    if protocol == "shared_corpus":
        questions = [_question(r, len(shared.units), _evidence(r, s, counts)) for r, s in pending]
        episodes = [Episode(id=f"{name}-corpus", units=shared.units, questions=questions)]
    return Dataset(
        name=name,
        episodes=episodes,
        metadata={
            "protocol": protocol,
            "granularity": granularity,
            "with_title": with_title,
            "questions_loaded": len(records),
            **counts,
        },
    )


def _question(rec: Record, position: int, evidence: tuple[Evidence, ...]) -> Question:
    return Question(
        id=rec.id,
        text=rec.question,
        answers=rec.answers,
        position=position,
        categories=dict(rec.categories),
        evidence=evidence,
    )


def sample_records(records: list[Any], size: int | None, seed: int, where: str) -> list[Any]:
    """A seeded sample of ``size`` records in file order (all of them when size is null)."""
    if size is None or size >= len(records):
        return records
    if size <= 0:
        raise DatasetError(f"{where}: dataset.loader.sample_size must be positive, got {size}")
    keep = sorted(random.Random(seed).sample(range(len(records)), size))
    return [records[i] for i in keep]


def need_str_list(obj: Any, where: str) -> list[str]:
    """A list of strings; the error names the record and field."""
    if not isinstance(obj, list) or not all(isinstance(s, str) for s in obj):
        raise DatasetError(f"{where}: should be a list of strings")
    return obj


def load_source(
    name: str,
    filename: str,
    url: str,
    path: str | None,
    data_dir: str | None,
    hub_fetch: Callable[[Path], str] | None = None,
) -> tuple[Path, str]:
    """The upstream file from ``path`` (a file, or a folder holding ``filename``), the cache, or
    ``hub_fetch`` (which writes ``filename`` into the cache in the upstream schema and returns the
    ``repo@commit`` it read) when the Hub can be used.

    With none of them the loader fails with one line naming the file, where to get it and where to
    put it."""
    cache = hub.cache_dir(data_dir, name)
    local = hub.local_path(path)
    rev = "local"
    if local is None and (cache / filename).is_file():
        local, rev = cache, hub.cached_revision(cache) or "cache"
    if local is None:
        reason = hub.hub_offline_reason() if hub_fetch else "no Hub copy in this schema"
        if reason:
            raise DatasetError(
                f"dataset {name!r}: {filename} not found and the Hub cannot be used ({reason}); "
                f"download it from {url} and place it in {cache} or pass "
                "`dataset.loader.path=<file or folder>`"
            )
        assert hub_fetch is not None
        rev, local = hub_fetch(cache), cache
    if local.is_dir():
        local = local / filename
        if not local.is_file():
            raise DatasetError(f"dataset.loader.path: expected {filename} in {local.parent}")
    return local, rev


def finish_load(
    name: str,
    records: list[Record],
    file: Path,
    rev: str,
    settings: dict[str, Any],
    integrity: str,
    extra_files: list[Path] | None = None,
    parse_meta: dict[str, Any] | None = None,
) -> Dataset:
    ds = build_dataset(name, records, **settings)
    ds.files, ds.revision = hub.file_hashes([file, *(extra_files or [])]), rev
    ds.metadata.update(parse_meta or {})
    return hub.finish(ds, integrity)
