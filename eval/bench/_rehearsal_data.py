"""Data for the rehearsal: LongMemEval-S-shaped files at a chosen size, and the overrides that load them.

Two makers behind one call (``make_data``): ``synth`` runs ``memharness synth KIND --out DIR
--questions N --tokens T --seed S`` (issue 46 item 2: topic-structured text at real sizes) and reads
the Hydra overrides it wrote to ``DIR/synth.json``; ``fixture`` grows the LongMemEval test fixture
(tests/fixtures/longmemeval, the exact upstream schema) to N questions, each haystack padded with
filler sessions built from the fixture's own turns to about T tokens, the question's own sessions
(its gold evidence) kept. ``auto`` takes ``synth`` when the subcommand exists.
"""

from __future__ import annotations

import functools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from memharness.eval.bench import REPO
from memharness.memsys.services import files as fileio

FIXTURE = REPO / "tests" / "fixtures" / "longmemeval" / "longmemeval_s_cleaned.json"
WORDS_PER_TOKEN = 0.75  # cl100k on English prose: ~0.75 words a token
TURN_WORDS = 170  # LongMemEval-S: ~115k tokens over ~500 turns, ~230 tokens (~170 words) a turn
SESSION_TURNS = 10


def _filler_session(rng: random.Random, texts: list[str], turns: int, tag: str) -> list[dict]:
    """One chat session of ``turns`` turns, each ~TURN_WORDS words of fixture sentences."""
    session = []
    for t in range(turns):
        words: list[str] = []
        while len(words) < TURN_WORDS:
            words += rng.choice(texts).split()
        role = "user" if t % 2 == 0 else "assistant"
        session.append({"role": role, "content": " ".join(words[:TURN_WORDS]) + f" ({tag}.{t})"})
    return session


