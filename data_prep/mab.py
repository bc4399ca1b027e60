"""MemoryAgentBench (Hu, Wang, McAuley; ICLR 2026; HF ``ai-hyz/MemoryAgentBench``, code
HUST-AI-HYZ/MemoryAgentBench @455306d): four competencies, each a Hub split of rows.

A row is one long ``context`` (upstream asserts more than 2,000 characters), a list of
``questions``, a list of ``answers`` (each a string or a list of accepted strings) and a
``metadata`` object whose ``source`` names the sub-dataset (``ruler_qa1_197K``,
``eventqa_65536``, ``factconsolidation_sh_6k``, ``icl_banking77_5900shot_balance``, ...). As the
benchmark feeds an agent, the context is cut into chunks of ``chunk_size`` tokens at sentence
boundaries (a sentence is never split; one longer than a chunk is a chunk of its own), the chunks
are inserted in order as units, and every question is asked after the last chunk ("inject once,
query many"). Pairing follows upstream: with more than one question and more than one answer,
question i gets answer i; otherwise the first question gets every answer.

Upstream counts chunk tokens with tiktoken's gpt-4o-mini encoding after NLTK's punkt sentence
split; neither the o200k file nor punkt is available offline here, so sentences come from a
punctuation rule and tokens from ``cl100k_base`` (documented in docs/datasets.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import Tokenizer, get_tokenizer
from memharness.memsys.types import Episode, Question, Unit, content_id

HUB_ID = "ai-hyz/MemoryAgentBench"
COMPETENCIES = {  # dataset.competency -> the Hub split
    "ar": "Accurate_Retrieval",
    "ttl": "Test_Time_Learning",
    "lru": "Long_Range_Understanding",
    "cr": "Conflict_Resolution",
}
MIN_CONTEXT_CHARS = 2000  # upstream's assert in conversation_creator.py
SOURCE_KEY = "mab_source"  # the question category the MAB metrics read (eval/metrics/mab.py)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=\S)")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: a cut after ., ! or ? (and closing quotes) followed by whitespace."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def chunk_sentences(text: str, tokenizer: Tokenizer, size: int) -> list[str]:
    """Greedy sentence-preserving chunks of at most ``size`` tokens (a longer sentence alone)."""
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for sentence in split_sentences(text):
        n = tokenizer.count(sentence)
        if current and used + n > size:
            chunks.append(" ".join(current))
            current, used = [], 0
        current.append(sentence)
        used += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def flatten_answers(raw: Any, where: str) -> tuple[str, ...]:
    """Accepted answers as strings (upstream's max over ground truths flattens nested lists)."""
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return (str(raw),)
    if isinstance(raw, list) and raw:
        return tuple(a for item in raw for a in flatten_answers(item, where))
    raise DatasetError(f"{where}: an answer should be a string or a non-empty list, got {raw!r}")


def _listed(meta: dict[str, Any], key: str) -> list[Any]:
    value = meta.get(key)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def qa_pairs(row: dict[str, Any], where: str) -> list[tuple[str, tuple[str, ...], int]]:
    """(question, accepted answers, index) as upstream pairs them (see the module docstring)."""
    questions = hub.need(row, "questions", list, where)
    answers = hub.need(row, "answers", list, where)
    if not questions or not answers:
        raise DatasetError(f"{where}: 'questions' and 'answers' must both be non-empty lists")
    if len(questions) > 1 and len(answers) > 1:
        if len(questions) != len(answers):
            raise DatasetError(
                f"{where}: {len(questions)} questions but {len(answers)} answers (should match)"
            )
        return [
            (str(q), flatten_answers(a, f"{where}.answers[{i}]"), i)
            for i, (q, a) in enumerate(zip(questions, answers, strict=True))
        ]
    return [(str(questions[0]), flatten_answers(answers, f"{where}.answers"), 0)]


def row_episode(
    row: dict[str, Any], where: str, tokenizer: Tokenizer, chunk_size: int, competency: str
) -> Episode:
    """One row as an episode: the context's chunks as units, its questions after the last one."""
    context = hub.need(row, "context", str, where)
    if len(context) <= MIN_CONTEXT_CHARS:
        raise DatasetError(
            f"{where}: context has {len(context)} characters; MemoryAgentBench contexts have more "
            f"than {MIN_CONTEXT_CHARS}"
        )
    meta = hub.need(row, "metadata", dict, where)
    source = hub.need(meta, "source", str, f"{where}.metadata")
    ep_id = content_id(source, context, prefix="mab-")
    chunks = chunk_sentences(context, tokenizer, chunk_size)
    units = [
        Unit(
            id=content_id(ep_id, i, text, prefix="u-"),
            text=text,
            source_id=f"chunk-{i}",
            position=i,
        )
        for i, text in enumerate(chunks)
    ]
    ids, dates = _listed(meta, "question_ids"), _listed(meta, "question_dates")
    types = _listed(meta, "question_types")
    questions = []
    for text, answers, i in qa_pairs(row, where):
        qid = str(ids[i]) if i < len(ids) and ids[i] else content_id(ep_id, i, text, prefix="q-")
        cats = {"competency": competency, SOURCE_KEY: source}
        if i < len(types) and types[i]:
            cats["type"] = str(types[i])
        questions.append(
            Question(
                id=qid,
                text=text,
                answers=answers,
                position=len(units),
                categories=cats,
                asked_at=str(dates[i]) if i < len(dates) and dates[i] else None,
            )
        )
    return Episode(
        id=ep_id,
        units=units,
        questions=questions,
        metadata={"source": source, "context_chars": len(context), "chunks": len(units)},
    )


def read_rows(file: Path) -> list[dict[str, Any]]:
    """Rows of a split as the Hub serves them: a ``.parquet`` file, a JSON list or JSON lines."""
    if file.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(file).to_pylist()
    if file.suffix == ".jsonl":
        return [row for _, row in hub.read_jsonl(file)]
    rows = hub.read_json(file)
    if not isinstance(rows, list):
        raise DatasetError(f"{file}: expected a JSON list of rows, got {type(rows).__name__}")
    return rows


def build_dataset(
    rows: list[dict[str, Any]], where: str, competency: str, source: str, chunk_size: int
) -> Dataset:
    """Episodes of the rows whose ``metadata.source`` is ``source`` (upstream's filter)."""
    tokenizer = get_tokenizer("cl100k_base")
    episodes, seen = [], set()
    for i, row in enumerate(rows):
        loc = f"{where}[{i}]"
        row_source = hub.need(
            hub.need(row, "metadata", dict, loc), "source", str, f"{loc}.metadata"
        )
        seen.add(row_source)
        if row_source == source:
            episodes.append(row_episode(row, loc, tokenizer, chunk_size, competency))
    if not episodes:
        raise DatasetError(
            f"{where}: no row with metadata.source={source!r} (dataset.loader.source); sources "
            f"in this split: {', '.join(sorted(seen)) or '(none)'}"
        )
    return Dataset(name="mab", episodes=episodes)


def load(
    competency: Literal["ar", "ttl", "lru", "cr"] = "ar",
    source: str = "ruler_qa1_197K",
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    chunk_size: hub.ChunkSize = 4096,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load one sub-dataset: ``path`` (the split's file or its folder), the data-dir cache, or the
    Hub (``datasets.load_dataset(HUB_ID, split=<competency's split>)``, kept as jsonl)."""
    if competency not in COMPETENCIES:
        raise DatasetError(
            f"dataset.competency={competency!r}: should be one of {', '.join(COMPETENCIES)}"
        )
    split = COMPETENCIES[competency]
    local, rev = hub.split_file("mab", HUB_ID, split, path, data_dir, revision)
    ds = build_dataset(read_rows(local), str(local), competency, source, chunk_size)
    ds.files, ds.revision = hub.file_hashes([local]), rev
    ds.metadata.update(
        hub_id=HUB_ID, split=split, competency=competency, source=source, chunk_size=chunk_size
    )
    return hub.finish(ds, integrity)
