"""NarrativeQA as LongBench packages it (THUDM/LongBench ``narrativeqa.jsonl``: 200 test questions).

Each line: ``input`` (the question), ``context`` (the whole story: a Gutenberg book or a movie
script), ``answers`` (the two reference answers), ``length`` (words of the three fields),
``dataset`` ("narrativeqa"), ``language`` ("en"), ``all_classes`` (null), ``_id``. The structural-
memory paper takes its NarrativeQA column from this file (App. A: 200 samples, 24,009 tokens on
average) and scores F1 / EM, as LongBench's ``qa_f1_score`` (SQuAD normalisation, best over the
answers): the registry's ``f1`` and ``exact_match``.

Lines with the same ``context`` are questions about one story: they share one episode (the
memory is the same either way; building it once is cheaper). The story is cut into
``chunk_size``-token units; every question is asked after the whole story. LongBench gives no
evidence pointers. The Hub copy is ``data.zip`` of the THUDM/LongBench dataset repo, from which
``narrativeqa.jsonl`` is extracted into the cache.

``source: deepmind`` reads the original release instead (google-deepmind/narrativeqa):
``documents.csv`` (document_id, set, kind, story_url, story_file_size, wiki_url, wiki_title,
story_word_count, story_start, story_end), ``qaps.csv`` (document_id, set, question, answer1,
answer2, and their tokenised forms) and the stories its ``download_stories.sh`` writes to
``tmp/<document_id>.content``. A story is the text from the first ``story_start`` to the last
``story_end`` (the whole file when a marker is missing, counted); movie scripts have their HTML
stripped. Stories that were not downloaded are skipped and counted with their questions.
"""

from __future__ import annotations

import csv
import io
import logging
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Question, content_id, units_from_texts

FILE = "narrativeqa.jsonl"
HUB_ID, HUB_FILE = "THUDM/LongBench", "data.zip"
URL = "https://huggingface.co/datasets/THUDM/LongBench (data.zip: data/narrativeqa.jsonl)"
DEEPMIND_URL = "https://github.com/google-deepmind/narrativeqa (download_stories.sh for tmp/)"
log = logging.getLogger(__name__)


def _download(cache: Path, revision: str | None) -> str:
    """``data.zip`` from the Hub, ``narrativeqa.jsonl`` extracted beside it; returns repo@commit."""
    archive, sha = hub.hub_download(HUB_ID, HUB_FILE, cache, revision)
    try:
        with zipfile.ZipFile(archive) as z:
            member = next((n for n in z.namelist() if Path(n).name == FILE), None)
            if member is None:
                raise DatasetError(
                    f"{archive}: no {FILE} in the archive (found {len(z.namelist())})"
                )
            (cache / FILE).write_bytes(z.read(member))
    except zipfile.BadZipFile:
        raise DatasetError(f"{archive}: not a readable zip archive; delete it and retry") from None
    return f"{HUB_ID}@{sha}"


def parse_row(raw: dict, where: str) -> tuple[str, Question]:
    """(story text, question) of one line; every schema error names the file, line and field."""
    qid = hub.need(raw, "_id", str, where)
    where = f"{where} (_id {qid})"
    answers = hub.need(raw, "answers", list, where)
    if not answers or not all(isinstance(a, str) for a in answers):
        raise DatasetError(f"{where}: field 'answers' should be a non-empty list of strings")
    name = raw.get("dataset", "narrativeqa")
    if name != "narrativeqa":
        raise DatasetError(f"{where}: field 'dataset' is {name!r}; this is not narrativeqa.jsonl")
    question = Question(
        id=qid,
        text=hub.need(raw, "input", str, where),
        answers=tuple(dict.fromkeys(answers)),
        position=0,
    )
    return hub.need(raw, "context", str, where), question


def _csv_rows(file: Path) -> list[tuple[str, dict[str, str]]]:
    """Rows of a CSV file with their locations; a missing column names the file and column."""
    reader = csv.DictReader(io.StringIO(hub.read_text(file)))
    return [(f"{file}:{i + 2}", row) for i, row in enumerate(reader)]


def _cell(row: dict[str, str], key: str, where: str) -> str:
    value = row.get(key)
    if value is None:
        raise DatasetError(f"{where}: missing column {key!r} (found {sorted(k for k in row if k)})")
    return value


def story_text(raw: str, start: str, end: str, kind: str) -> tuple[str, bool]:
    """The story between its markers (whole text when one is missing), and whether both were found."""
    from memharness.data_prep.quality import strip_html

    text = strip_html(raw) if kind == "movie" else raw
    i, j = text.find(start), text.rfind(end)
    if start and end and 0 <= i < j:
        return text[i : j + len(end)], True
    return text, False


