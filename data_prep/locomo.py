"""LoCoMo (Maharana et al., ACL 2024; snap-research/locomo ``data/locomo10.json``).

Each conversation (a ``sample_id``) is one episode; each dialogue turn, session after session in
order, is one unit carrying its ``dia_id``, speaker and session number, with the session's
``session_<n>_date_time`` as its timestamp (ISO) and, by default, in its text, as the official RAG
code writes a retrieved turn (``<date time>: <speaker> said, "<text>"``). A shared image is only a
BLIP caption; it is appended (`` and shared <caption>``) unless ``image_captions`` is off. Every
question is asked after the last turn. Observations, event and session summaries are LLM-written
and never inserted.

Categories: the raw number (``locomo_category``) picks the official scoring rule
(``eval/metrics/locomo.py``); ``category`` is its name under ``category_map`` (the official map or
the other one in circulation). Category 5 (adversarial) has no answer: ``adversarial_answer`` is
the distractor (what the *other* speaker would answer) and the right reply is that the
conversation does not say. By default the item is asked as the official GPT script asks it, two
options (not mentioned / the distractor, in an order fixed by the question id), and reported apart from the means
(``categories["apart"]``).

Evidence ``D<session>:<turn>`` points at one unit; a pointer to no turn is kept (counted as
dangling by the integrity check; its recall is 0, as in the official code).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id

log = logging.getLogger(__name__)

FILENAME = "locomo10.json"
# snap-research/locomo, branch main @3eb6f2c (2024-08-12); the file last changed in cbfbc1d (2024-08-09).
UPSTREAM_COMMIT = "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376"
PINNED_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
URL = f"https://raw.githubusercontent.com/snap-research/locomo/{UPSTREAM_COMMIT}/data/{FILENAME}"
# Other versions seen upstream: commits of unmerged pull requests that rewrite golds.
KNOWN_VERSIONS = {
    PINNED_SHA256: "main @cbfbc1d (2024-08-09), the released file",
    "8f941d1c22ab3dee4cb72521fbccc82d24c30208590a15b0b4005a2f927ff769": (
        "pull-request commit 82e6cbc (2025-12-08, 219 golds rewritten; not on main)"
    ),
    "939da5d9e0781ddd4c60c752b424e2c1b961caff1dd518a8c45acc38b5d3458c": (
        "pull-request commit 6573367 (2026-05-27, one weekday fixed; not on main)"
    ),
}
CATEGORY_MAPS = {
    # upstream has no mapping constant: the numbers are branches of task_eval/evaluation.py, the
    # names the paper's and task_eval/dpr_qa.py's plot labels (Multi-Hop, Time, Knowledge, ...)
    "official": {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    },
    # the map mem0 published (mem0ai/mem0#2609), followed by several later reports
    "mem0": {1: "single-hop", 2: "temporal", 3: "multi-hop", 4: "open-domain", 5: "adversarial"},
}
NOT_MENTIONED = "Not mentioned in the conversation"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"session_(\d+)")
_POINTER = re.compile(r"D:?(\d+):(\d+)")  # "D1:3"; "D:11:26" and "D30:05" occur in the release


def session_date(raw: str, where: str) -> str:
    """A session's date-time as ISO 8601 (no zone: the data gives none)."""
    try:
        return datetime.strptime(raw.strip(), DATE_FORMAT).isoformat()
    except ValueError:
        raise DatasetError(
            f"{where}: date-time {raw!r} is not like '1:56 pm on 8 May, 2023'"
        ) from None


def build_units(
    sample_id: str, conv: dict[str, Any], where: str, cfg: dict[str, Any]
) -> tuple[list[Unit], dict[str, tuple[int, str]]]:
    """Every turn as a unit, sessions in numeric order; returns the units and dia_id -> position."""
    sessions = sorted(int(m[1]) for k in conv if (m := _SESSION.fullmatch(k)))
    if not sessions:
        raise DatasetError(f"{where}: no session_<n> dialogue in the conversation")
    units: list[Unit] = []
    index: dict[str, tuple[int, str]] = {}
    for n in sessions:
        loc = f"{where}.session_{n}"
        turns = hub.need(conv, f"session_{n}", list, where)
        raw_date = hub.need(conv, f"session_{n}_date_time", str, where)
        iso = session_date(raw_date, f"{where}.session_{n}_date_time")
        for t, turn in enumerate(turns):
            tloc = f"{loc}[{t}]"
            speaker = hub.need(turn, "speaker", str, tloc)
            dia_id = hub.need(turn, "dia_id", str, tloc)
            caption = turn.get("blip_caption")
            image = (
                cfg["caption_format"].format(caption=caption)
                if caption and cfg["image_captions"]
                else ""
            )
            text = cfg["turn_format"].format(
                date_time=raw_date,
                speaker=speaker,
                text=hub.need(turn, "text", str, tloc),
                image=image,
            )
            source = f"{sample_id}/session-{n}"
            pointer = _pointer(dia_id)
            if pointer in index:
                raise DatasetError(f"{tloc}: dia_id {dia_id!r} occurs twice")
            index[pointer or dia_id] = (len(units), source)
            units.append(
                Unit(
                    id=content_id(source, len(units), text, prefix="u-"),
                    text=text,
                    source_id=source,
                    position=len(units),
                    timestamp=iso,
                    metadata={
                        "dia_id": dia_id,
                        "speaker": speaker,
                        "session": n,
                        "date_time": raw_date,
                        **({"image_caption": caption} if caption else {}),
                    },
                )
            )
    return units, index


