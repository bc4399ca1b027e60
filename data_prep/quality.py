"""QuALITY: one episode per article, chunked into non-overlapping 512-token units.

Reads the official v1.0.1 jsonl (one line per article and writer, so an article
spans several lines whose questions are merged) or the ``emozilla/quality``
mirror (one row per question: ``article``, ``question``, ``options``, ``answer``
0-based, ``hard``), as jsonl or parquet. ``mode: generative`` (MemTree's
setting) asks without options and uses the gold option's text as the
reference; ``mode: multiple_choice`` keeps the options and the 0-based gold index.
"""

from __future__ import annotations

import html
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Question, content_id, units_from_texts

HUB_ID = "emozilla/quality"
SPLITS = {"train": "train", "dev": "validation", "validation": "validation"}
MODES = ("generative", "multiple_choice")


def strip_html(text: str) -> str:
    """Plain text from the raw (non-htmlstripped) files: tags dropped, entities decoded."""
    text = re.sub(r"<(br|p|/p|div|/div|h\d|/h\d)[^>]*>", "\n", text, flags=re.I)
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def _question(raw: dict[str, Any], where: str, episode_id: str, mode: str) -> tuple[Question, str]:
    """A Question from an official question object, plus the article-level id it belongs to."""
    text = hub.need(raw, "question", str, where)
    qid = hub.need(raw, "question_unique_id", str, where)
    options = hub.need(raw, "options", list, where)
    if not options or not all(isinstance(o, str) for o in options):
        raise DatasetError(f"{where}: field 'options' should be a non-empty list of str")
    if raw.get("gold_label") is None:
        raise DatasetError(
            f"{where}: missing field 'gold_label' (the QuALITY test split has no gold labels; "
            "use train or dev)"
        )
    gold = hub.need(raw, "gold_label", int, where)
    if not 1 <= gold <= len(options):
        raise DatasetError(f"{where}: gold_label={gold} outside 1..{len(options)} (it is 1-based)")
    difficult = hub.need(raw, "difficult", int, where)
    return _make_question(qid, text, options, gold - 1, bool(difficult), mode), episode_id


def _make_question(
    qid: str, text: str, options: list[str], gold: int, hard: bool, mode: str
) -> Question:
    mc = mode == "multiple_choice"
    # Multiple choice is scored by the option letter (the gold option's text stays the reference via
    # gold_option); free-form mode takes the gold option's text as the answer (MemTree's setting).
    return Question(
        id=qid,
        text=text,
        answers=() if mc else (options[gold],),
        position=0,
        options=tuple(options) if mc else None,
        gold_option=gold if mc else None,
        categories={"difficulty": "hard" if hard else "easy"},
    )


def group_official(rows: Iterable[tuple[str, dict[str, Any]]], mode: str) -> OrderedDict[str, dict]:
    """Merge the lines of each article: {article_id: {text, title, questions, where}}."""
    articles: OrderedDict[str, dict] = OrderedDict()
    for where, row in rows:
        aid = hub.need(row, "article_id", str, where)
        article = hub.need(row, "article", str, where)
        qs = hub.need(row, "questions", list, where)
        entry = articles.setdefault(
            aid, {"text": article, "title": row.get("title"), "questions": [], "where": where}
        )
        if entry["text"] != article:
            raise DatasetError(f"{where}: article {aid} differs from its text at {entry['where']}")
        for i, raw in enumerate(qs):
            entry["questions"].append(_question(raw, f"{where}: questions[{i}]", aid, mode)[0])
    return articles


def group_mirror(rows: Iterable[tuple[str, dict[str, Any]]], mode: str) -> OrderedDict[str, dict]:
    """Group mirror rows (one per question, no article id) by article text."""
    articles: OrderedDict[str, dict] = OrderedDict()
    for where, row in rows:
        article = hub.need(row, "article", str, where)
        text = hub.need(row, "question", str, where)
        options = list(hub.need(row, "options", (list, tuple), where))
        gold = hub.need(row, "answer", int, where)
        if not 0 <= gold < len(options):
            raise DatasetError(
                f"{where}: answer={gold} outside 0..{len(options) - 1} (it is 0-based)"
            )
        hard = hub.need(row, "hard", (bool, int), where)
        aid = content_id(article, length=12)
        entry = articles.setdefault(
            aid, {"text": article, "title": None, "questions": [], "where": where}
        )
        qid = content_id(aid, text, options, prefix=f"{aid}_")
        entry["questions"].append(_make_question(qid, text, options, gold, bool(hard), mode))
    return articles


