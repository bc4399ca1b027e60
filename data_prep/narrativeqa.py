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
"""

from __future__ import annotations

import zipfile
from collections import OrderedDict
from pathlib import Path

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Question, content_id, units_from_texts

FILE = "narrativeqa.jsonl"
HUB_ID, HUB_FILE = "THUDM/LongBench", "data.zip"
URL = "https://huggingface.co/datasets/THUDM/LongBench (data.zip: data/narrativeqa.jsonl)"


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


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    chunk_size: hub.ChunkSize = 512,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load ``narrativeqa.jsonl`` (the file or its folder), the cache, or LongBench on the Hub."""
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
    stories: OrderedDict[str, tuple[str, list[Question]]] = OrderedDict()
    for lineno, raw in hub.read_jsonl(file):
        text, question = parse_row(raw, f"{file}:{lineno}")
        key = content_id(text, length=12)
        stories.setdefault(key, (text, []))[1].append(question)
    tok = get_tokenizer("cl100k_base")
    episodes = []
    for key, (text, questions) in stories.items():
        chunks = chunk_text(text, tok, chunk_size)
        if not chunks:
            raise DatasetError(f"{file}: question {questions[0].id} has an empty 'context'")
        units = units_from_texts(chunks, source_id=f"narrativeqa-{key}", cut=True)
        episodes.append(
            Episode(
                id=f"narrativeqa-{key}",
                units=units,
                questions=[
                    Question(q.id, q.text, q.answers, len(units), categories={}) for q in questions
                ],
                metadata={"story": key},
            )
        )
    ds = Dataset(
        name="narrativeqa",
        episodes=episodes,
        files=hub.file_hashes([file]),
        revision=rev,
        metadata={"chunk_size": chunk_size, "stories": len(episodes)},
    )
    return hub.finish(ds, integrity)
