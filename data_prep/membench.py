"""MemBench (Tan et al., ACL 2025 Findings; code and data import-myself/Membench @0495679).

Two axes pick a file: the perspective (``first`` = participation, the agent talks with the user:
``FirstAgent``; ``third`` = observation, the agent only records the user's messages:
``ThirdAgent``) and the level (``low`` = factual, ``high`` = reflective: a preference or mood to
infer). Two layouts of the same trajectories exist upstream, and both load:

- the merged files ``<Agent>Data<Level>.json`` (``benchmark/load_test_data.py`` MixMessage /
  MixSession, and the released test files ``<Agent>Data<Level>_*.json``): ``{qa_type: {scenario:
  [trajectory]}}``;
- the per-type files ``MemData/<Agent>/<qa_type>.json``: ``{scenario: [trajectory]}``; a file
  whose name holds ``highlevel`` is reflective, every other one factual (MixMessage's rule).

A trajectory is ``{tid, message_list, QA}`` with ``QA = {qid, question, answer, target_step_id,
choices {A..D}, ground_truth, time}``. Messages are observation dicts ``{message, place, time}``,
dialogue turns ``{user_message | user, assistant_message | assistant, place, time}``, or, in the
released test files, already formatted (a string, or ``{user, agent}``); a reflective or
participation ``message_list`` is a list of sessions (lists). A target step is an index into the
flattened messages, or a pair ``[message index, session index]`` whose first element is that
flattened index (upstream's noise code relocates a pair as ``blocks_before(session) * 3 +
pair[0]``).

Each trajectory is one episode: every message one unit in order, its text formatted as upstream
stores it (the ``(place: ...; time: ...)`` suffix on each message, a turn as ``'user': ...;
'agent': ...``), dated by its ``time`` (MemBench's ``'2024-10-01 08:00' Tuesday``, kept as ISO
``2024-10-01T08:00``; a malformed time is refused). The question is asked after the last message
at the QA's ``time``, with its four choices and the gold letter; its evidence is one unit per
target step, so evidence recall is MemBench's retrieval recall. A target step outside the messages
(upstream data has one) is left out of the evidence and counted in the dataset's metadata.
With ``capacity_bucket`` set, the question is asked as upstream's capacity protocol (``step_cap``)
asks it: after every message from the last target step on, each asking labelled ``membench_tokens``
with the ``cl100k_base`` tokens of the messages seen so far (a turn's user and agent strings counted
apart, as upstream does), in buckets of that many tokens; accuracy per bucket is the capacity curve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.settings import Range
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id

SOURCE = "https://github.com/import-myself/Membench"
PERSPECTIVES = {"first": "FirstAgent", "third": "ThirdAgent"}  # participation | observation
LEVELS = {"low": "LowLevel", "high": "HighLevel"}  # factual | reflective
LETTERS = "ABCD"
# "'2024-10-01 08:00' Tuesday" (quotes and weekday optional; a bare date is a day's start)
_TIME = re.compile(r"^'?(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}:\d{2}))?'?(?:\s+([A-Za-z]+))?$")
# the suffix upstream appends to a message: "(place: Boston, MA; time: '2024-10-01 08:00' Tuesday)"
_SUFFIX = re.compile(r"\(place:[^;()]*;\s*time:?\s*([^()]*)\)\s*$")
_DAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


def parse_time(text: Any, where: str) -> str:
    """MemBench's time string as ISO (``2024-10-01T08:00``, or ``2024-10-01`` for a bare date)."""
    match = _TIME.match(str(text).strip()) if isinstance(text, str) else None
    if not match or (match[3] and match[3].lower() not in _DAYS):
        raise DatasetError(
            f"{where}: time {text!r} is not MemBench's \"'YYYY-MM-DD HH:MM' Weekday\""
        )
    day, clock = match[1], match[2]
    try:
        stamp = datetime.strptime(f"{day} {clock or '00:00'}", "%Y-%m-%d %H:%M")
    except ValueError:
        raise DatasetError(f"{where}: time {text!r} is not a real date and time") from None
    return stamp.strftime("%Y-%m-%dT%H:%M") if clock else stamp.date().isoformat()


