"""LongMemEval-S / -M shaped files (``longmemeval_{s,m}_cleaned.json``), one haystack per question.

Every record has the upstream fields in the upstream order (question_id, question_type, question,
answer, question_date, haystack_session_ids, haystack_dates, haystack_sessions,
answer_session_ids); the turns stating a planted fact carry ``has_answer: true``. Question types
follow the released counts (ssu 70, ssa 56, ssp 30, temporal 133, knowledge-update 78,
multi-session 133 of 500) and 30 of 500 are abstention items (``_abs``) drawn from the user,
temporal, knowledge-update and multi-session types. Written one session at a time: the whole file
is never held, one record's plan (ids, dates, facts) is.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import IO

from memharness.data_prep.synth.text import (
    ASSISTANT_TEMPLATES,
    FACT_KINDS,
    HELPER,
    USER_TEMPLATES,
    Filler,
    Values,
    allocate,
    fact_kind,
    gold,
    hex_id,
    say_fact,
    start_date,
    written,
)
from memharness.data_prep.synth.vocabulary import TOPICS, Topic

TYPE_COUNTS = {  # of the 500 released questions
    "single-session-user": 70,
    "single-session-assistant": 56,
    "single-session-preference": 30,
    "temporal-reasoning": 133,
    "knowledge-update": 78,
    "multi-session": 133,
}
ABSTENTION_SHARE = 30 / 500
ABSTAINING_TYPES = (
    "single-session-user",
    "temporal-reasoning",
    "knowledge-update",
    "multi-session",
)
SESSIONS = {"s": 40, "m": 500}  # sessions per haystack at the real size (115k / 1.5M tokens)
REAL_TOKENS = {"s": 115_000, "m": 1_500_000}
ROUND_TOKENS = 480  # a user turn (~1/4) plus an assistant reply (~3/4)
DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
FILES = {"s": "longmemeval_s_cleaned.json", "m": "longmemeval_m_cleaned.json"}


@dataclass
class Plant:
    """A round to plant in evidence session ``session``: the user's lead, optionally the
    assistant's, and which of the two states the answer (``has_answer``)."""

    session: int
    text: str
    topic: Topic
    reply: str = ""
    marked: str = "user"


@dataclass
class Plan:
    qid: str
    qtype: str
    question: str
    answer: str | int  # a year is an integer gold, as the release has a few
    plants: list[Plant] = field(default_factory=list)


def plan_question(qtype: str, abstain: bool, rng: random.Random, values: Values) -> Plan:
    """The question, its gold and the turns stating it (sessions numbered 0.. in time order)."""
    topics = rng.sample(TOPICS, 3)
    nouns = [rng.choice(t.nouns) for t in topics]
    kind = fact_kind(rng, values)
    qid = hex_id(rng)
    if qtype == "single-session-assistant":
        kind = rng.choice(FACT_KINDS[:3])  # a suggestion: a name, a shop or a maker
        value = values.draw(kind)
        ask = f"Could you suggest something for my {nouns[0]}? I need a {kind.name} idea."
        reply = f"For the {nouns[0]}, I would go with {value}; it suits what you described."
        return Plan(
            qid,
            qtype,
            f"What {kind.name} did you suggest for my {nouns[0]}?",
            value,
            [Plant(0, ask, topics[0], reply, "assistant")],
        )
    if qtype == "single-session-preference":
        pref = f"{rng.choice(topics[0].adjectives)} {rng.choice(topics[0].nouns)}"
        text = f"When it comes to the {nouns[0]}, I really prefer anything with a {pref}."
        answer = f"The user would prefer suggestions involving a {pref}."
        return Plan(
            qid,
            qtype,
            f"Any ideas for what to try next with my {nouns[0]}?",
            answer,
            [Plant(0, text, topics[0])],
        )
    if qtype == "temporal-reasoning":
        events = [
            f"{n} meetup at {rng.choice(t.places)}" for n, t in zip(nouns, topics, strict=True)
        ][:2]
        first, second = events if rng.random() < 0.5 else events[::-1]
        plants = [
            Plant(0, f"I went to the {events[0]} today.", topics[0]),
            Plant(1, f"I went to the {events[1]} today.", topics[1]),
        ]
        question = f"Which did I attend first, the {first} or the {second}?"
        plan = Plan(qid, qtype, question, f"the {events[0]}", plants)
    elif qtype == "knowledge-update":
        old, new = values.draw(kind), values.draw(kind)
        plants = [
            Plant(0, say_fact(kind, "I", nouns[0], old, rng), topics[0]),
            Plant(
                1,
                f"{kind.update.format(noun=nouns[0])} " + say_fact(kind, "I", nouns[0], new, rng),
                topics[0],
            ),
        ]
        plan = Plan(qid, qtype, kind.ask_you.format(noun=nouns[0]), gold(kind, new), plants)
    elif qtype == "multi-session":
        k = 2 + (rng.random() < 0.5)
        names = [values.draw(HELPER) for _ in range(k)]
        plants = [
            Plant(i, say_fact(HELPER, "I", nouns[i], names[i], rng), topics[i]) for i in range(k)
        ]
        question = f"Who helped me with the {', the '.join(nouns[: k - 1])} and the {nouns[k - 1]}?"
        plan = Plan(qid, qtype, question, ", ".join(names[:-1]) + " and " + names[-1], plants)
    else:  # single-session-user
        value = values.draw(kind)
        plan = Plan(
            qid,
            qtype,
            kind.ask_you.format(noun=nouns[0]),
            gold(kind, value),
            [Plant(0, say_fact(kind, "I", nouns[0], value, rng), topics[0])],
        )
    if abstain:  # asked about a thing never mentioned; the planted turns stay (as upstream)
        other = rng.choice([n for n in topics[2].nouns if n not in nouns])
        plan.qid += "_abs"
        plan.question = f"{kind.ask_you.format(noun=other)}"
        plan.answer = f"You did not mention this information. You never told me about a {other}."
    return plan