def build_episodes(
    articles: OrderedDict[str, dict], chunk_size: int, html_input: bool
) -> list[Episode]:
    """Chunk each article; every question is asked after the whole article is inserted."""
    tok = get_tokenizer("cl100k_base")
    episodes = []
    for aid, entry in articles.items():
        text = strip_html(entry["text"]) if html_input else entry["text"]
        chunks = chunk_text(text, tok, chunk_size)
        if not chunks:
            raise DatasetError(f"{entry['where']}: article {aid} has an empty 'article' field")
        units = units_from_texts(chunks, source_id=f"quality-{aid}", cut=True)
        questions = [replace(q, position=len(units)) for q in entry["questions"]]
        episodes.append(
            Episode(
                id=f"quality-{aid}",
                units=units,
                questions=questions,
                metadata={"article_id": aid, "title": entry["title"]},
            )
        )
    return episodes


def read_rows(file: Path) -> list[tuple[str, dict[str, Any]]]:
    """Rows of a jsonl or parquet file with their locations."""
    if file.suffix == ".parquet":
        import pyarrow
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(file)
        except (OSError, pyarrow.ArrowException) as err:
            reason = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
            raise DatasetError(f"{file}: not a readable parquet file ({reason})") from None
        return [(f"{file}: row {i}", r) for i, r in enumerate(table.to_pylist())]
    rows = [(f"{file}:{n}", row) for n, row in hub.read_jsonl(file)]
    if not rows:
        raise DatasetError(f"{file}: no rows (the file is empty)")
    return rows


def episodes_from_rows(
    rows: list[tuple[str, dict[str, Any]]],
    mode: str = "generative",
    chunk_size: int = 512,
    html_input: bool = False,
) -> list[Episode]:
    """Episodes from official or mirror rows (told apart by the ``article_id`` field)."""
    if mode not in MODES:
        raise DatasetError(f"dataset.loader.mode must be one of {MODES}, got {mode!r}")
    if not rows:
        raise DatasetError("QuALITY: no rows")
    official = "article_id" in rows[0][1]
    articles = group_official(rows, mode) if official else group_mirror(rows, mode)
    return build_episodes(articles, chunk_size, html_input and official)


def _pick_file(path: Path, split: str) -> Path:
    if path.is_file():
        return path
    hits = sorted(path.glob(f"QuALITY.v1.0.1.htmlstripped.{split}")) or sorted(
        path.glob(f"*{split}*")
    )
    if not hits:
        raise DatasetError(
            f"dataset.loader.path: no QuALITY file for split {split!r} in folder {path}"
        )
    return hits[0]


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    split: Literal["train", "dev", "validation"] = "dev",
    mode: Literal["generative", "multiple_choice"] = "generative",
    chunk_size: hub.ChunkSize = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load QuALITY from a local file or folder, else the ``emozilla/quality`` mirror on the Hub."""
    if split not in SPLITS:
        raise DatasetError(f"dataset.loader.split must be one of {sorted(SPLITS)}, got {split!r}")
    local = hub.local_path(path)
    cache = hub.cache_dir(data_dir, "quality")
    mirror_copy = cache / f"emozilla_quality.{SPLITS[split]}.jsonl"
    if local is None and mirror_copy.is_file():
        local = mirror_copy
    if local is not None:
        file = _pick_file(local, split)
        rows, files = read_rows(file), hub.file_hashes([file])
        rev = hub.cached_revision(cache) if file == mirror_copy else "local"
        html_input = "htmlstripped" not in file.name and "article_id" in (
            rows[0][1] if rows else {}
        )
    else:
        reason = hub.hub_offline_reason()
        if reason:
            raise hub.unavailable(
                "quality",
                HUB_ID,
                cache,
                reason,
                "Download QuALITY.v1.0.1.htmlstripped.dev from "
                "https://github.com/nyu-mll/quality (data/v1.0.1).",
            )
        hub_rows, files, sha = hub.hub_rows(HUB_ID, None, SPLITS[split], cache, revision)
        hub.write_jsonl(mirror_copy, hub_rows)
        rows, rev, html_input = (
            [(f"{HUB_ID}[{i}]", r) for i, r in enumerate(hub_rows)],
            f"{HUB_ID}@{sha}",
            False,
        )
    episodes = episodes_from_rows(rows, mode, chunk_size, html_input)
    ds = Dataset(
        name="quality",
        episodes=episodes,
        files=files,
        revision=rev,
        metadata={"split": split, "mode": mode, "chunk_size": chunk_size},
    )
    return hub.finish(ds, integrity)