def _field(msg: dict[str, Any], keys: tuple[str, ...], where: str) -> str:
    for key in keys:
        if isinstance(msg.get(key), str):
            return msg[key]
    raise DatasetError(f"{where}: no text field (one of {', '.join(keys)})")


@dataclass(frozen=True)
class Formats:
    """How messages become units, and the capacity protocol's setting."""

    suffix: str = " (place: {place}; time: {time})"  # appended to each message, as upstream does
    turn: str = (
        "'user': {user}; 'agent': {agent}"  # a participation turn, as MembenchAgent stores it
    )
    capacity_bucket: int | None = (
        None  # tokens per capacity bucket; None: the question once, at the end
    )


def message_text(msg: Any, where: str, fmt: Formats) -> tuple[str, str | None, tuple[str, ...]]:
    """(unit text, ISO time or None, the strings upstream's ``step_cap`` counts tokens of) of one
    message in any of the upstream forms."""
    if isinstance(msg, str):  # formatted observation: its time is in its suffix, if any
        found = _SUFFIX.search(msg)
        return msg, parse_time(found[1].strip(), where) if found else None, (msg,)
    if not isinstance(msg, dict):
        raise DatasetError(f"{where}: a message should be a string or an object")
    if "place" not in msg and "time" not in msg:  # a formatted turn {user, agent}
        if "message" in msg:
            raise DatasetError(f"{where}: an observation message needs its 'place' and 'time'")
        user = _field(msg, ("user", "user_message"), where)
        agent = _field(msg, ("agent", "assistant", "assistant_message"), where)
        found = _SUFFIX.search(user)
        when = parse_time(found[1].strip(), where) if found else None
        return fmt.turn.format(user=user, agent=agent), when, (user, agent)
    place = hub.need(msg, "place", str, where)
    when = parse_time(hub.need(msg, "time", str, where), f"{where}.time")
    tail = fmt.suffix.format(place=place, time=msg["time"])
    if "message" in msg:
        text = hub.need(msg, "message", str, where) + tail
        return text, when, (text,)
    user = _field(msg, ("user_message", "user"), where) + tail
    agent = _field(msg, ("assistant_message", "assistant"), where) + tail
    return fmt.turn.format(user=user, agent=agent), when, (user, agent)


def flatten(messages: list[Any], where: str) -> list[tuple[str, Any, str]]:
    """(source id, message, where) in order: sessions (nested lists) one after another."""
    if messages and all(isinstance(m, list) for m in messages):
        return [
            (f"session-{s}", m, f"{where}.message_list[{s}][{i}]")
            for s, session in enumerate(messages)
            for i, m in enumerate(session)
        ]
    if any(isinstance(m, list) for m in messages):
        raise DatasetError(f"{where}.message_list: mixes sessions (lists) and single messages")
    return [("stream", m, f"{where}.message_list[{i}]") for i, m in enumerate(messages)]


def target_index(step: Any, where: str) -> int:
    """The flattened message index a ``target_step_id`` entry names (an int or [index, session])."""
    if isinstance(step, list) and len(step) == 2:
        step = step[0]
    if isinstance(step, bool) or not isinstance(step, int):
        raise DatasetError(f"{where}: a target step should be an index or [index, session]")
    return step


def question_of(
    qa: dict[str, Any], where: str, qid: str, units: list[Unit], evidence: list[int], labels: dict
) -> Question:
    """The QA as a four-choice question asked after the trajectory's ``units``, its evidence the
    units at the ``evidence`` indices, its categories ``membench_<label>``."""
    choices = hub.need(qa, "choices", dict, where)
    letters = LETTERS[: len(choices)]
    if len(choices) < 2 or set(choices) != set(letters):
        raise DatasetError(f"{where}.choices: expected the letters A..D, got {sorted(choices)}")
    truth = hub.need(qa, "ground_truth", str, where).strip()
    if truth not in choices:
        raise DatasetError(f"{where}.ground_truth: {truth!r} is not one of {', '.join(letters)}")
    options = tuple(str(choices[x]) for x in letters)
    return Question(
        id=qid,
        text=hub.need(qa, "question", str, where),
        answers=(),  # scored by the gold letter; the option's text is the reference (auto mode)
        position=len(units),
        options=options,
        gold_option=letters.index(truth),
        categories={f"membench_{k}": str(v) for k, v in labels.items()},
        evidence=tuple(
            Evidence(units[i].source_id, units[i].text, position=i, end=i + 1) for i in evidence
        ),
        asked_at=parse_time(hub.need(qa, "time", str, where), f"{where}.time"),
    )


