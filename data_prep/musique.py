"""MuSiQue (answerable) in its upstream JSONL schema: one question record per line.

Each record: ``id`` (``2hop__…``, ``3hop1__…``, ``4hop3__…``: hop count and composition shape),
``paragraphs`` [{idx, title, paragraph_text, is_supporting}] (20 per question), ``question``,
``question_decomposition`` [{id, question, answer, paragraph_support_idx}], ``answer``,
``answer_aliases``, ``answerable``. Paragraphs have no sentence boundaries, so supporting
paragraphs are whole-passage evidence and only ``granularity: passage`` is offered.
"""

from __future__ import annotations

import re
from typing import Any

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.data_prep.multihop_qa import (
    Granularity,
    Protocol,
    Record,
    SampleSeed,
    SampleSize,
    finish_load,
    load_source,
    need_str_list,
    sample_records,
)

FILE = "musique_ans_v1.0_dev.jsonl"
URL = (
    "https://github.com/StonyBrookNLP/musique (README: download.sh, Google Drive musique_v1.0.zip)"
)
ID_SHAPE = re.compile(r"^([234])hop(\d?)__")


def parse_paragraphs(raw: list[Any], where: str) -> tuple[list[tuple[str, list[str]]], list[int]]:
    """(title, [text]) per paragraph in ``idx`` order, and the indices of the supporting ones."""
    out, supporting = [], []
    for j, para in enumerate(raw):
        loc = f"{where}.paragraphs[{j}]"
        idx = hub.need(para, "idx", int, loc)
        if idx != j:
            raise DatasetError(f"{loc}: field 'idx' is {idx}, expected {j} (paragraphs in order)")
        title = hub.need(para, "title", str, loc)
        out.append((title, [hub.need(para, "paragraph_text", str, loc)]))
        if hub.need(para, "is_supporting", bool, loc):
            supporting.append(j)
    return out, supporting


def parse_record(raw: Any, where: str) -> Record:
    """One upstream line; every schema error names the file, line and field."""
    qid = hub.need(raw, "id", str, where)
    where = f"{where} (id {qid})"
    shape = ID_SHAPE.match(qid)
    if shape is None:
        raise DatasetError(
            f"{where}: field 'id' should start with 2hop__, 3hop1__, ... 4hop3__ (the hop count)"
        )
    passages, supporting = parse_paragraphs(hub.need(raw, "paragraphs", list, where), where)
    decomposition = hub.need(raw, "question_decomposition", list, where)
    for j, step in enumerate(decomposition):
        loc = f"{where}.question_decomposition[{j}]"
        for key, kind in (("question", str), ("answer", str), ("paragraph_support_idx", int)):
            if key == "paragraph_support_idx" and isinstance(step, dict) and step.get(key) is None:
                continue  # an unanswerable step of the full set has no support
            hub.need(step, key, kind, loc)
    answer = hub.need(raw, "answer", str, where)
    aliases = need_str_list(hub.need(raw, "answer_aliases", list, where), f"{where}.answer_aliases")
    hops = f"{shape.group(1)}hop"
    return Record(
        id=qid,
        question=hub.need(raw, "question", str, where),
        answers=tuple(dict.fromkeys([answer, *aliases])),
        categories={"hops": hops, "shape": qid.split("__", 1)[0]},
        passages=passages,
        supporting=[(j, None) for j in supporting],
        sentence_split=False,
        extra={"answerable": hub.need(raw, "answerable", bool, where)},
    )


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    protocol: Protocol = "per_question",
    granularity: Granularity = "passage",
    with_title: bool = True,
    sample_size: SampleSize = None,
    sample_seed: SampleSeed = 0,
    include_unanswerable: bool = False,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load MuSiQue from ``musique_ans_v1.0_dev.jsonl`` (a file or its folder) or the cache."""
    file, rev = load_source("musique", FILE, URL, path, data_dir)
    parsed = [parse_record(r, f"{file}:{n}") for n, r in hub.read_jsonl(file)]
    records = [r for r in parsed if r.extra["answerable"] or include_unanswerable]
    records = sample_records(records, sample_size, sample_seed, str(file))
    settings = {"protocol": protocol, "granularity": granularity, "with_title": with_title}
    meta = {
        "sample_size": sample_size,
        "sample_seed": sample_seed,
        "include_unanswerable": include_unanswerable,
        "excluded_unanswerable": 0
        if include_unanswerable
        else sum(not r.extra["answerable"] for r in parsed),
    }
    return finish_load("musique", records, file, rev, settings, integrity, parse_meta=meta)