def question_types(n: int, rng: random.Random) -> list[tuple[str, bool]]:
    """``n`` (type, abstention) pairs in the released proportions, in a seeded order."""
    counts = allocate(n, TYPE_COUNTS)
    types = [t for t, c in counts.items() for _ in range(c)]
    rng.shuffle(types)
    eligible = [i for i, t in enumerate(types) if t in ABSTAINING_TYPES]
    abstaining = set(rng.sample(eligible, min(len(eligible), round(n * ABSTENTION_SHARE))))
    return [(t, i in abstaining) for i, t in enumerate(types)]


def write_session(
    f: IO[str], filler: Filler, budget: int, plants: list[Plant], rng: random.Random
) -> int:
    """One session as a JSON list of turns on one topic (its planted rounds' topic), planted rounds
    at seeded places; returns its tokens."""
    topic = plants[0].topic if plants else rng.choice(TOPICS)
    rounds = max(1, round(budget / ROUND_TOKENS), len(plants))
    where = dict(zip(sorted(rng.sample(range(rounds), len(plants))), plants, strict=True))
    per_round, used, turns = budget / rounds, 0, []
    for r in range(rounds):
        plant = where.get(r)
        user, nu = filler.fill(
            topic, int(per_round / 4), USER_TEMPLATES, plant.text if plant else ""
        )
        reply, na = filler.fill(
            topic, int(per_round * 3 / 4), ASSISTANT_TEMPLATES, plant.reply if plant else ""
        )
        turns += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
        if plant:
            turns[-2 if plant.marked == "user" else -1]["has_answer"] = True
        used += nu + na
    f.write(json.dumps(turns))
    return used


def write_record(
    f: IO[str], i: int, qtype: str, abstain: bool, tokens: int, split: str, seed: int
) -> tuple[int, dict[str, int]]:
    """One record, session by session; returns its tokens and its type tally."""
    rng = random.Random(f"{seed}:longmemeval:{i}")
    plan = plan_question(qtype, abstain, rng, Values(rng))
    evidence_sessions = 1 + max(p.session for p in plan.plants)
    n = max(evidence_sessions + 1, round(SESSIONS[split] * tokens / REAL_TOKENS[split]))
    slots = sorted(rng.sample(range(n), evidence_sessions))
    ids = [f"{rng.choice(('sharegpt', 'ultrachat'))}_{hex_id(rng, 7)}_{k}" for k in range(n)]
    for j, s in enumerate(slots):
        ids[s] = f"answer_{plan.qid.removesuffix('_abs')}_{j + 1}"
    when, gap = start_date(rng), timedelta(minutes=max(30, 150 * 24 * 60 // n))
    dates = []
    for _ in range(n):
        when += gap * (0.5 + rng.random())
        dates.append(when.strftime(DATE_FORMAT))
    head = {
        "question_id": plan.qid,
        "question_type": qtype,
        "question": plan.question,
        "answer": plan.answer,
        "question_date": (when + timedelta(hours=rng.randrange(1, 72))).strftime(DATE_FORMAT),
        "haystack_session_ids": ids,
        "haystack_dates": dates,
    }
    f.write(json.dumps(head)[:-1] + ', "haystack_sessions": [')
    filler, used, budget = Filler(rng), 0, tokens // n
    for k in range(n):
        mine = [p for p in plan.plants if slots[p.session] == k] if k in slots else []
        f.write(", " if k else "")
        used += write_session(f, filler, budget, mine, rng)
    answers = [ids[s] for s in slots]
    f.write('], "answer_session_ids": ' + json.dumps(answers) + "}")
    return used, {qtype + ("_abs" if abstain else ""): 1}


def write(out: Path, questions: int, tokens: int, seed: int, split: str = "s") -> dict:
    """Write ``questions`` records of ``tokens``-token haystacks; what the CLI reports."""
    file = out / FILES[split]
    types = question_types(questions, random.Random(f"{seed}:longmemeval:types"))
    per_record, tally = [], {}
    with open(file, "w", encoding="utf-8") as f:
        f.write("[")
        for i, (qtype, abstain) in enumerate(types):
            f.write(",\n" if i else "\n")
            used, kinds = write_record(f, i, qtype, abstain, tokens, split, seed)
            per_record.append(used)
            for k, v in kinds.items():
                tally[k] = tally.get(k, 0) + v
        f.write("\n]\n")
    overrides = [
        "dataset=longmemeval",
        f"dataset.loader.path={out}",
        f"dataset.loader.split={split}",
    ]
    return written([file], overrides, per_record, questions, tally)


def min_tokens(questions: int) -> int:
    """The smallest haystack that holds a question's evidence sessions with some filler."""
    return 4 * ROUND_TOKENS
