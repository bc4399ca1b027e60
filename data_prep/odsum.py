"""ODSum (Zhou et al., 2023; yale-nlp/ODSum): open-domain multi-document query-based summarisation.

Two loaders over the repo's ``data/<Story|Meeting>/raw`` files; in both the whole document pool is
one episode (CAM App. E: one memory across every document) and every query is asked after it.

- ``load_story`` (ODSum-Story, from SQuALITY): ``raw/documents/{train,dev,test}.jsonl``, one story
  per line: ``metadata`` {passage_id, uid, license}, ``title``, ``questions`` (SQuALITY's own,
  not used), ``divided_document`` (the story cut into parts: 1,190 parts of 127 stories);
  ``raw/queries.jsonl``, one line per story: a list of five {``question_text``,
  ``question_number``, ``responses`` [{worker_id, uid, response_text}] (four reference
  summaries), ``title``}: 635 queries rewritten to name their story.
- ``load_meeting`` (ODSum-Meeting, from QMSum): ``raw/Documents/<meeting id>.txt`` (232
  flattened transcripts) and ``raw/queries.json`` {"<n>": {``query``, ``answer``,
  ``meetings_list``}}: 436 queries, each over 1-6 meetings.

Each document (story part, meeting) is cut into ``chunk_size``-token units whose ``source_id`` is
the story title or meeting id, so a query's evidence is every unit of the documents it names (its
story's title; its ``meetings_list``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Evidence, Question, Unit, units_from_texts

URL = "https://github.com/yale-nlp/ODSum"
STORY_SPLITS = ("train", "dev", "test")


def _raw_folder(name: str, path: str | None, data_dir: str | None, marker: str) -> Path:
    """The ``raw`` folder holding ``marker``: ``path`` may be data/<Story|Meeting> or its raw/."""
    cache = hub.cache_dir(data_dir, name)
    root = hub.local_path(path) or (cache if cache.is_dir() else None)
    sub = "Story" if name == "odsum_story" else "Meeting"
    if root is None:
        raise DatasetError(
            f"dataset {name!r}: no local copy at {cache} and no Hub copy in the upstream schema; "
            f"clone {URL} and place data/{sub}/raw in {cache} or pass "
            f"`dataset.loader.path=<ODSum>/data/{sub}`"
        )
    for folder in (root, root / "raw"):
        if (folder / marker).exists():
            return folder
    raise DatasetError(
        f"dataset.loader.path={str(root)!r}: expected {marker} in it or in its raw/ folder "
        f"(ODSum's data/{sub} layout, {URL})"
    )


class _Pool:
    """Units of the one episode, each document cut into token windows, positions continuing."""

    def __init__(self, chunk_size: int) -> None:
        self.units: list[Unit] = []
        self.tok, self.chunk_size = get_tokenizer("cl100k_base"), chunk_size

    def add(self, source_id: str, text: str, **metadata: Any) -> None:
        chunks = chunk_text(text, self.tok, self.chunk_size)
        self.units += units_from_texts(
            chunks, source_id=source_id, start=len(self.units), cut=True, **metadata
        )


def _finish(
    name: str, pool: _Pool, questions: list[Question], files: list[Path], meta: dict, integrity: str
) -> Dataset:
    questions = [
        Question(
            q.id, q.text, q.answers, len(pool.units), categories=q.categories, evidence=q.evidence
        )
        for q in questions
    ]
    episode = Episode(id=f"{name}-pool", units=pool.units, questions=questions, metadata={})
    ds = Dataset(
        name=name,
        episodes=[episode],
        files=hub.file_hashes(files),
        revision="local",
        metadata={**meta, "units": len(pool.units), "questions_loaded": len(questions)},
    )
    return hub.finish(ds, integrity)


def story_query(raw: Any, where: str, line: int, split_of: dict[str, str]) -> Question:
    """One ODSum-Story query; its answers are the reference summaries (``responses``)."""
    number = hub.need(raw, "question_number", int, where)
    title = hub.need(raw, "title", str, where)
    responses = hub.need(raw, "responses", list, where)
    answers = tuple(
        hub.need(r, "response_text", str, f"{where}.responses[{k}]")
        for k, r in enumerate(responses)
    )
    if not answers:
        raise DatasetError(f"{where}: field 'responses' is empty (no reference summary)")
    return Question(
        id=f"s{line}-q{number}",
        text=hub.need(raw, "question_text", str, where),
        answers=answers,
        position=0,
        categories={"question_number": str(number), "split": split_of.get(title, "unknown")},
        evidence=(Evidence(source_id=title),),
    )


def load_story(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    chunk_size: hub.ChunkSize = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load ODSum-Story from ODSum's ``data/Story`` (or its ``raw``) folder, else the cache."""
    raw = _raw_folder("odsum_story", path, data_dir, "queries.jsonl")
    pool, files, split_of = _Pool(chunk_size), [], {}
    for split in STORY_SPLITS:
        file = raw / "documents" / f"{split}.jsonl"
        if not file.is_file():
            raise DatasetError(f"{raw}: missing documents/{split}.jsonl (ODSum's data/Story/raw)")
        files.append(file)
        rows = list(hub.read_jsonl(file))
        if not rows:  # its stories' queries would be asked of a memory without them
            raise DatasetError(f"{file}: no stories (the file is empty; ODSum's has one per line)")
        for lineno, row in rows:
            where = f"{file}:{lineno}"
            title = hub.need(row, "title", str, where)
            meta = hub.need(row, "metadata", dict, where)
            passage = hub.need(meta, "passage_id", str, f"{where}.metadata")
            parts = hub.need(row, "divided_document", list, where)
            if not parts:
                raise DatasetError(f"{where}: field 'divided_document' is empty")
            if title in split_of:
                raise DatasetError(f"{where}: title {title!r} already used by another story")
            split_of[title] = split
            for i, part in enumerate(parts):
                if not isinstance(part, str):
                    raise DatasetError(f"{where}.divided_document[{i}]: should be a string")
                pool.add(title, part, part=i, passage_id=passage, split=split)
    queries = raw / "queries.jsonl"
    files.append(queries)
    questions = []
    for line, items in _query_lines(queries):
        for j, item in enumerate(items):
            questions.append(story_query(item, f"{queries}:{line}[{j}]", line, split_of))
    meta = {"chunk_size": chunk_size, "stories": len(split_of)}
    return _finish("odsum_story", pool, questions, files, meta, integrity)