def _pointer(text: str) -> str | None:
    m = _POINTER.fullmatch(text.strip())
    return f"D{int(m[1])}:{int(m[2])}" if m else None


def link_evidence(
    raw: list[Any],
    index: dict[str, tuple[int, str]],
    sample_id: str,
    where: str,
    counts: dict[str, int],
) -> tuple[Evidence, ...]:
    """``D<s>:<t>`` pointers as one-unit evidence; unknown pointers kept as dangling sources."""
    out = []
    for j, item in enumerate(raw):  # index: pointer -> (unit position, unit source id)
        if not isinstance(item, str):
            raise DatasetError(f"{where}.evidence[{j}]: should be str, got {type(item).__name__}")
        found = [f"D{int(m[1])}:{int(m[2])}" for m in _POINTER.finditer(item)]
        if len(found) != 1 or _pointer(item) is None:
            counts["evidence_rewritten" if found else "evidence_unreadable"] += 1
        for pointer in found or [item]:
            hit = index.get(pointer)
            if hit is None:  # no such turn: a source no unit has (counted as dangling)
                out.append(Evidence(source_id=f"{sample_id}/{pointer}"))
            else:
                out.append(Evidence(source_id=hit[1], position=hit[0], end=hit[0] + 1))
    return tuple(out)


def _gold(raw: dict[str, Any], where: str) -> str:
    answer = raw.get("answer")
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise DatasetError(f"{where}: field 'answer' should be str or int, got {answer!r}")
    return str(answer)  # integer answers (2022, 2) read as text, as the official code does


def not_mentioned_first(question_id: str) -> bool:
    """Whether "not mentioned" is option A of a category-5 question: a hash of its id, so the order
    is fixed per question and about half of the questions get each order."""
    return int(content_id("locomo-cat5-order", question_id), 16) % 2 == 0


def build_question(
    raw: dict[str, Any],
    i: int,
    sample_id: str,
    position: int,
    evidence: tuple[Evidence, ...],
    cfg: dict[str, Any],
) -> Question | None:
    """One QA item; None for a category-5 item when ``adversarial: skip``."""
    where = f"{cfg['file']}: {sample_id}.qa[{i}]"
    text = hub.need(raw, "question", str, where)
    number = hub.need(raw, "category", int, where)
    if number not in CATEGORY_MAPS["official"]:
        raise DatasetError(f"{where}: category {number} is not 1-5")
    categories = {"category": cfg["names"][number], "locomo_category": str(number)}
    qid = f"{sample_id}/qa-{i}"
    if number != 5:
        return Question(qid, text, (_gold(raw, where),), position, None, None, categories, evidence)
    if cfg["adversarial"] == "skip":
        return None
    distractor = str(hub.need(raw, "adversarial_answer", (str, int), where))
    if cfg["adversarial"] == "apart":
        categories["apart"] = "adversarial"
    if cfg["adversarial_format"] == "open":
        return Question(
            qid, text, (cfg["not_mentioned"],), position, None, None, categories, evidence
        )
    # Two options in an order fixed by the question id, as the official script asks it (it draws the
    # order unseeded).
    first = not_mentioned_first(qid)
    options = (cfg["not_mentioned"], distractor) if first else (distractor, cfg["not_mentioned"])
    return Question(qid, text, (), position, options, 0 if first else 1, categories, evidence)


