"""LoCoMo-shaped ``locomo10.json``: conversations between two speakers over dated sessions.

Each record has the upstream keys (sample_id, conversation with speaker_a / speaker_b and
``session_<n>`` / ``session_<n>_date_time``, event_summary, observation, session_summary, qa).
Turns carry ``dia_id`` ``D<session>:<turn>``; a few share an image (``img_url``, ``blip_caption``,
``query``). QA items follow the released category counts (1 multi-hop 282, 2 temporal 321,
3 open-domain 96, 4 single-hop 841, 5 adversarial 446 of 1,986) with evidence dia_ids on the turns
that state them; a category-5 item has ``adversarial_answer`` and no ``answer``, as 444 of the 446
released ones. JSON holds a conversation whole (its qa list follows its turns): one conversation
is in memory at a time, the file is written record by record.
"""

from __future__ import annotations

import json
import math
import random
from bisect import bisect_right
from collections.abc import Iterator
from datetime import timedelta
from itertools import accumulate
from pathlib import Path

from memharness.data_prep.synth.text import (
    HELPER,
    USER_TEMPLATES,
    Filler,
    Values,
    allocate,
    fact_kind,
    gold,
    hex_id,
    say_fact,
    spread,
    start_date,
    written,
)
from memharness.data_prep.synth.vocabulary import FIRST_NAMES, TOPICS, Topic

CATEGORIES = {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}  # released counts (of 1,986)
REAL_TOKENS = 17_500  # ~134k words / 10 conversations at ~1.3 cl100k tokens per word
SESSION_TOKENS = 650  # ~22 turns of ~30 tokens; 27 sessions at the real size (released: 19-32)
TURN_TOKENS = 30
MAX_SESSIONS = 35  # the release has date keys up to session 35
FILE = "locomo10.json"


def plan_facts(
    cats: list[int],
    speakers: tuple[str, str],
    topics: Iterator[Topic],
    rng: random.Random,
    values: Values,
) -> tuple[list[dict], list[dict]]:
    """Planted turns (speaker, text, qa index) and QA items whose evidence is filled in later;
    ``topics`` gives each planted turn its session's topic, in order."""
    turns, qa = [], []
    for cat in cats:
        who = rng.choice(speakers)
        other = speakers[1] if who == speakers[0] else speakers[0]
        topic = next(topics)
        kind = fact_kind(rng, values) if cat > 2 else HELPER
        what = "event" if cat == 2 else kind.name  # one question per subject and kind of fact
        noun = values.subject(what, topic.nouns)
        noun2 = values.subject(what, next(topics).nouns) if cat == 1 else ""
        item: dict = {"question": "", "answer": "", "evidence": [], "category": cat}
        start = len(turns)
        if cat == 1:  # two statements, one answer each, comma-joined as the release does
            names = [values.draw(HELPER), values.draw(HELPER)]
            turns += [
                {"speaker": who, "text": say_fact(HELPER, "I", n, v, rng)}
                for n, v in zip((noun, noun2), names, strict=True)
            ]
            item.update(
                question=f"Who helped {who} with the {noun} and the {noun2}?",
                answer=", ".join(names),
            )
        elif cat == 2:  # an event on the session's day: the gold is that date
            event = f"{noun} meetup at {rng.choice(topic.places)}"
            turns.append({"speaker": who, "text": f"I went to the {event} today.", "dated": True})
            item["question"] = f"When did {who} go to the {event}?"
        else:
            value = values.draw(kind)
            turns.append({"speaker": who, "text": say_fact(kind, "I", noun, value, rng)})
            asked = other if cat == 5 else who  # category 5 asks about the other speaker
            question = kind.ask_3rd.format(who=asked, poss="their", noun=noun)
            if cat == 3:
                question = f"Judging by what they said, {question[0].lower()}{question[1:]}"
            item["question"] = question
            if cat == 5:
                del item["answer"]
                item["adversarial_answer"] = value
            else:
                item["answer"] = gold(kind, value)
        for t in turns[start:]:
            t["qa"] = len(qa)
        qa.append(item)
    return turns, qa


def session_date_time(when) -> str:
    """``1:56 pm on 8 May, 2023`` (the release's form)."""
    hour = when.hour % 12 or 12
    return (
        f"{hour}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when:%B, %Y}"
    )