def load_deepmind(
    root: Path, split: str
) -> tuple[list[tuple[str, str, dict, Question]], list[Path], dict]:
    """(story key, text, metadata, question) per question of ``split`` in the original layout."""
    docs_file, qaps_file = root / "documents.csv", root / "qaps.csv"
    for f in (docs_file, qaps_file):
        if not f.is_file():
            raise DatasetError(
                f"dataset.loader.path={str(root)!r}: no {f.name} (source: deepmind expects "
                f"documents.csv, qaps.csv and tmp/<document_id>.content from {DEEPMIND_URL})"
            )
    docs = {}
    for where, row in _csv_rows(docs_file):
        if _cell(row, "set", where) == split:
            docs[_cell(row, "document_id", where)] = (row, where)
    out, files, missing, unmarked, skipped, count = [], [docs_file, qaps_file], [], 0, 0, {}
    texts: dict[str, tuple[str, bool] | None] = {}
    for where, row in _csv_rows(qaps_file):
        doc_id = _cell(row, "document_id", where)
        if _cell(row, "set", where) != split:
            continue
        if doc_id not in docs:
            raise DatasetError(
                f"{where}: document_id {doc_id!r} is not a {split} row of {docs_file}"
            )
        meta, meta_where = docs[doc_id]
        if doc_id not in texts:
            content = root / "tmp" / f"{doc_id}.content"
            if not content.is_file():
                texts[doc_id] = None
                missing.append(doc_id)
            else:
                files.append(content)
                raw = content.read_bytes().decode("utf-8", errors="replace")
                texts[doc_id] = story_text(
                    raw,
                    _cell(meta, "story_start", meta_where),
                    _cell(meta, "story_end", meta_where),
                    _cell(meta, "kind", meta_where),
                )
                unmarked += not texts[doc_id][1]
        if texts[doc_id] is None:
            skipped += 1
            continue
        n = count[doc_id] = count.get(doc_id, 0) + 1
        answers = tuple(dict.fromkeys(_cell(row, k, where) for k in ("answer1", "answer2")))
        question = Question(
            id=f"{doc_id[:12]}-{n}",
            text=_cell(row, "question", where),
            answers=answers,
            position=0,
            categories={"kind": meta["kind"]},
        )
        out.append(
            (doc_id, texts[doc_id][0], {"document_id": doc_id, "kind": meta["kind"]}, question)
        )
    if missing:
        log.warning(
            "narrativeqa: %d %s stories not downloaded (e.g. %s)", len(missing), split, missing[0]
        )
    info = {
        "stories_missing": len(missing),
        "questions_skipped": skipped,
        "story_markers_not_found": unmarked,
    }
    return out, files, info


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    source: Literal["longbench", "deepmind"] = "longbench",
    split: Literal["train", "valid", "test"] = "test",
    chunk_size: hub.ChunkSize = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load ``narrativeqa.jsonl`` (the file or its folder), the cache, or LongBench on the Hub; with
    ``source: deepmind``, the original release's folder (``split`` picks its set)."""
    if source == "deepmind":
        root = hub.local_path(path) or hub.cache_dir(data_dir, "narrativeqa_deepmind")
        if not root.is_dir():
            raise DatasetError(
                f"dataset 'narrativeqa' (source: deepmind): no folder at {root}; clone "
                f"{DEEPMIND_URL}, run download_stories.sh and pass `dataset.loader.path=<folder>`"
            )
        items, files, info = load_deepmind(root, split)
        return _build(
            items, files, "local", chunk_size, integrity, {"source": source, "split": split, **info}
        )
    if source != "longbench":
        raise DatasetError(f"dataset.loader.source must be longbench or deepmind, got {source!r}")
    cache = hub.cache_dir(data_dir, "narrativeqa")
    local = hub.local_path(path)
    rev = "local"
    if local is None and (cache / FILE).is_file():
        local, rev = cache, hub.cached_revision(cache) or "cache"
    if local is None:
        reason = hub.hub_offline_reason()
        if reason:
            raise DatasetError(
                f"dataset 'narrativeqa': {FILE} not found and the Hub cannot be used ({reason}); "
                f"download it from {URL}, unzip it and place {FILE} in {cache} or pass "
                "`dataset.loader.path=<file or folder>`"
            )
        rev, local = _download(cache, revision), cache
    file = local / FILE if local.is_dir() else local
    if not file.is_file():
        raise DatasetError(f"dataset.loader.path: expected {FILE} in {local}")
    items = []
    for lineno, raw in hub.read_jsonl(file):
        text, question = parse_row(raw, f"{file}:{lineno}")
        items.append((content_id(text, length=12), text, {}, question))
    return _build(items, [file], rev, chunk_size, integrity, {"source": source})


def _build(
    items: list[tuple[str, str, dict, Question]],
    files: list[Path],
    rev: str,
    chunk_size: int,
    integrity: str,
    meta: dict,
) -> Dataset:
    """Episodes, one per story (questions grouped by story key), units of ``chunk_size`` tokens."""
    stories: OrderedDict[str, tuple[str, dict, list[Question]]] = OrderedDict()
    for key, text, story_meta, question in items:
        stories.setdefault(key, (text, story_meta, []))[2].append(question)
    tok = get_tokenizer("cl100k_base")
    episodes = []
    for key, (text, story_meta, questions) in stories.items():
        chunks = chunk_text(text, tok, chunk_size)
        if not chunks:
            raise DatasetError(f"narrativeqa: question {questions[0].id} has an empty story")
        units = units_from_texts(chunks, source_id=f"narrativeqa-{key}", cut=True)
        episodes.append(
            Episode(
                id=f"narrativeqa-{key}",
                units=units,
                questions=[
                    Question(q.id, q.text, q.answers, len(units), categories=q.categories)
                    for q in questions
                ],
                metadata={"story": key, **story_meta},
            )
        )
    ds = Dataset(
        name="narrativeqa",
        episodes=episodes,
        files=hub.file_hashes(files),
        revision=rev,
        metadata={"chunk_size": chunk_size, "stories": len(episodes), **meta},
    )
    return hub.finish(ds, integrity)
