"""The generated forgetting suite (issue 45, docs/datasets.md): ``dataset.forget`` turns each
episode into a stream with forget requests and correction turns, and questions whose gold says what
must be gone.

From each episode, ``facts`` questions whose gold evidence is a span of units (``Evidence.end`` set)
are drawn with a seed derived from the run's seed and the episode id. Each gets one event, inserted
right after its evidence (``position: after_evidence``) or after the last unit (``end``):

- **deletion**: a forget request, a unit carrying ``metadata["forget"]`` = the evidence units' ids
  (``memsys.types.FORGET_KEY``): the memory's ``forget`` runs at that point of the stream, nothing of
  the request is stored. The question's answer becomes ``abstain_answer``; its gold
  (``Question.update``) lists the forgotten units and the old answer.
- **correction**: a turn in the episode's voice stating a new value for the question (drawn from
  ``replacements``); the answer becomes that value, the gold lists the superseded (evidence) and the
  current (correction) units and the old answer.

The changed questions are asked after the last unit. Questions left as they were keep their answers;
one whose evidence was forgotten by another's request is dropped (counted in the episode's metadata
``forgetting.dropped``), as its gold no longer holds. Unit ids never change (positions are renumbered),
so every id in the gold points at the units the memory was given.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.types import (
    FORGET_KEY,
    FORGET_METHOD_KEY,
    Episode,
    Evidence,
    Question,
    Unit,
    Update,
    content_id,
)
from omegaconf import DictConfig, OmegaConf

MODES = ("deletion", "correction", "mixed")
POSITIONS = ("after_evidence", "end")


@dataclass(frozen=True)
class ForgetSettings:
    """``dataset.forget``: how many facts per episode, which events, where, under which seed."""

    facts: int = 2
    mode: Literal["deletion", "correction", "mixed"] = "mixed"
    position: Literal["after_evidence", "end"] = "after_evidence"
    seed: int = 0
    method: Literal["own", "rebuild"] = "own"  # the memory's own forget, or the reference rebuild
    request_text: str = "Please forget what I told you in that earlier conversation."
    correction_text: str = "A correction to something I told you before. {question} Now: {value}."
    abstain_answer: str = "I don't know: that information was deleted."
    replacements: tuple[str, ...] = ("Porto", "Juniper", "the cardiology ward", "Thursday")


def settings_of(section: Mapping[str, Any] | None) -> ForgetSettings | None:
    """The settings from the config section (None: no forgetting); a bad value is one-line refused."""
    if not section:
        return None
    if isinstance(section, DictConfig):  # dataset.forget as Hydra composed it
        section = OmegaConf.to_container(section, resolve=True)
    known = set(ForgetSettings.__dataclass_fields__)
    unknown = sorted(set(section) - known)
    if unknown:
        raise DatasetError(f"dataset.forget: unknown key(s) {unknown}; known: {sorted(known)}")
    values = dict(section)
    if "replacements" in values:
        values["replacements"] = tuple(values["replacements"])
    s = ForgetSettings(**values)
    if (
        s.mode not in MODES
        or s.position not in POSITIONS
        or s.facts < 1
        or s.method
        not in (
            "own",
            "rebuild",
        )
    ):
        raise DatasetError(
            f"dataset.forget: facts >= 1, mode in {MODES}, position in {POSITIONS}, method in "
            f"('own', 'rebuild'); got facts={s.facts}, mode={s.mode!r}, position={s.position!r}, "
            f"method={s.method!r}"
        )
    if s.mode != "deletion" and not s.replacements:
        raise DatasetError("dataset.forget.replacements: corrections need at least one value")
    return s


def evidence_units(question: Question, units: Sequence[Unit]) -> list[Unit] | None:
    """The units the question's gold evidence spans; None when it is not given as spans."""
    spans = [(e.position, e.end) for e in question.evidence]
    if not spans or any(p is None or end is None for p, end in spans):
        return None
    return [units[i] for p, end in spans for i in range(p, min(end, len(units)))] or None


def event_unit(
    episode: Episode, question: Question, kind: str, text: str, ids: list[str], method: str = "own"
) -> Unit:
    """The request or correction unit, with a content-addressed id (position fixed later)."""
    anchor = episode.units[-1]
    return Unit(
        id=content_id("forgetting", episode.id, question.id, kind, text, method, prefix="u-"),
        text=text,
        source_id=f"{anchor.source_id}/{kind}",
        position=0,
        timestamp=anchor.timestamp,
        metadata={FORGET_KEY: ids, FORGET_METHOD_KEY: method}
        if kind == "deletion"
        else {"correction": question.id},
    )


def disjoint(
    candidates: Sequence[Question], spans: Mapping[str, list[Unit]], n: int
) -> list[Question]:
    """The first ``n`` candidates whose evidence shares no unit with an earlier pick (two requests
    for one unit would forget it twice; a correction of a deleted fact has nothing to correct)."""
    picked, used = [], set()
    for q in candidates:
        ids = {u.id for u in spans[q.id]}
        if len(picked) < n and not ids & used:
            picked.append(q)
            used |= ids
    return picked


