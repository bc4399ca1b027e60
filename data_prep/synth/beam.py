"""BEAM-shaped rows (``100K.jsonl`` / ``500K.jsonl`` / ``1M.jsonl``; ``10M.jsonl`` with ``plans``).

A row is one conversation with the Hub's keys (conversation_id, conversation_seed, narratives,
user_profile, conversation_plan, user_questions, chat = batches of messages {role, id, content,
and on user messages index, question_type, the batch's first one time_anchor}, probing_questions =
a Python-literal string of ability -> questions with their ability's fields, ``source_chat_ids``
and ``rubric``); a 10M row holds its conversation in ``plans[*].chat``, a plan per ~1M tokens.
Message ids run on across plans (the statements a question points at stay unambiguous). Twenty
questions a conversation, two per ability, as released. A row is written batch by batch; only the
probing questions (small) wait for the end of the line.
"""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

from memharness.data_prep.beam import ABILITIES  # the loader's ten abilities: one list
from memharness.data_prep.synth.beam_questions import plan_probe
from memharness.data_prep.synth.text import (
    ASSISTANT_TEMPLATES,
    USER_TEMPLATES,
    Filler,
    Values,
    spread,
    written,
)
from memharness.data_prep.synth.vocabulary import FIRST_NAMES, TOPICS

PER_CONVERSATION = 20  # two questions per ability
ROUND_TOKENS = 300  # a user message (~1/4) and the assistant's reply
BATCH_ROUNDS = 20
PLAN_TOKENS = 1_000_000  # a 10M row's plan
SCALES = ((300_000, "128k", "100K"), (750_000, "500k", "500K"), (2_000_000, "1m", "1M"))


def scale_of(tokens: int) -> tuple[str, str]:
    """(loader scale, Hub split) for a conversation of ``tokens``; beyond 2M the 10M row form."""
    return next(((s, f) for top, s, f in SCALES if tokens <= top), ("10m", "10M"))


