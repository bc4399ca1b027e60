"""NovelQA from a local folder (the data is gated): one episode per book, chunked at 512 tokens.

Accepted layouts: ``Books/{PublicDomain,CopyrightProtected}/Bxx.txt`` or
``Raw_Novels/Bxx.txt``, with ``Data/.../Bxx.json`` question files and an
optional ``bookmeta.json``. Questions keep their options and ``Aspect`` /
``Complexity`` labels; with an ``Answer`` field a question is generative
(the options are still kept), otherwise multiple choice on the ``Gold`` letter.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Question, units_from_texts

log = logging.getLogger(__name__)

HUB_ID = "NovelQA/NovelQA"
HOW_TO_GET = (
    "NovelQA is gated: request access at https://huggingface.co/datasets/NovelQA/NovelQA, download "
    "NovelQA.zip and unzip it (Raw_Novels/ + Data/, or Books/ + Data/ + bookmeta.json)."
)
LETTERS = "ABCDEFGH"


def _options(raw: dict[str, Any], where: str) -> tuple[tuple[str, ...], list[str]]:
    """Options in letter order (A, B, then C and D when present) and their letters."""
    opts = hub.need(raw, "Options", dict, where)
    letters = [k for k in LETTERS if k in opts and opts[k] is not None]
    if not letters or sorted(letters) != sorted(k for k, v in opts.items() if v is not None):
        raise DatasetError(
            f"{where}: field 'Options' should map letters A, B, ... to str, got keys {sorted(opts)}"
        )
    return tuple(str(opts[k]) for k in letters), letters


def parse_question(raw: dict[str, Any], where: str) -> Question:
    """One NovelQA item as a Question (position set later)."""
    qid = hub.need(raw, "QID", str, where)
    text = hub.need(raw, "Question", str, where)
    aspect = hub.need(raw, "Aspect", str, where)
    complexity = raw.get("Complexity", raw.get("Complex"))  # the upstream README misspells the key
    if not isinstance(complexity, str):
        raise DatasetError(f"{where}: missing field 'Complexity' (str)")
    options, letters = _options(raw, where)
    gold = raw.get("Gold")
    gold_index = None
    if gold is not None:
        if gold not in letters:
            raise DatasetError(
                f"{where}: field 'Gold'={gold!r} is not one of the option letters {letters}"
            )
        gold_index = letters.index(gold)
    if isinstance(raw.get("Answer"), str) and raw["Answer"].strip():
        answers, mode = (raw["Answer"],), "generative"
    elif gold_index is not None:
        answers, mode = (
            (),
            "multiple_choice",
        )  # scored by option letter; the judge's reference is the gold option
    else:
        raise DatasetError(
            f"{where}: no gold label (neither 'Answer' nor 'Gold'); NovelQA's public release "
            "withholds them, so this file cannot be scored locally"
        )
    return Question(
        id=qid,
        text=text,
        answers=answers,
        position=0,
        options=options,
        gold_option=gold_index,
        categories={"aspect": aspect, "complexity": complexity, "mode": mode},
    )


def read_questions(file: Path) -> list[Question]:
    """Questions of one Bxx.json (a list of items or a dict keyed by QID)."""
    data = hub.read_json(file)
    if isinstance(data, dict):
        items = [{"QID": k, **v} if isinstance(v, dict) else v for k, v in data.items()]
    elif isinstance(data, list):
        items = data
    else:
        raise DatasetError(
            f"{file}: expected a list or an object keyed by QID, got {type(data).__name__}"
        )
    return [parse_question(item, f"{file}[{i}]") for i, item in enumerate(items)]


def find_layout(root: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    """Book text files and question files keyed by book id (``Bxx``)."""
    book_dir = next((root / d for d in ("Books", "Raw_Novels") if (root / d).is_dir()), None)
    if book_dir is None or not (root / "Data").is_dir():
        raise DatasetError(
            f"dataset.loader.path={str(root)!r}: expected Books/ or Raw_Novels/ and Data/ "
            f"inside it. {HOW_TO_GET}"
        )
    books = {p.stem: p for p in sorted(book_dir.rglob("*.txt"))}
    data = {p.stem: p for p in sorted((root / "Data").rglob("*.json"))}
    return books, data


def book_episode(
    book_id: str, text_file: Path, qa_file: Path, meta: dict[str, Any], chunk_size: int
) -> Episode:
    text = hub.read_text(text_file, "book text")
    chunks = chunk_text(text, get_tokenizer("cl100k_base"), chunk_size)
    if not chunks:
        raise DatasetError(f"{text_file}: the book text is empty")
    units = units_from_texts(chunks, source_id=f"novelqa-{book_id}", cut=True)
    questions = [
        replace(q, id=f"{book_id}-{q.id}", position=len(units)) for q in read_questions(qa_file)
    ]
    return Episode(
        id=f"novelqa-{book_id}",
        units=units,
        questions=questions,
        metadata={"book": book_id, **meta},
    )


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    chunk_size: hub.ChunkSize = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load NovelQA from a local folder (``path``, else ``<data_dir>/novelqa``)."""
    cache = hub.cache_dir(data_dir, "novelqa")
    root = hub.local_path(path) or (cache if cache.is_dir() else None)
    if root is None:
        raise DatasetError(
            f"dataset 'novelqa' (Hugging Face id {HUB_ID!r}) is not available: no folder at "
            f"{cache} and no `dataset.loader.path=<folder>` given. {HOW_TO_GET}"
        )
    books, data = find_layout(root)
    meta_file = root / "bookmeta.json"
    bookmeta = hub.read_json(meta_file) if meta_file.is_file() else {}
    if not isinstance(bookmeta, dict):
        raise DatasetError(f"{meta_file}: expected an object keyed by book id")
    paired = sorted(set(books) & set(data))
    unpaired = {
        "questions_without_text": sorted(set(data) - set(books)),
        "text_without_questions": sorted(set(books) - set(data)),
    }
    if any(unpaired.values()):
        log.warning("novelqa: books skipped for lack of a pair: %s", unpaired)
    if not paired:
        raise DatasetError(
            f"{root}: no book has both a text file and a question file. {HOW_TO_GET}"
        )
    episodes = [book_episode(b, books[b], data[b], bookmeta.get(b, {}), chunk_size) for b in paired]
    used = (
        [books[b] for b in paired] + [data[b] for b in paired] + ([meta_file] if bookmeta else [])
    )
    ds = Dataset(
        name="novelqa",
        episodes=episodes,
        files=hub.file_hashes(used),
        revision="local",
        metadata={"chunk_size": chunk_size, "skipped": unpaired},
    )
    return hub.finish(ds, integrity)
