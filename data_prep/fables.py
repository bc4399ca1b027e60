"""FABLES (Kim et al., COLM 2024): claim verification over book-length novels.

Upstream (github.com/mungg/FABLES, ``data/FABLES.json.zip``): one JSON object
``{"canary": str, "FABLES": {book title: {summarizer: {summary, general_comment, claims}}}}``
where ``claims`` maps "0", "1", ... to ``{claim, label, evidence: [str], reason: [str]}`` and
``label`` is ``Yes`` | ``No`` | ``PartialSupport`` | ``Inapplicable``.

The books are copyrighted and not in the release: each one is read from
``<books_dir>/<book title>.txt`` (the title exactly as the JSON key). One episode per book: the
book text in token chunks, every claim about it (from every summarizer) asked after the last one.
``Inapplicable`` claims (the annotator could not tell) are the unanswerable ones and are dropped
and counted, as the CAM paper filters them (App. C); ``PartialSupport`` counts as unfaithful unless
``partial_support: drop``. Annotators' evidence quotes become evidence pointing at the chunk(s)
holding them; a quote not found in the book text is counted, never silently lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id, units_from_texts

FILE = "FABLES.json"
URL = "https://github.com/mungg/FABLES (data/FABLES.json.zip, unzip it)"
BOOKS_HOW = (
    "the book texts are copyrighted and not distributed with FABLES (buy them from the list in the "
    "repo's booklist.md); save each as UTF-8 text named '<book title>.txt'"
)
FAITHFUL, UNFAITHFUL = "faithful", "unfaithful"
LABELS = ("Yes", "No", "PartialSupport", "Inapplicable")
PartialSupport = Literal["unfaithful", "drop"]
MissingBooks = Literal["raise", "skip"]


def gold_label(label: str, partial_support: str) -> str | None:
    """The verification label of an upstream label; None = the claim is dropped."""
    if label == "Yes":
        return FAITHFUL
    if label == "No" or (label == "PartialSupport" and partial_support == "unfaithful"):
        return UNFAITHFUL
    return None


def read_claims(file: Path) -> dict[str, Any]:
    """The ``FABLES`` object of the upstream file: book title -> summarizer -> summary record."""
    data = hub.read_json(file)
    books = hub.need(data, "FABLES", dict, str(file)) if isinstance(data, dict) else None
    if not books:
        raise DatasetError(f"{file}: expected a non-empty object under the key 'FABLES'")
    return books


def _quote_units(quote: str, units: list[Unit], text: str) -> tuple[int, int] | None:
    """[first, last+1) positions of the units holding ``quote`` (None: not in the book text)."""
    start = text.find(quote)
    if start < 0:
        return None
    offsets, at = [], 0
    for u in units:
        offsets.append(at)
        at += len(u.text)
    if at != len(text):  # the chunks do not rejoin to the text: fall back to a single chunk
        hit = next((u.position for u in units if quote in u.text), None)
        return None if hit is None else (hit, hit + 1)
    end = start + len(quote)
    first = max(i for i, o in enumerate(offsets) if o <= start)
    last = max(i for i, o in enumerate(offsets) if o < end)
    return units[first].position, units[last].position + 1


def book_episode(
    title: str,
    summaries: Any,
    text_file: Path,
    chunk_size: int,
    partial_support: str,
    counts: dict[str, int],
) -> Episode:
    """The book's chunks and every verifiable claim about it."""
    where = f"{FILE}: FABLES[{title!r}]"
    if not isinstance(summaries, dict):
        raise DatasetError(f"{where}: expected an object keyed by summarizer")
    text = hub.read_text(text_file, "book text")
    chunks = chunk_text(text, get_tokenizer("cl100k_base"), chunk_size)
    if not chunks:
        raise DatasetError(f"{text_file}: the book text is empty")
    source = content_id("fables", title, prefix="book-")
    units = units_from_texts(chunks, source_id=source, cut=True, title=title)
    questions = []
    for model, record in summaries.items():
        loc = f"{where}[{model!r}]"
        claims = hub.need(record, "claims", dict, loc)
        for key, raw in claims.items():
            cloc = f"{loc}.claims[{key!r}]"
            claim = hub.need(raw, "claim", str, cloc)
            label = hub.need(raw, "label", str, cloc)
            if label not in LABELS:
                raise DatasetError(f"{cloc}: field 'label' is {label!r}, expected one of {LABELS}")
            quotes = hub.need(raw, "evidence", list, cloc)
            hub.need(raw, "reason", list, cloc)
            gold = gold_label(label, partial_support)
            if gold is None:
                counts[
                    "excluded_inapplicable" if label == "Inapplicable" else "excluded_partial"
                ] += 1
                continue
            evidence = []
            for quote in quotes:
                if not isinstance(quote, str) or quote.strip().lower() in ("", "n/a"):
                    continue
                span = _quote_units(quote.strip(), units, text)
                if span is None:
                    counts["evidence_quote_not_in_text"] += 1
                    continue
                evidence.append(
                    Evidence(source_id=source, text=quote, position=span[0], end=span[1])
                )
            questions.append(
                Question(
                    id=content_id(title, model, key, claim, prefix="claim-"),
                    text=claim,
                    answers=(gold,),
                    position=len(units),
                    evidence=tuple(evidence),
                    categories={
                        "label": gold,
                        "upstream_label": label,
                        "summarizer": str(model),
                        "task": "claim_verification",
                    },
                )
            )
    return Episode(
        id=f"fables-{source}", units=units, questions=questions, metadata={"book": title}
    )