def _query_lines(file: Path) -> list[tuple[int, list[Any]]]:
    """ODSum-Story's queries.jsonl: each line a JSON list of one story's queries."""
    out = []
    for lineno, line in enumerate(hub.read_text(file).splitlines(), 1):
        if not line.strip():
            continue
        try:
            items = json.loads(line)
        except json.JSONDecodeError as err:
            raise DatasetError(f"{file}:{lineno}:{err.colno}: not valid JSON ({err.msg})") from None
        if not isinstance(items, list):
            raise DatasetError(
                f"{file}:{lineno}: expected a JSON list of queries, got {type(items).__name__}"
            )
        out.append((lineno, items))
    return out


def load_meeting(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    chunk_size: hub.ChunkSize = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load ODSum-Meeting from ODSum's ``data/Meeting`` (or its ``raw``) folder, else the cache."""
    raw = _raw_folder("odsum_meeting", path, data_dir, "queries.json")
    docs = sorted((raw / "Documents").glob("*.txt"))
    if not docs:
        raise DatasetError(f"{raw}: no Documents/<meeting id>.txt (ODSum's data/Meeting/raw)")
    pool = _Pool(chunk_size)
    for doc in docs:
        text = hub.read_text(doc, "meeting transcript")
        if not text.strip():
            raise DatasetError(f"{doc}: the meeting transcript is empty")
        pool.add(doc.stem, text)
    file = raw / "queries.json"
    data = hub.read_json(file)
    if not isinstance(data, dict):
        raise DatasetError(
            f"{file}: expected an object keyed by query number, got {type(data).__name__}"
        )
    questions = []
    for key, item in data.items():
        where = f"{file}[{key!r}]"
        meetings = hub.need(item, "meetings_list", list, where)
        if not meetings or not all(isinstance(m, str) for m in meetings):
            raise DatasetError(f"{where}: field 'meetings_list' should be a non-empty list of ids")
        questions.append(
            Question(
                id=f"q{key}",
                text=hub.need(item, "query", str, where),
                answers=(hub.need(item, "answer", str, where),),
                position=0,
                categories={"meetings": str(len(meetings))},
                evidence=tuple(Evidence(source_id=m) for m in meetings),
            )
        )
    meta = {"chunk_size": chunk_size, "meetings": len(docs)}
    return _finish("odsum_meeting", pool, questions, [*docs, file], meta, integrity)