def _grown_record(
    record: dict, copy: int, rng: random.Random, texts: list[str], tokens: int
) -> dict:
    """``record`` as copy ``copy``: own ids, its sessions kept, filler sessions up to ~``tokens``."""
    rec = json.loads(json.dumps(record))
    qid = rec["question_id"]
    base, abstain = (qid[: -len("_abs")], True) if qid.endswith("_abs") else (qid, False)
    rec["question_id"] = f"{base}-r{copy}" + ("_abs" if abstain else "")
    rec["haystack_session_ids"] = [f"{s}-r{copy}" for s in rec["haystack_session_ids"]]
    rec["answer_session_ids"] = [f"{s}-r{copy}" for s in rec["answer_session_ids"]]
    have = sum(len(m["content"].split()) for s in rec["haystack_sessions"] for m in s)
    missing_turns = max(0, int(tokens * WORDS_PER_TOKEN - have) // TURN_WORDS)
    first_date = rec["haystack_dates"][0]
    k = 0
    while missing_turns > 0:  # filler goes before the question's own sessions (same first date)
        n = min(SESSION_TURNS, missing_turns)
        rec["haystack_sessions"].insert(k, _filler_session(rng, texts, n, f"f{copy}.{k}"))
        rec["haystack_session_ids"].insert(k, f"filler-{copy}-{k}")
        rec["haystack_dates"].insert(k, first_date)
        missing_turns -= n
        k += 1
    return rec


def fixture_longmemeval(out: Path, questions: int, tokens: int, seed: int) -> dict[str, Any]:
    """Write ``out/longmemeval_s_cleaned.json``: ``questions`` records in the upstream schema, each
    haystack ~``tokens`` tokens; returns ``{"overrides": [...], "questions", "units", "tokens"}``."""
    if questions < 1 or tokens < 1:
        raise ValueError(f"questions and tokens must be positive, got {questions} and {tokens}")
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    texts = [m["content"] for r in records for s in r["haystack_sessions"] for m in s]
    rng = random.Random(seed)
    grown = [
        _grown_record(records[i % len(records)], i, rng, texts, tokens) for i in range(questions)
    ]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "longmemeval_s_cleaned.json"
    fileio.write_text(path, json.dumps(grown))
    units = sum(len(s) for r in grown for s in r["haystack_sessions"])
    words = sum(len(m["content"].split()) for r in grown for s in r["haystack_sessions"] for m in s)
    return {
        "overrides": ["dataset=longmemeval", f"dataset.loader.path={path}"],
        "questions": questions,
        "units": units,
        "tokens": int(words / WORDS_PER_TOKEN),
        "maker": "fixture",
    }


@functools.cache
def cli_has(subcommand: str) -> bool:
    """Whether ``memharness --help`` lists ``subcommand`` (asked in a child: a bench never imports
    the command line, which sits beside it)."""
    done = subprocess.run([sys.executable, "-c", CLI, "--help"], capture_output=True, text=True)
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")]
    return subcommand in listed


def synth_available() -> bool:
    return cli_has("synth")


def synth_longmemeval(out: Path, questions: int, tokens: int, seed: int) -> dict[str, Any]:
    """``memharness synth longmemeval_s`` (issue 46 item 2) into ``out``; its ``synth.json``."""
    cmd = [sys.executable, "-c", CLI, "synth", "longmemeval_s", "--out", str(out)]
    cmd += ["--questions", str(questions), "--tokens", str(tokens), "--seed", str(seed)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"memharness synth failed ({done.returncode}): {done.stderr[-400:]}")
    info = json.loads((out / "synth.json").read_text(encoding="utf-8"))
    if not info.get("overrides"):
        raise RuntimeError(f"{out / 'synth.json'} lists no overrides")
    return {"questions": questions, "tokens": tokens, **info, "maker": "synth"}


CLI = "import sys; from memharness.eval.cli.command import main; sys.argv[0] = 'memharness'; main()"


def make_data(maker: str, out: Path, questions: int, tokens: int, seed: int) -> dict[str, Any]:
    """LongMemEval-S-shaped data by ``maker`` (``auto`` | ``synth`` | ``fixture``)."""
    if maker not in ("auto", "synth", "fixture"):
        raise ValueError(f"unknown data maker {maker!r}; expected auto, synth or fixture")
    if maker == "synth" or (maker == "auto" and synth_available()):
        return synth_longmemeval(out, questions, tokens, seed)
    return fixture_longmemeval(out, questions, tokens, seed)


LOCOMO_FIXTURE = REPO / "tests" / "fixtures" / "locomo" / "locomo10.json"


def fixture_locomo(out: Path, conversations: int, tokens: int, seed: int) -> dict[str, Any]:
    """Write ``out/locomo10.json``: ``conversations`` LoCoMo samples in the upstream schema, each
    the fixture's conversation (its sessions, questions and evidence kept) followed by filler
    sessions of its own speakers up to ~``tokens`` tokens; the questions are asked after it all."""
    samples = json.loads(LOCOMO_FIXTURE.read_text(encoding="utf-8"))
    texts = [
        t["text"]
        for s in samples
        for k, v in s["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for t in v
    ]
    rng = random.Random(seed)
    grown = []
    for i in range(conversations):
        sample = json.loads(json.dumps(samples[i % len(samples)]))
        sample["sample_id"] = f"{sample['sample_id']}-r{i}"
        conv = sample["conversation"]
        numbers = [int(k.split("_")[1]) for k in conv if k.count("_") == 1 and k[8:].isdigit()]
        have = sum(len(t["text"].split()) for n in numbers for t in conv[f"session_{n}"])
        missing = max(0, int(tokens * WORDS_PER_TOKEN - have) // TURN_WORDS)
        last, date = max(numbers), conv[f"session_{max(numbers)}_date_time"]
        while missing > 0:
            last += 1
            n = min(SESSION_TURNS, missing)
            speakers = (conv["speaker_a"], conv["speaker_b"])
            conv[f"session_{last}_date_time"] = date
            conv[f"session_{last}"] = [
                {"speaker": speakers[t % 2], "dia_id": f"D{last}:{t + 1}", "text": m["content"]}
                for t, m in enumerate(_filler_session(rng, texts, n, f"f{i}.{last}"))
            ]
            missing -= n
        grown.append(sample)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "locomo10.json"
    fileio.write_text(path, json.dumps(grown))
    return {
        "overrides": ["dataset=locomo", f"dataset.loader.path={path}"],
        "questions": sum(len(s["qa"]) for s in grown),
        "maker": "fixture",
    }