def write_batches(f: IO[str], rounds: int, start_id: int, ctx: dict, b0: int) -> tuple[int, int]:
    """``rounds`` rounds as a JSON list of batches; returns the next message id and the tokens."""
    rng, filler, at, topic = ctx["rng"], ctx["filler"], ctx["at"], ctx["topic"]
    mid, used = start_id, 0
    f.write("[")
    for b, n in enumerate(spread(rounds, max(1, math.ceil(rounds / BATCH_ROUNDS)))):
        ctx["when"] += timedelta(days=rng.randrange(1, 6))
        batch = []
        for t in range(1, n + 1):
            g = ctx["round"]
            ctx["round"] += 1
            lead, tag = at.get(g, ("", None)), f"{b0 + b + 1},{t}"
            text, nu = filler.fill(topic, ROUND_TOKENS // 4, USER_TEMPLATES, lead[0])
            msg = {"role": "user", "id": mid, "content": f"{text} ->-> {tag}"}
            if t == 1:
                msg["time_anchor"] = ctx["when"].strftime("%B-%d-%Y")
            msg.update(index=tag, question_type="main_question")
            if lead[1] is not None:
                lead[1](mid)  # the question that points at this statement records its id
            reply, na = filler.fill(topic, ROUND_TOKENS * 3 // 4, ASSISTANT_TEMPLATES)
            batch += [msg, {"role": "assistant", "id": mid + 1, "content": reply}]
            mid += 2
            used += nu + na + filler.count(f" ->-> {tag}")
        f.write((", " if b else "") + json.dumps(batch))
    f.write("]")
    ctx["batches"] = b0 + b + 1
    return mid, used


def place_statements(probes: list[dict], rounds: int, rng: random.Random) -> dict:
    """Round -> (statement, callback recording its message id); a question's statements in order."""
    free, at = list(range(rounds)), {}
    for probe in probes:
        slots = sorted(rng.sample(free, len(probe["_statements"])))
        for slot, (text, record) in zip(slots, probe["_statements"], strict=True):
            at[slot] = (text, record)
        taken = set(slots)
        free = [s for s in free if s not in taken]
    return at


def conversation(f: IO[str], k: int, n_q: int, tokens: int, seed: int) -> tuple[int, dict]:
    """One row, written as it is made; returns its tokens and its ability tally."""
    rng = random.Random(f"{seed}:beam:{k}")
    topic, user = rng.choice(TOPICS), rng.choice(FIRST_NAMES)
    values = Values(rng)
    probes = [plan_probe(ABILITIES[i % len(ABILITIES)], topic, rng, values) for i in range(n_q)]
    rounds = max(sum(len(p["_statements"]) for p in probes), round(tokens / ROUND_TOKENS))
    ctx = {
        "rng": rng,
        "filler": Filler(rng),
        "topic": topic,
        "round": 0,
        "at": place_statements(probes, rounds, rng),
        "when": datetime(2024, 1, 1) + timedelta(days=rng.randrange(120)),
    }
    head = {
        "conversation_id": str(k + 1),
        "conversation_seed": {
            "category": topic.name.title(),
            "title": f"{topic.name.title()} {k + 1}",
        },
        "narratives": f"Label: {topic.name}",
        "user_profile": {"user_info": f"Name: {user}", "user_relationships": "none"},
    }
    n_plans = max(1, round(tokens / PLAN_TOKENS)) if scale_of(tokens)[0] == "10m" else 0
    if n_plans:
        del head["narratives"]
        head["chat"] = [{f"plan-{p + 1}": None for p in range(n_plans)}]
        f.write(json.dumps(head)[:-1] + ', "plans": [')
        mid, used = 0, 0
        for p, n in enumerate(spread(rounds, n_plans)):
            f.write(", " if p else "")
            f.write('{"chat": ')
            b0 = ctx.get("batches", 0)
            mid, u = write_batches(f, n, mid, ctx, b0)
            used += u
            plan = "\n".join(f"BATCH {b + 1} PLAN" for b in range(b0, ctx["batches"]))
            f.write(
                ', "conversation_plan": ' + json.dumps(plan) + ', "conversation_seed": {}, '
                '"narratives": "", "user_profile": {"user_relationships": ""}, '
                '"user_questions": []}'
            )
        f.write("]")
    else:
        n_batches = max(1, math.ceil(rounds / BATCH_ROUNDS))
        head["conversation_plan"] = "\n".join(f"BATCH {b + 1} PLAN" for b in range(n_batches))
        head["user_questions"] = []
        f.write(json.dumps(head)[:-1] + ', "chat": ')
        _, used = write_batches(f, rounds, 0, ctx, 0)
    questions: dict[str, list] = {}
    for probe in probes:
        ability = probe.pop("_ability")
        probe.pop("_statements")
        questions.setdefault(ability, []).append(probe)
    f.write(', "probing_questions": ' + json.dumps(repr(questions)) + "}\n")
    return used, {a: len(v) for a, v in questions.items()}


def write(out: Path, questions: int, tokens: int, seed: int) -> dict:
    """ceil(questions / 20) conversations of ``tokens`` tokens, in the split file of that size."""
    scale, split = scale_of(tokens)
    file, n_conv = out / f"{split}.jsonl", math.ceil(questions / PER_CONVERSATION)
    per, tally = [], {}
    with open(file, "w", encoding="utf-8") as f:
        for k, n_q in enumerate(spread(questions, n_conv)):
            used, abilities = conversation(f, k, n_q, tokens, seed)
            per.append(used)
            for a, n in abilities.items():
                tally[a] = tally.get(a, 0) + n
    overrides = ["dataset=beam", f"dataset.loader.scale={scale}", f"dataset.loader.path={out}"]
    return written([file], overrides, per, questions, tally)


def min_tokens(questions: int) -> int:
    """A round per planted statement (at most 1.7 per question) in the fullest conversation."""
    return 2 * ROUND_TOKENS * math.ceil(questions / math.ceil(questions / PER_CONVERSATION))
