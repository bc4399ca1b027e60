"""2WikiMultihopQA in its upstream JSON schema (HotpotQA's format plus Wikidata evidence).

Each record: ``_id``, ``type`` (comparison | inference | compositional | bridge_comparison),
``question``, ``answer``, ``supporting_facts`` [[title, sentence index]], ``context``
[[title, [sentences]]] (10 paragraphs), ``evidences`` [[subject, relation, object]] and
``entity_ids`` ("Q…_Q…"). The ``data_ids`` release adds ``answer_id`` and ``evidences_id``; with
``id_aliases.json`` beside the data file (lines of ``{Q_id, aliases, demonyms}``) the answer's
aliases and demonyms become extra references, as the official v1.1 evaluation script does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.data_prep.hotpotqa import parse_context, parse_supporting
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

FILE = "dev.json"
ALIASES = "id_aliases.json"
URL = "https://github.com/Alab-NII/2wikimultihop (README: data.zip, or data_ids_april7.zip with id_aliases.json)"
TYPES = ("comparison", "inference", "compositional", "bridge_comparison")


def read_aliases(path: Path) -> dict[str, list[str]]:
    """``Q_id`` -> aliases + demonyms from ``id_aliases.json`` (JSON lines)."""
    out = {}
    for n, row in hub.read_jsonl(path):
        where = f"{path}:{n}"
        qid = hub.need(row, "Q_id", str, where)
        names = need_str_list(hub.need(row, "aliases", list, where), f"{where}.aliases")
        demonyms = need_str_list(row.get("demonyms") or [], f"{where}.demonyms")
        out[qid] = [*names, *demonyms]
    return out


def parse_record(raw: Any, where: str, aliases: dict[str, list[str]]) -> Record:
    """One upstream record; every schema error names the file, record and field."""
    qid = hub.need(raw, "_id", str, where)
    where = f"{where} (_id {qid})"
    qtype = hub.need(raw, "type", str, where)
    if qtype not in TYPES:
        raise DatasetError(f"{where}: field 'type' is {qtype!r}, expected one of {TYPES}")
    for j, triple in enumerate(hub.need(raw, "evidences", list, where)):
        if not (isinstance(triple, list) and len(triple) == 3):
            raise DatasetError(f"{where}.evidences[{j}]: should be [subject, relation, object]")
        need_str_list(triple, f"{where}.evidences[{j}]")
    entity_ids = raw.get("entity_ids")
    if entity_ids is not None and not isinstance(entity_ids, str):
        raise DatasetError(f"{where}: field 'entity_ids' should be str like 'Q1_Q2'")
    answer = hub.need(raw, "answer", str, where)
    extra = aliases.get(raw.get("answer_id") or "", [])
    return Record(
        id=qid,
        question=hub.need(raw, "question", str, where),
        answers=tuple(dict.fromkeys([answer, *extra])),
        categories={"type": qtype},
        passages=parse_context(hub.need(raw, "context", list, where), where),
        supporting=parse_supporting(hub.need(raw, "supporting_facts", list, where), where),
        extra={"entity_ids": entity_ids},
    )


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    protocol: Protocol = "per_question",
    granularity: Granularity = "passage",
    with_title: bool = True,
    sample_size: SampleSize = None,
    sample_seed: SampleSeed = 0,
    use_aliases: bool = True,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load 2WikiMultihopQA from ``dev.json`` (a file or its folder) or the cache."""
    file, rev = load_source("twowiki", FILE, URL, path, data_dir)
    alias_file = file.parent / ALIASES
    aliases = read_aliases(alias_file) if use_aliases and alias_file.is_file() else {}
    rows = hub.read_json(file)
    if not isinstance(rows, list):
        raise DatasetError(f"{file}: expected a JSON list of records, got {type(rows).__name__}")
    picked = sample_records(list(enumerate(rows)), sample_size, sample_seed, str(file))
    records = [parse_record(r, f"{file}[{i}]", aliases) for i, r in picked]
    settings = {"protocol": protocol, "granularity": granularity, "with_title": with_title}
    meta = {
        "sample_size": sample_size,
        "sample_seed": sample_seed,
        "aliases_file": str(alias_file) if aliases else None,
        "questions_with_aliases": sum(len(r.answers) > 1 for r in records),
    }
    extra = [alias_file] if aliases else []
    return finish_load("twowiki", records, file, rev, settings, integrity, extra, meta)