def load(
    path: hub.LocalPath = None,
    books_dir: hub.LocalPath = None,
    data_dir: str | None = None,
    chunk_size: hub.ChunkSize = 512,
    partial_support: PartialSupport = "unfaithful",
    missing_books: MissingBooks = "raise",
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load FABLES from ``FABLES.json`` (a file or its folder; null = ``<data_dir>/fables``) and the
    book texts in ``books_dir`` (null = ``books/`` beside the JSON file)."""
    cache = hub.cache_dir(data_dir, "fables")
    local = hub.local_path(path) or (cache if (cache / FILE).is_file() else None)
    if local is None:
        raise DatasetError(
            f"dataset 'fables': {FILE} not found (no Hub copy); download it from {URL} and place "
            f"it in {cache} or pass `dataset.loader.path=<file or folder>`; {BOOKS_HOW} in "
            f"{cache / 'books'}"
        )
    file = local / FILE if local.is_dir() else local
    if not file.is_file():
        raise DatasetError(f"dataset.loader.path: expected {FILE} in {local}")
    books = hub.local_path(books_dir, "dataset.loader.books_dir") or file.parent / "books"
    counts = {
        "excluded_inapplicable": 0,
        "excluded_partial": 0,
        "evidence_quote_not_in_text": 0,
    }
    episodes, used, missing = [], [file], []
    for title, summaries in read_claims(file).items():
        text_file = books / f"{title}.txt"
        if not text_file.is_file():
            if missing_books == "raise":
                raise DatasetError(
                    f"dataset 'fables': book text {text_file} not found; {BOOKS_HOW} in {books} "
                    "(or set dataset.loader.books_dir, or dataset.loader.missing_books=skip)"
                )
            missing.append(title)
            continue
        episodes.append(
            book_episode(title, summaries, text_file, chunk_size, partial_support, counts)
        )
        used.append(text_file)
    if not episodes:
        raise DatasetError(f"dataset 'fables': no book text found in {books}; {BOOKS_HOW}")
    ds = Dataset(
        name="fables",
        episodes=episodes,
        files=hub.file_hashes(used),
        revision="local",
        metadata={
            "chunk_size": chunk_size,
            "partial_support": partial_support,
            "books_missing": missing,
            **counts,
        },
    )
    return hub.finish(ds, integrity)