def capacity_questions(
    question: Question, last_target: int, tokens: list[int], bucket: int
) -> list[Question]:
    """Upstream's ``step_cap``: the question asked after every message from the last target step
    on, each labelled with the ``cl100k_base`` tokens of the messages before it (in buckets)."""
    out = []
    for pos in range(last_target + 1, len(tokens) + 1):
        seen = sum(tokens[:pos])
        lo = seen // bucket * bucket
        label = f"{lo:07d}-{lo + bucket - 1:07d}"
        cats = {**question.categories, "membench_tokens": label}
        out.append(replace(question, id=f"{question.id}-after{pos}", position=pos, categories=cats))
    return out


def trajectory_episode(
    traj: dict[str, Any], where: str, labels: dict[str, str], fmt: Formats
) -> tuple[Episode, int]:
    """One trajectory as an episode, and how many of its target steps fall outside its messages."""
    tid = hub.need(traj, "tid", (int, str), where)
    qa = hub.need(traj, "QA", dict, where)
    ep_id = "membench-{perspective}-{level}-{qa_type}-{scenario}-".format(**labels) + str(tid)
    units: list[Unit] = []
    counted: list[tuple[str, ...]] = []
    for source, msg, loc in flatten(hub.need(traj, "message_list", list, where), where):
        text, when, parts = message_text(msg, loc, fmt)
        counted.append(parts)
        when = when or (units[-1].timestamp if units else None)  # an undated noise message
        pos = len(units)
        units.append(Unit(content_id(ep_id, pos, text, prefix="u-"), text, source, pos, when))
    if not units:
        raise DatasetError(f"{where}.message_list: no messages")
    steps = hub.need(qa, "target_step_id", list, f"{where}.QA")
    indices = [target_index(s, f"{where}.QA.target_step_id") for s in steps]
    inside = sorted({i for i in indices if 0 <= i < len(units)})
    q = question_of(qa, f"{where}.QA", f"{ep_id}-q{qa.get('qid', 0)}", units, inside, labels)
    questions = [q]
    if fmt.capacity_bucket and inside:
        last = next(i for i in reversed(indices) if 0 <= i < len(units))  # target_step_id[-1]
        tok = get_tokenizer("cl100k_base")  # upstream's step_cap encoding
        tokens = [sum(tok.count(p) for p in parts) for parts in counted]
        questions = capacity_questions(q, last, tokens, fmt.capacity_bucket)
    meta = {"tid": tid, **labels, "messages": len(units)}
    return Episode(ep_id, units, questions, metadata=meta), len(set(indices)) - len(inside)


def find_files(root: Path, agent: str, level: str) -> list[tuple[Path, str | None]]:
    """(file, qa_type or None for a merged file) under ``root``: a merged file, else MemData's."""
    if root.is_file():
        return [(root, None)]
    merged = [
        p
        for d in (root, root / "data", root / "benchmark" / "data")
        for p in sorted(d.glob(f"{agent}Data{level}*.json"))
    ]
    if len(merged) > 1:
        raise DatasetError(
            f"{root}: several MemBench files match {agent}Data{level}*.json "
            f"({', '.join(p.name for p in merged)}); pass one with dataset.loader.path=<file>"
        )
    if merged:
        return [(merged[0], None)]
    for d in (root / "MemData" / agent, root / agent):
        files = [
            p for p in sorted(d.glob("*.json")) if ("highlevel" in p.name) == (level == "HighLevel")
        ]
        if files:
            return [(p, p.stem) for p in files]
    return []


