"""LongMemEval (Wu et al., ICLR 2025): each question an episode over its own chat history.

A record's haystack sessions are inserted in the file's order, every turn one unit whose source is
its session id and whose timestamp is its session's date; the question is asked after the last
turn, at its ``question_date`` (``Question.asked_at``: the answer prompt shows it as the current
date, as the official answer prompt does). Evidence (``gold: official``, the default, as the
official retrieval code): the user turns marked ``has_answer`` (``evidence: turn``), or the answer
sessions holding one, whole (``evidence: session``, the official session-level recall); an answer
session with no marked user turn is not gold, and a question with no marked user turn at all (every
single-session-assistant question) gets no evidence, so the official averages' rule of leaving it
out holds here too (counted as ``no_user_answer_turn``). ``gold: answer_sessions`` is the earlier
rule: marked turns of either role, and every answer session (whole when it has no marked turn).
Abstention items (``_abs`` in the id) get no evidence: the official retrieval metrics leave them out.

Questions whose haystacks are identical share one episode (built once). The episode id is a hash
of the haystack as inserted, so an unchanged haystack has the same id, hence the same snapshot
address, in every split and release (eval/run/snapshots.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id

RELEASES: dict[str, tuple[str, dict[str, str]]] = {
    "cleaned": (  # the 2025-09 re-release (history sessions that changed answers removed)
        "xiaowu0162/longmemeval-cleaned",
        {
            "oracle": "longmemeval_oracle.json",
            "s": "longmemeval_s_cleaned.json",
            "m": "longmemeval_m_cleaned.json",
        },
    ),
    "original": (  # the paper's release
        "xiaowu0162/longmemeval",
        {"oracle": "longmemeval_oracle.json", "s": "longmemeval_s.json", "m": "longmemeval_m.json"},
    ),
}
TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
GOLD_RULES = ("official", "answer_sessions")  # see the module docstring
ABSTENTION_MARK = "_abs"  # the official rule: an id containing it is an abstention item
ROLES = ("user", "assistant")
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"  # "2023/05/30 (Tue) 21:56"


def iso_date(raw: str, where: str) -> str:
    """ISO form of a LongMemEval date (the unit timestamp); an unreadable date names its field."""
    try:
        return datetime.strptime(raw.strip(), DATE_FORMAT).isoformat(timespec="minutes")
    except ValueError:
        raise DatasetError(
            f"{where}: date {raw!r} is not in LongMemEval's format (e.g. '2023/05/30 (Tue) 21:56')"
        ) from None


def is_abstention(question_id: str) -> bool:
    return ABSTENTION_MARK in question_id


def haystack_units(
    rec: dict[str, Any], where: str, turn_format: str, order: str = "date"
) -> tuple[str, list[Unit], dict[str, list[int]], set[int]]:
    """The episode id, the record's turns as units, each session id's unit positions and the
    positions of the ``has_answer`` turns (kept off the units: the official code removes the mark
    before any model sees a turn). Unit ids hash the episode id (a hash of the haystack), so two
    haystacks sharing a session keep distinct units."""
    ids = hub.need(rec, "haystack_session_ids", list, where)
    dates = hub.need(rec, "haystack_dates", list, where)
    sessions = hub.need(rec, "haystack_sessions", list, where)
    if not len(ids) == len(dates) == len(sessions):
        raise DatasetError(
            f"{where}: haystack_session_ids ({len(ids)}), haystack_dates ({len(dates)}) and "
            f"haystack_sessions ({len(sessions)}) should have the same length"
        )
    rows: list[tuple[str, str, str, dict[str, Any]]] = []  # (session id, text, timestamp, metadata)
    spans: dict[str, list[int]] = {}
    marked: set[int] = set()
    sequence = list(enumerate(zip(ids, dates, sessions, strict=True)))
    if order == "date":  # S and M are sorted already; the oracle file is not
        sequence.sort(
            key=lambda item: iso_date(str(item[1][1]), f"{where}.haystack_dates[{item[0]}]")
        )
    for s, (sid, date, turns) in sequence:
        loc = f"{where}.haystack_sessions[{s}]"
        if not isinstance(sid, str) or not isinstance(date, str) or not isinstance(turns, list):
            raise DatasetError(
                f"{loc}: expected a str session id, a str date and a list of turns, got "
                f"{type(sid).__name__}, {type(date).__name__}, {type(turns).__name__}"
            )
        stamp = iso_date(date, f"{where}.haystack_dates[{s}]")
        for t, turn in enumerate(turns):
            role = hub.need(turn, "role", str, f"{loc}[{t}]")
            content = hub.need(turn, "content", str, f"{loc}[{t}]")
            if role not in ROLES:
                raise DatasetError(f"{loc}[{t}]: role {role!r} should be one of {ROLES}")
            text = turn_format.format(date=date, role=role, content=content, session=sid)
            spans.setdefault(sid, []).append(len(rows))
            if turn.get("has_answer") is True:
                marked.add(len(rows))  # either role; question_evidence picks by gold rule
            rows.append((sid, text, stamp, {"session": s, "turn": t, "role": role}))
    ep_id = episode_id(rows)
    units = [
        Unit(
            id=content_id(ep_id, pos, text, prefix="u-"),
            text=text,
            source_id=sid,
            position=pos,
            timestamp=stamp,
            metadata=meta,
        )
        for pos, (sid, text, stamp, meta) in enumerate(rows)
    ]
    return ep_id, units, spans, marked


def episode_id(rows: list[tuple[str, str, str, dict[str, Any]]]) -> str:
    """A hash of the haystack as inserted (session ids, texts, dates, positions in their sessions)."""
    return content_id(rows, prefix="lme-")


def question_evidence(
    rec: dict[str, Any],
    units: list[Unit],
    spans: dict[str, list[int]],
    marked_turns: set[int],
    where: str,
    level: str,
    gold: str = "official",
) -> tuple[Evidence, ...]:
    """Gold evidence for evidence recall (see the module docstring); none for abstention items."""
    answer_sessions = hub.need(rec, "answer_session_ids", list, where)
    if is_abstention(hub.need(rec, "question_id", str, where)):
        return ()
    if gold == "official":  # run_retrieval.py: only user turns carry the answer mark
        marked_turns = {p for p in marked_turns if units[p].metadata["role"] == "user"}
    out: list[Evidence] = []
    for sid in answer_sessions:
        marked = [p for p in spans.get(str(sid), []) if p in marked_turns]
        if gold == "official" and not marked:
            continue  # not a relevant session in the official metrics
        if level == "turn" and marked:
            out += [Evidence(str(sid), units[p].text, position=p, end=p + 1) for p in marked]
        else:  # the whole session (an id outside the haystack is reported as dangling)
            first = spans.get(str(sid), [None])[0]
            out.append(Evidence(str(sid), position=first))
    return tuple(out)


def record_question(rec: dict[str, Any], where: str, position: int, evidence: tuple) -> Question:
    qid = hub.need(rec, "question_id", str, where)
    qtype = hub.need(rec, "question_type", str, where)
    if qtype not in TYPES:
        raise DatasetError(f"{where}: unknown question_type {qtype!r} (expected one of {TYPES})")
    answer = hub.need(rec, "answer", (str, int, float), where)  # a few golds are numbers
    abstention = is_abstention(qid)
    date = hub.need(rec, "question_date", str, where)
    iso_date(date, f"{where}.question_date")
    return Question(
        id=qid,
        text=hub.need(rec, "question", str, where),
        answers=(str(answer),),
        position=position,
        categories={
            "type": qtype,  # as the official per-type accuracy: abstention items in their type
            "abstention": "abstention" if abstention else "answerable",
            "stratum": f"{qtype}{ABSTENTION_MARK}" if abstention else qtype,
        },
        evidence=evidence,
        asked_at=date,
    )


def build_dataset(
    records: Any,
    where: str,
    turn_format: str = "[{date}] {role}: {content}",
    evidence: str = "turn",
    name: str = "longmemeval",
    order: str = "date",
    gold: str = "official",
) -> Dataset:
    """Episodes from the parsed records of one LongMemEval file (identical haystacks merged)."""
    if not isinstance(records, list):
        raise DatasetError(
            f"{where}: expected a JSON list of questions, got {type(records).__name__}"
        )
    if order not in ("date", "file"):
        raise DatasetError(f"dataset.loader.order must be 'date' or 'file', got {order!r}")
    if evidence not in ("turn", "session"):
        raise DatasetError(f"dataset.loader.evidence must be 'turn' or 'session', got {evidence!r}")
    if gold not in GOLD_RULES:
        raise DatasetError(f"dataset.loader.gold must be one of {GOLD_RULES}, got {gold!r}")
    episodes: dict[str, Episode] = {}
    for i, rec in enumerate(records):
        loc = f"{where}[{i}]"
        ep_id, units, spans, marked = haystack_units(rec, loc, turn_format, order)
        q = record_question(
            rec,
            loc,
            len(units),
            question_evidence(rec, units, spans, marked, loc, evidence, gold),
        )
        if ep_id in episodes:
            episodes[ep_id].questions.append(q)
            episodes[ep_id].metadata["question_ids"].append(q.id)
        else:
            meta = {"question_ids": [q.id], "sessions": len(spans)}
            episodes[ep_id] = Episode(id=ep_id, units=units, questions=[q], metadata=meta)
    return Dataset(name=name, episodes=list(episodes.values()))


def check_pin(file: Path, digest: str, pins: dict[str, str | None] | None) -> bool | None:
    """Whether the file matches its configured sha256 pin (None: no pin for this file name)."""
    expected = hub.pin((pins or {}).get(file.name))
    if not expected:
        return None
    if expected != digest:
        hub.log.warning(
            "%s: sha256 %s differs from the pinned %s (dataset.loader.sha256_pins): not the file "
            "version this loader was checked against",
            file,
            digest,
            expected,
        )
    return expected == digest


def _find(local: Path, filename: str) -> Path:
    if local.is_dir():
        if not (local / filename).is_file():
            raise DatasetError(f"dataset.loader.path={str(local)!r}: no {filename} in this folder")
        return local / filename
    return local


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    split: Literal["oracle", "s", "m"] = "s",
    release: Literal["cleaned", "original"] = "cleaned",
    revision: str | None = None,
    turn_format: str = "[{date}] {role}: {content}",
    evidence: Literal["turn", "session"] = "turn",
    order: Literal["date", "file"] = "date",
    gold: Literal["official", "answer_sessions"] = "official",
    integrity: hub.Integrity = "warn",
    sha256_pins: dict[str, hub.Sha256 | None] | None = None,
) -> Dataset:
    """Load one LongMemEval file: ``path`` (the file or its folder), the data-dir cache, or the Hub."""
    hub_id, files = RELEASES[release]
    filename = files[split]
    cache = hub.cache_dir(data_dir, f"longmemeval_{release}")
    local, rev = hub.local_path(path), "local"
    if local is None and (cache / filename).is_file():
        local, rev = cache / filename, hub.cached_revision(cache) or "cache"
    if local is None:
        reason = hub.hub_offline_reason()
        if reason:
            pin = (sha256_pins or {}).get(filename)
            raise hub.unavailable(
                "longmemeval",
                hub_id,
                cache,
                reason,
                f"Download {filename} from https://huggingface.co/datasets/{hub_id} "
                + (
                    f"(expected sha256 {pin})."
                    if pin
                    else "(no sha256 pinned: see docs/datasets.md)."
                ),
            )
        local, sha = hub.hub_download(hub_id, filename, cache, revision)
        rev = f"{hub_id}@{sha}"
    file = _find(local, filename)
    ds = build_dataset(
        hub.read_json(file), str(file), turn_format, evidence, order=order, gold=gold
    )
    if not ds.episodes:
        raise DatasetError(f"{file}: no questions (the list is empty)")
    ds.files, ds.revision = hub.file_hashes([file]), rev
    ds.metadata.update(
        hub_id=hub_id,
        release=release,
        split=split,
        evidence=evidence,
        order=order,
        gold=gold,
        no_user_answer_turn=sum(  # answerable questions the official retrieval averages leave out
            not q.evidence and q.categories["abstention"] == "answerable"
            for e in ds.episodes
            for q in e.questions
        ),
        questions_by_stratum=_counts(
            q.categories["stratum"] for e in ds.episodes for q in e.questions
        ),
        matches_sha256_pin=check_pin(file, ds.files[str(file)], sha256_pins),
    )
    return hub.finish(ds, integrity)


def _counts(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))