def build_episode(record: Any, k: int, cfg: dict[str, Any], counts: dict[str, int]) -> Episode:
    """One conversation record of the upstream list as an episode."""
    where = f"{cfg['file']}[{k}]"
    sample_id = str(hub.need(record, "sample_id", (str, int), where))
    conv = hub.need(record, "conversation", dict, where)
    units, index = build_units(sample_id, conv, f"{where}.conversation", cfg)
    questions = []
    for i, raw in enumerate(hub.need(record, "qa", list, where)):
        loc = f"{where}.qa[{i}]"
        evidence = link_evidence(
            hub.need(raw, "evidence", list, loc), index, sample_id, loc, counts
        )
        q = build_question(raw, i, sample_id, len(units), evidence, cfg)
        if q is None:
            counts["adversarial_skipped"] += 1
        else:
            questions.append(q)
    meta = {k: conv.get(k) for k in ("speaker_a", "speaker_b")}
    return Episode(id=sample_id, units=units, questions=questions, metadata=meta)


def apply_errata(dataset: Dataset, path: Path) -> dict[str, Any]:
    """Replace golds from an errata file and flag the golds it lists as wrong; returns what
    metrics.json records about it.

    The file is JSON: ``{"source": "<where the corrections come from>", "corrections":
    {"<question id>": {"answer": "<corrected gold>", "was": "<the gold it replaces>",
    "source": "<optional, per item>"}}, "wrong": {"<question id>": {"was": "<the wrong gold>",
    "why": "<optional>", "source": "<optional>"}}}`` (``corrections`` or ``wrong`` may be empty or
    absent). ``was`` guards against a file written for another version: a gold that differs from it
    is refused, as is an unknown question id. Every question then carries ``categories["gold"]``:
    ``corrected``, ``listed_wrong`` (kept as the release has it, flagged) or ``unlisted``."""
    doc = hub.read_json(path)
    where = str(path)
    source = hub.need(doc, "source", str, where)
    corrections = doc.get("corrections") or {}
    wrong = doc.get("wrong") or {}
    if not isinstance(corrections, dict) or not isinstance(wrong, dict):
        raise DatasetError(f"{where}: corrections and wrong must be objects keyed by question id")
    by_id = {q.id: (ep, j) for ep in dataset.episodes for j, q in enumerate(ep.questions)}
    flagged = flag_wrong_golds(by_id, wrong, where)
    applied = []
    for qid, fix in corrections.items():
        loc = f"{where}: corrections[{qid!r}]"
        if qid not in by_id:
            raise DatasetError(
                f"{loc}: no question {qid!r} in the dataset (ids look like conv-26/qa-0)"
            )
        answer = str(hub.need(fix, "answer", (str, int), loc))
        ep, j = by_id[qid]
        q = ep.questions[j]
        if "was" in fix and (str(fix["was"]),) != q.answers:
            raise DatasetError(
                f"{loc}: the gold is {list(q.answers)}, not {fix['was']!r}: errata for another file version?"
            )
        ep.questions[j] = replace(
            q, answers=(answer,), categories={**q.categories, "gold": "corrected"}
        )
        applied.append(
            {
                "question_id": qid,
                "was": list(q.answers),
                "answer": answer,
                "source": str(fix.get("source") or source),
            }
        )
    for ep in dataset.episodes:
        ep.questions = [
            q if "gold" in q.categories else _with_gold(q, "unlisted") for q in ep.questions
        ]
    return {
        "applied": True,
        "file": where,
        "sha256": hub.file_hashes([path])[where],
        "source": source,
        "corrections": len(applied),
        "items": applied,
        "listed_wrong": len(flagged),
        "wrong_items": flagged,
    }


def _with_gold(q: Question, flag: str) -> Question:
    return replace(q, categories={**q.categories, "gold": flag})  # every other field kept


def flag_wrong_golds(
    by_id: dict[str, tuple[Episode, int]], wrong: dict[str, Any], where: str
) -> list[dict[str, Any]]:
    """Flag each question the errata list as having a wrong gold (``categories["gold"] =
    listed_wrong``), its gold kept; an unknown id or a ``was`` that is not the gold is refused."""
    flagged = []
    for qid, item in wrong.items():
        loc = f"{where}: wrong[{qid!r}]"
        if qid not in by_id:
            raise DatasetError(
                f"{loc}: no question {qid!r} in the dataset (ids look like conv-26/qa-0)"
            )
        if not isinstance(item, dict):
            raise DatasetError(f"{loc}: expected an object with was / why / source")
        ep, j = by_id[qid]
        q = ep.questions[j]
        if "was" in item and (str(item["was"]),) != q.answers:
            raise DatasetError(
                f"{loc}: the gold is {list(q.answers)}, not {item['was']!r}: errata for another file version?"
            )
        ep.questions[j] = _with_gold(q, "listed_wrong")
        flagged.append({"question_id": qid, "gold": list(q.answers), "why": item.get("why")})
    return flagged