def forget_episode(episode: Episode, s: ForgetSettings) -> Episode:
    """One episode as a stream with forget requests and corrections (see the module doc)."""
    rng = random.Random(content_id(s.seed, episode.id))
    spans = {q.id: evidence_units(q, episode.units) for q in episode.questions}
    # open questions only: a multiple-choice one has no answer text to delete or correct
    eligible = [q for q in episode.questions if spans[q.id] and q.answers and not q.options]
    shuffled = rng.sample(eligible, len(eligible))
    chosen = sorted(disjoint(shuffled, spans, s.facts), key=episode.questions.index)
    after: dict[int, list[Unit]] = {}  # old position -> event units inserted after that unit
    events: dict[str, tuple[Unit, Update, str]] = {}  # question id -> (event, gold, new answer)
    for i, q in enumerate(chosen):
        kind = s.mode if s.mode != "mixed" else ("deletion", "correction")[i % 2]
        ids = [u.id for u in spans[q.id]]
        if kind == "deletion":
            event = event_unit(episode, q, kind, s.request_text, ids, s.method)
            update = Update(kind, forgotten_units=tuple(ids), superseded_answer=q.answers[0])
            events[q.id] = (event, update, s.abstain_answer)
        else:
            value = s.replacements[rng.randrange(len(s.replacements))]
            text = s.correction_text.format(question=q.text, value=value)
            event = event_unit(episode, q, kind, text, [])
            update = Update(
                kind,
                superseded_units=tuple(ids),
                current_units=(event.id,),
                superseded_answer=q.answers[0],
            )
            events[q.id] = (event, update, value)
        last = max(u.position for u in spans[q.id])
        at = last if s.position == "after_evidence" else len(episode.units) - 1
        after.setdefault(at, []).append(event)
    stream, new_pos = [], {}
    for u in episode.units:
        new_pos[u.position] = len(stream)
        stream.append(u)
        stream.extend(after.get(u.position, []))
    new_pos[len(episode.units)] = len(stream)
    units = [replace(u, position=i) for i, u in enumerate(stream)]
    position_of = {u.id: u.position for u in units}
    forgotten = {u for _, g, _ in events.values() for u in g.forgotten_units}
    questions, dropped = [], 0
    for q in episode.questions:
        if q.id in events:
            event, update, answer = events[q.id]
            at = position_of[event.id]
            evidence = (
                ()
                if update.kind == "deletion"
                else (Evidence(event.source_id, event.text, at, at + 1),)
            )
            questions.append(
                replace(q, answers=(answer,), update=update, evidence=evidence, position=len(units))
            )
        elif spans[q.id] and forgotten & {u.id for u in spans[q.id]}:
            dropped += 1
        else:
            questions.append(shifted(q, new_pos))
    meta = {**episode.metadata, "forgetting": {"changed": len(events), "dropped": dropped}}
    return Episode(episode.id, units, questions, meta)


def shifted(question: Question, new_pos: Mapping[int, int]) -> Question:
    """A question left as it was, with its position and evidence spans in the new stream."""
    evidence = tuple(
        e
        if e.position is None
        else replace(
            e,
            position=new_pos[e.position],
            end=None if e.end is None else new_pos[e.end - 1] + 1,
        )
        for e in question.evidence
    )
    return replace(question, position=new_pos[question.position], evidence=evidence)


KNOWLEDGE_UPDATE = (
    "knowledge-update"  # LongMemEval's question type whose answer changed in the stream
)


def knowledge_update(question: Question, units: Sequence[Unit]) -> Question:
    """A LongMemEval knowledge-update question with its gold as an ``Update``: its evidence spans in
    stream (date) order, the last one holding the current value and the earlier ones superseded. The
    old value is not in the gold, so ``stale_answer`` is not scored (only ``stale_retrieval``)."""
    if question.categories.get("type") != KNOWLEDGE_UPDATE or question.update:
        return question  # checked first: apply() passes every question of every dataset here
    spans = [
        [u.id for u in units[e.position : e.end]]
        for e in sorted(question.evidence, key=lambda e: e.position or 0)
        if e.position is not None and e.end is not None
    ]
    if len(spans) < 2:
        return question
    superseded = tuple(u for span in spans[:-1] for u in span)
    return replace(
        question,
        update=Update("correction", superseded_units=superseded, current_units=tuple(spans[-1])),
    )


def mark_knowledge_updates(dataset: Dataset) -> Dataset:
    """Every knowledge-update question with its ``Update`` gold (the dataset itself when none)."""
    episodes = []
    for e in dataset.episodes:
        questions = [knowledge_update(q, e.units) for q in e.questions]
        same = all(a is b for a, b in zip(questions, e.questions, strict=True))
        episodes.append(e if same else replace(e, questions=questions))
    if all(a is b for a, b in zip(episodes, dataset.episodes, strict=True)):
        return dataset
    return replace(dataset, episodes=episodes)


def apply(dataset: Dataset, section: Mapping[str, Any] | None) -> Dataset:
    """The dataset with its knowledge-update gold marked and, with ``section``, every episode made a
    forgetting stream."""
    dataset = mark_knowledge_updates(dataset)
    s = settings_of(section)
    if s is None:
        return dataset
    episodes = [forget_episode(e, s) for e in dataset.episodes]
    if not any(e.metadata["forgetting"]["changed"] for e in episodes):
        raise DatasetError(
            f"dataset.forget: no question of {dataset.name} has gold evidence given as unit spans; "
            "the forgetting suite needs them (the sample's dialogues, LoCoMo, LongMemEval, MSC-E)"
        )
    counts = {
        "changed": sum(e.metadata["forgetting"]["changed"] for e in episodes),
        "dropped": sum(e.metadata["forgetting"]["dropped"] for e in episodes),
        **{
            k: v for k, v in vars(s).items() if k in ("facts", "mode", "position", "seed", "method")
        },
    }
    return replace(dataset, episodes=episodes, metadata={**dataset.metadata, "forgetting": counts})