def _by_type(data: Any, file: Path, qa_type: str | None) -> dict[str, dict[str, list[Any]]]:
    """``{qa_type: {scenario: [trajectory]}}`` of a merged or a per-type file, checked."""
    layout = {qa_type: data} if qa_type else data
    if not isinstance(layout, dict) or not all(isinstance(v, dict) for v in layout.values()):
        shape = "{scenario: [trajectory]}" if qa_type else "{qa_type: {scenario: [trajectory]}}"
        raise DatasetError(f"{file}: expected {shape}")
    for t, scenarios in layout.items():
        for s, trajs in scenarios.items():
            if not isinstance(trajs, list):
                raise DatasetError(f"{file}: {t}.{s} should be a list of trajectories")
    return layout


def load(
    perspective: Literal["first", "third"] = "third",
    level: Literal["low", "high"] = "low",
    qa_types: list[str] | str = "all",
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    suffix_format: str = " (place: {place}; time: {time})",
    turn_format: str = "'user': {user}; 'agent': {agent}",
    capacity_bucket: Annotated[int, Range(1)] | None = None,  # tokens per bucket; None: asked once
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load one MemBench perspective x level from ``path`` (a merged file, or a folder holding one
    or MemData/) or ``<data_dir>/membench/``; MemBench is not on the Hub, so nothing downloads."""
    if perspective not in PERSPECTIVES or level not in LEVELS:
        raise DatasetError(
            f"dataset.loader.perspective={perspective!r} / level={level!r}: should be "
            f"{' | '.join(PERSPECTIVES)} / {' | '.join(LEVELS)}"
        )
    if capacity_bucket is not None and (
        isinstance(capacity_bucket, bool)
        or not isinstance(capacity_bucket, int)
        or capacity_bucket < 1
    ):
        raise DatasetError(
            f"dataset.loader.capacity_bucket={capacity_bucket!r}: a positive token count or null"
        )
    fmt = Formats(suffix_format, turn_format, capacity_bucket)
    agent, lvl = PERSPECTIVES[perspective], LEVELS[level]
    root = hub.local_path(path) or hub.cache_dir(data_dir, "membench")
    files = find_files(root, agent, lvl) if root.exists() else []
    if not files:
        raise DatasetError(
            f"MemBench {perspective}/{level}: neither {agent}Data{lvl}.json nor "
            f"MemData/{agent}/*.json under {root} (not on the Hugging Face Hub, no download): "
            f"get MemData/ from {SOURCE} (git clone with its data) or its merged data files, "
            "and pass dataset.loader.path=<file or folder>"
        )
    wanted = None if qa_types in ("all", None) else set(qa_types)
    episodes, seen, outside = [], [], 0
    for file, qa_type in files:
        for t, scenarios in _by_type(hub.read_json(file), file, qa_type).items():
            seen.append(t)
            if wanted is not None and t not in wanted:
                continue
            for scenario, trajs in scenarios.items():
                labels = {"perspective": perspective, "level": level, "qa_type": t}
                for i, traj in enumerate(trajs):
                    where = f"{file}:{t}.{scenario}[{i}]"
                    ep, out = trajectory_episode(traj, where, {**labels, "scenario": scenario}, fmt)
                    episodes.append(ep)
                    outside += out
    if wanted is not None and wanted - set(seen):
        raise DatasetError(
            f"dataset.loader.qa_types: {sorted(wanted - set(seen))} not in {root} "
            f"(there: {', '.join(seen)})"
        )
    ds = Dataset(name="membench", episodes=episodes)
    ds.files = hub.file_hashes([f for f, _ in files])
    ds.metadata.update(
        perspective=perspective,
        level=level,
        qa_types=sorted(set(seen) if wanted is None else wanted),
        trajectories=len(episodes),
        capacity_bucket=capacity_bucket,
        targets_out_of_range=outside,
    )
    return hub.finish(ds, integrity)