def check_pin(file: Path, sha: str, pinned: str | None, on_mismatch: str) -> bool | None:
    """Compare the file's sha256 with the pin; a one-line warning (or error) when they differ."""
    if not pinned:
        return None
    if sha == pinned:
        return True
    known = KNOWN_VERSIONS.get(sha, "an unknown version (a fixture, an edit or another release)")
    message = (
        f"{file}: sha256 {sha} is not the pinned {pinned} (dataset.loader.sha256; "
        f"snap-research/locomo @{UPSTREAM_COMMIT[:7]} data/{FILENAME}); this file is {known}"
    )
    if on_mismatch == "raise":
        raise DatasetError(message)
    log.warning(message)
    return False


def resolve(path: str | None, data_dir: str | None, url: str, pinned: str | None) -> Path:
    """The local file: ``path`` (file or folder), the data-dir cache, else a download."""
    cache = hub.cache_dir(data_dir, "locomo")
    local = hub.local_path(path)
    if local is None and (cache / FILENAME).is_file():
        local = cache / FILENAME
    if local is None:
        reason = hub.url_offline_reason(url)
        if reason:
            raise DatasetError(
                f"dataset 'locomo' is not available ({reason}): put {FILENAME} "
                f"(sha256 {pinned or 'unpinned'}, from {url}) in {cache} or pass "
                "dataset.loader.path=<file>"
            )
        return hub.download_pinned(url, cache / FILENAME, pinned)
    if local.is_dir():
        local = local / FILENAME
        if not local.is_file():
            raise DatasetError(f"dataset.loader.path: no {FILENAME} in folder {local.parent}")
    return local


def load(
    path: hub.LocalPath = None,
    data_dir: str | None = None,
    url: str = URL,
    sha256: hub.Sha256 | None = PINNED_SHA256,
    on_mismatch: Literal["warn", "raise"] = "warn",
    category_map: Literal["official", "mem0"] = "official",
    adversarial: Literal["apart", "merged", "skip"] = "apart",
    adversarial_format: Literal["options", "open"] = "options",
    not_mentioned: str = NOT_MENTIONED,
    image_captions: bool = True,
    turn_format: str = '{date_time}: {speaker} said, "{text}"{image}',
    caption_format: str = " and shared {caption}",
    errata: hub.LocalPath = None,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load ``locomo10.json`` from ``path``, the data-dir cache, or the pinned upstream URL."""
    if category_map not in CATEGORY_MAPS:
        raise DatasetError(
            f"dataset.loader.category_map must be one of {sorted(CATEGORY_MAPS)}, got {category_map!r}"
        )
    sha256 = hub.pin(sha256)
    file = resolve(path, data_dir, url, sha256)
    records = hub.read_json(file)
    if not isinstance(records, list) or not records:
        raise DatasetError(f"{file}: expected a non-empty JSON list of conversations")
    cfg = {
        "file": str(file),
        "names": CATEGORY_MAPS[category_map],
        "adversarial": adversarial,
        "adversarial_format": adversarial_format,
        "not_mentioned": not_mentioned,
        "image_captions": image_captions,
        "turn_format": turn_format,
        "caption_format": caption_format,
    }
    counts: Counter[str] = Counter()
    episodes = [build_episode(r, k, cfg, counts) for k, r in enumerate(records)]
    files = hub.file_hashes([file])
    sha = files[str(file)]
    revision = f"snap-research/locomo@{UPSTREAM_COMMIT[:7]}" if sha == sha256 else "local"
    ds = Dataset(name="locomo", episodes=episodes, files=files, revision=revision)
    ds.metadata.update(
        sha256=files[str(file)],
        pinned_sha256=sha256,
        matches_pin=check_pin(file, files[str(file)], sha256, on_mismatch),
        version=KNOWN_VERSIONS.get(files[str(file)], "unknown"),
        category_map=category_map,
        adversarial=adversarial,
        adversarial_format=adversarial_format,
        image_captions=image_captions,
        categories=dict(
            Counter(q.categories["locomo_category"] for e in episodes for q in e.questions)
        ),
        **{
            k: counts[k]
            for k in ("adversarial_skipped", "evidence_rewritten", "evidence_unreadable")
        },
    )
    ds.metadata["errata"] = apply_errata(ds, Path(errata)) if errata else {"applied": False}
    return hub.finish(ds, integrity)
