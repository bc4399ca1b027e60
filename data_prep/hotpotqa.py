"""HotpotQA (distractor setting) in its upstream JSON schema: one list of question records.

Each record: ``_id``, ``question``, ``answer``, ``type`` (bridge | comparison), ``level``
(easy | medium | hard), ``supporting_facts`` [[title, sentence index]], ``context``
[[title, [sentences]]] (two gold and eight distractor paragraphs). Episodes, units and evidence
are built by ``multihop_qa`` under the configured protocol.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
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

FILE = "hotpot_dev_distractor_v1.json"
URL = "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"
HUB_ID, HUB_CONFIG, HUB_SPLIT = "hotpotqa/hotpot_qa", "distractor", "validation"
TYPES = ("bridge", "comparison")
LEVELS = ("easy", "medium", "hard")


def parse_context(raw: Any, where: str) -> list[tuple[str, list[str]]]:
    """``context`` / 2Wiki's ``context``: [[title, [sentences]], ...]."""
    if not isinstance(raw, list):
        raise DatasetError(f"{where}: field 'context' should be a list of [title, [sentences]]")
    out = []
    for j, pair in enumerate(raw):
        loc = f"{where}.context[{j}]"
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise DatasetError(f"{loc}: should be [title, [sentences]]")
        out.append((pair[0], need_str_list(pair[1], f"{loc}[1]")))
    return out


def parse_supporting(raw: Any, where: str) -> list[tuple[str | int, int | None]]:
    """``supporting_facts``: [[title, sentence index], ...]."""
    if not isinstance(raw, list):
        raise DatasetError(f"{where}: field 'supporting_facts' should be a list")
    out: list[tuple[str | int, int | None]] = []
    for j, pair in enumerate(raw):
        ok = isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
        if not ok or not isinstance(pair[1], int) or isinstance(pair[1], bool):
            raise DatasetError(
                f"{where}.supporting_facts[{j}]: should be [title, sentence index], got {pair!r}"
            )
        out.append((pair[0], pair[1]))
    return out


def parse_record(raw: Any, where: str) -> Record:
    """One upstream record; every schema error names the file, record and field."""
    qid = hub.need(raw, "_id", str, where)
    where = f"{where} (_id {qid})"
    qtype = hub.need(raw, "type", str, where)
    if qtype not in TYPES:
        raise DatasetError(f"{where}: field 'type' is {qtype!r}, expected one of {TYPES}")
    level = raw.get("level")  # the test sets lack it; the dev and train sets have it
    if level is not None and level not in LEVELS:
        raise DatasetError(f"{where}: field 'level' is {level!r}, expected one of {LEVELS}")
    return Record(
        id=qid,
        question=hub.need(raw, "question", str, where),
        answers=(hub.need(raw, "answer", str, where),),
        categories={"type": qtype, **({"level": level} if level else {})},
        passages=parse_context(hub.need(raw, "context", list, where), where),
        supporting=parse_supporting(hub.need(raw, "supporting_facts", list, where), where),
    )


def from_hub_row(row: dict[str, Any]) -> dict[str, Any]:
    """A ``hotpotqa/hotpot_qa`` row (columns of parallel lists) back in the upstream record shape."""
    facts, context = row["supporting_facts"], row["context"]
    return {
        "_id": row["id"],
        "answer": row["answer"],
        "question": row["question"],
        "supporting_facts": [list(p) for p in zip(facts["title"], facts["sent_id"], strict=True)],
        "context": [
            [t, list(s)] for t, s in zip(context["title"], context["sentences"], strict=True)
        ],
        "type": row["type"],
        "level": row["level"],
    }


def _download(revision: str | None) -> Callable[[Path], str]:
    def fetch(cache: Path) -> str:
        rows, _, sha = hub.hub_rows(HUB_ID, HUB_CONFIG, HUB_SPLIT, cache, revision)
        records = [from_hub_row(r) for r in rows]
        (cache / FILE).write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
        return f"{HUB_ID}@{sha}"

    return fetch


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    revision: str | None = None,
    protocol: Protocol = "per_question",
    granularity: Granularity = "passage",
    with_title: bool = True,
    sample_size: SampleSize = None,
    sample_seed: SampleSeed = 0,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load HotpotQA from ``hotpot_dev_distractor_v1.json`` (a file or its folder), the cache, or
    the Hub's ``hotpotqa/hotpot_qa`` distractor validation split (converted back to that file)."""
    file, rev = load_source("hotpotqa", FILE, URL, path, data_dir, _download(revision))
    rows = hub.read_json(file)
    if not isinstance(rows, list):
        raise DatasetError(f"{file}: expected a JSON list of records, got {type(rows).__name__}")
    picked = sample_records(list(enumerate(rows)), sample_size, sample_seed, str(file))
    records = [parse_record(r, f"{file}[{i}]") for i, r in picked]
    settings = {"protocol": protocol, "granularity": granularity, "with_title": with_title}
    meta = {"sample_size": sample_size, "sample_seed": sample_seed}
    return finish_load("hotpotqa", records, file, rev, settings, integrity, parse_meta=meta)
