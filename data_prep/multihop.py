"""MultiHop-RAG: one shared episode over the whole news corpus.

Each article (title, source and date prepended to the body) is chunked into
``chunk_size``-token units (1024 as in MemTree, 512 as in CAM); every evidence
fact is linked to its article by url, else title. ``null_query`` items have no
evidence and are excluded unless ``include_null`` is set (the count is recorded).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id, units_from_texts

HUB_ID = "yixuantt/MultiHopRAG"
CORPUS, QUERIES = "corpus.json", "MultiHopRAG.json"
PINS = {
    "MultiHopRAG.json": "03cfb4926461f868684903aadc8024447bdda5bb3f6804741424cce338515bff",
    "corpus.json": "20b61b5ab84de84a927420c5d265b7ec8d859ae49980699958a787ade9e4d28f",
}
TYPES = ("inference_query", "comparison_query", "temporal_query", "null_query")


def _iso_dates(article: Any) -> Any:
    """``datasets`` parses ``published_at`` into a naive UTC datetime; the files hold ISO strings with offset."""
    when = article.get("published_at") if isinstance(article, dict) else None
    if isinstance(when, datetime):
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        return {**article, "published_at": when.isoformat()}
    return article


def article_text(article: dict[str, Any]) -> str:
    return (
        f"Title: {article['title']}\nSource: {article['source']}\n"
        f"Published: {article['published_at']}\n\n{article['body']}"
    )


def build_units(
    corpus: list[Any], where: str, chunk_size: int
) -> tuple[list[Unit], dict[str, tuple[str, int]]]:
    """Chunked units of every article; the index maps url and title to (source id, first position)."""
    tok = get_tokenizer("cl100k_base")
    units: list[Unit] = []
    index: dict[str, tuple[str, int]] = {}
    for i, art in enumerate(corpus):
        loc, art = f"{where}[{i}]", _iso_dates(art)
        for key in ("title", "source", "published_at", "body", "category"):
            hub.need(art, key, str, loc)
        source_id = art.get("url") or art["title"]
        chunks = chunk_text(article_text(art), tok, chunk_size)
        index.setdefault(f"url:{art.get('url')}", (source_id, len(units)))
        index.setdefault(f"title:{art['title']}", (source_id, len(units)))
        units += units_from_texts(
            chunks,
            source_id=source_id,
            start=len(units),
            cut=True,
            timestamp=art["published_at"],
            title=art["title"],
            category=art["category"],
        )
    return units, index


def link_evidence(
    items: list[Any], index: dict[str, tuple[str, int]], where: str
) -> tuple[Evidence, ...]:
    """Evidence facts pointed at their articles; unknown articles keep their url (reported as dangling)."""
    out = []
    for j, ev in enumerate(items):
        loc = f"{where}.evidence_list[{j}]"
        fact = hub.need(ev, "fact", str, loc)
        hit = index.get(f"url:{ev.get('url')}") or index.get(f"title:{ev.get('title')}")
        if hit is None:
            out.append(Evidence(source_id=str(ev.get("url") or ev.get("title")), text=fact))
        else:
            out.append(Evidence(source_id=hit[0], text=fact, position=hit[1]))
    return tuple(out)


def build_questions(
    queries: list[Any],
    where: str,
    index: dict[str, tuple[str, int]],
    position: int,
    include_null: bool,
) -> tuple[list[Question], int]:
    """Questions asked after the whole corpus; returns them and the number of null queries left out."""
    questions, skipped = [], 0
    for i, raw in enumerate(queries):
        loc = f"{where}[{i}]"
        text = hub.need(raw, "query", str, loc)
        answer = hub.need(raw, "answer", str, loc)
        qtype = hub.need(raw, "question_type", str, loc)
        if qtype not in TYPES:
            raise DatasetError(f"{loc}: unknown question_type {qtype!r} (expected one of {TYPES})")
        evidence = hub.need(raw, "evidence_list", list, loc)
        if qtype == "null_query" and not include_null:
            skipped += 1
            continue
        questions.append(
            Question(
                id=content_id(i, text, prefix="mh-q-"),
                text=text,
                answers=(answer,),
                position=position,
                categories={"type": qtype.removesuffix("_query")},
                evidence=link_evidence(evidence, index, loc),
            )
        )
    return questions, skipped


def build_dataset(
    corpus: Any,
    queries: Any,
    where: tuple[str, str],
    chunk_size: int = 1024,
    include_null: bool = False,
) -> Dataset:
    """The single MultiHop-RAG episode from parsed corpus and query lists."""
    for obj, loc, what in ((corpus, where[0], "articles"), (queries, where[1], "queries")):
        if not isinstance(obj, list):
            raise DatasetError(f"{loc}: expected a JSON list, got {type(obj).__name__}")
        if not obj:
            raise DatasetError(f"{loc}: no {what} (an empty list)")
    units, index = build_units(corpus, where[0], chunk_size)
    questions, skipped = build_questions(queries, where[1], index, len(units), include_null)
    if not questions:
        raise DatasetError(
            f"{where[1]}: all {skipped} queries are null_query, left out by "
            "dataset.loader.include_null=false; set it to true to ask them"
        )
    episode = Episode(
        id="multihop-rag", units=units, questions=questions, metadata={"articles": len(corpus)}
    )
    return Dataset(
        name="multihop",
        episodes=[episode],
        metadata={
            "chunk_size": chunk_size,
            "include_null": include_null,
            "excluded_null_queries": skipped,
            "articles": len(corpus),
        },
    )


def _files(path: Path) -> tuple[Path, Path]:
    folder = path if path.is_dir() else path.parent
    corpus, queries = folder / CORPUS, folder / QUERIES
    for f in (corpus, queries):
        if not f.is_file():
            raise DatasetError(
                f"dataset.loader.path={str(path)!r}: expected {CORPUS} and {QUERIES} in {folder}, "
                f"missing {f.name}"
            )
    return corpus, queries


def _download(cache: Path, revision: str | None) -> str:
    """Fetch both configs with ``datasets`` and keep them as the upstream json files under ``cache``."""
    import json

    corpus, files, sha = hub.hub_rows(HUB_ID, "corpus", "train", cache, revision)
    queries, _, _ = hub.hub_rows(HUB_ID, "MultiHopRAG", "train", cache, sha)
    corpus = [_iso_dates(a) for a in corpus]
    for name, rows in ((CORPUS, corpus), (QUERIES, queries)):
        (cache / name).write_text(
            json.dumps(rows, ensure_ascii=False, default=str), encoding="utf-8"
        )
    return f"{HUB_ID}@{sha}"


def check_pins(files: dict[str, str], pins: dict[str, str] | None) -> dict[str, bool]:
    """Which files match the published sha256 pins (fixtures and re-exports will not)."""
    return {
        Path(p).name: hub.pin(pins[Path(p).name]) == h
        for p, h in files.items()
        if pins and Path(p).name in pins
    }


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    chunk_size: hub.ChunkSize = 1024,
    include_null: bool = False,
    integrity: hub.Integrity = "warn",
    sha256_pins: dict[str, hub.Sha256] | None = None,
) -> Dataset:
    """Load MultiHop-RAG from a folder with corpus.json + MultiHopRAG.json, the cache, or the Hub."""
    cache = hub.cache_dir(data_dir, "multihop")
    local = hub.local_path(path)
    rev = "local"
    if local is None and (cache / CORPUS).is_file():
        local, rev = cache, hub.cached_revision(cache) or "cache"
    if local is None:
        reason = hub.hub_offline_reason()
        if reason:
            raise hub.unavailable(
                "multihop",
                HUB_ID,
                cache,
                reason,
                f"Download {CORPUS} and {QUERIES} (the Git LFS files of "
                "https://github.com/yixuantt/MultiHop-RAG, folder dataset/) into one folder.",
            )
        rev, local = _download(cache, revision), cache
    corpus_file, query_file = _files(local)
    ds = build_dataset(
        hub.read_json(corpus_file),
        hub.read_json(query_file),
        (str(corpus_file), str(query_file)),
        chunk_size,
        include_null,
    )
    ds.files, ds.revision = hub.file_hashes([corpus_file, query_file]), rev
    ds.metadata["matches_sha256_pins"] = check_pins(
        ds.files, PINS if sha256_pins is None else dict(sha256_pins)
    )
    return hub.finish(ds, integrity)