def conversation(k: int, n_qa: int, tokens: int, seed: int) -> tuple[dict, int]:
    """One record and its tokens (turn texts)."""
    rng = random.Random(f"{seed}:locomo:{k}")
    speakers = tuple(rng.sample(FIRST_NAMES, 2))
    cats = [c for c, n in allocate(n_qa, CATEGORIES).items() for _ in range(n)]
    rng.shuffle(cats)
    n_plants = len(cats) + cats.count(1)  # a multi-hop item states two facts
    n_sessions = min(MAX_SESSIONS, max(1, round(tokens / SESSION_TOKENS)))
    per_session = spread(max(n_plants, round(tokens / TURN_TOKENS)), n_sessions)
    session_topics = [rng.choice(TOPICS) for _ in per_session]
    slots = sorted(rng.sample(range(sum(per_session)), n_plants))
    ends = list(accumulate(per_session))
    topics = iter([session_topics[bisect_right(ends, g)] for g in slots])
    planted, qa = plan_facts(cats, speakers, topics, rng, Values(rng))
    at = dict(zip(slots, planted, strict=True))
    filler, when = Filler(rng), start_date(rng)
    conv: dict = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    events, observations, summaries, used, g = {}, {}, {}, 0, 0
    planted_tokens = sum(filler.count(p["text"]) for p in planted)
    filler_budget = max(8, (tokens - planted_tokens) // max(1, sum(per_session) - len(planted)))
    for s, n_turns in enumerate(per_session, start=1):
        when += timedelta(days=rng.randrange(4, 21), minutes=rng.randrange(-300, 300))
        stamp = session_date_time(when)
        topic = session_topics[s - 1]
        turns, obs = [], {speakers[0]: [], speakers[1]: []}
        for t in range(1, n_turns + 1):
            dia, plant = f"D{s}:{t}", at.get(g)
            g += 1
            speaker = plant["speaker"] if plant else speakers[(t - 1) % 2]
            if plant:
                text, n = plant["text"], filler.count(plant["text"])
                qa[plant["qa"]]["evidence"].append(dia)
                obs[speaker].append([text, dia])
                if plant.get("dated"):
                    qa[plant["qa"]]["answer"] = f"{when.day} {when:%B %Y}"
            else:
                text, n = filler.fill(topic, filler_budget, USER_TEMPLATES)
            turn = {"speaker": speaker, "dia_id": dia, "text": text}
            if not plant and rng.random() < 0.04:  # a shared photo, captioned as BLIP would
                noun = rng.choice(topic.nouns)
                turn.update(
                    img_url=[f"https://images.example.invalid/{hex_id(rng)}.jpg"],
                    blip_caption=f"a photo of a {noun}",
                    query=noun,
                )
            turns.append(turn)
            used += n
        conv[f"session_{s}_date_time"] = stamp
        conv[f"session_{s}"] = turns
        day = f"{when.day} {when:%B, %Y}"
        events[f"events_session_{s}"] = {
            **{p: [o[0] for o in obs[p]] for p in speakers},
            "date": day,
        }
        observations[f"session_{s}_observation"] = obs
        summaries[f"session_{s}_summary"] = (
            f"{speakers[0]} and {speakers[1]} talked about {topic.name} on {day}."
        )
    record = {
        "sample_id": f"conv-{k + 1}",
        "conversation": conv,
        "event_summary": events,
        "observation": observations,
        "session_summary": summaries,
        "qa": qa,
    }
    return record, used


def write(out: Path, questions: int, tokens: int, seed: int) -> dict:
    """``questions`` QA items over ceil(questions / 199) conversations of ``tokens`` tokens each."""
    n_conv = math.ceil(questions / 199)
    file, per, cats = out / FILE, [], {}
    with open(file, "w", encoding="utf-8") as f:
        f.write("[")
        for k, n_qa in enumerate(spread(questions, n_conv)):
            record, used = conversation(k, n_qa, tokens, seed)
            f.write((",\n" if k else "\n") + json.dumps(record))
            per.append(used)
            for item in record["qa"]:
                cats[str(item["category"])] = cats.get(str(item["category"]), 0) + 1
        f.write("\n]\n")
    overrides = ["dataset=locomo", f"dataset.loader.path={out}", "dataset.loader.sha256=null"]
    return written([file], overrides, per, questions, cats)


def min_tokens(questions: int) -> int:
    """Every planted turn (~1.2 per question) at ~25 tokens, in the fullest conversation."""
    return 30 * math.ceil(questions / math.ceil(questions / 199)) + 60
