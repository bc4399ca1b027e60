"""NovelQA-shaped books: ``Books/PublicDomain/Bxx.txt``, ``Data/PublicDomain/Bxx.json``, ``bookmeta.json``
(in DIR itself, so ``dataset.loader.path=DIR`` loads them).

A book is chapters of narrative on one topic each, with its own cast; planted sentences state what
its multiple-choice questions ask (``QID``, ``Aspect``, ``Complexity``, ``Question``, ``Options``
A-D or A-B, ``Gold``: the fields of the release plus the gold letter it withholds). About 26
questions a book (2,305 over 89 books). The text is written chapter by chapter, never held whole.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

from memharness.data_prep.synth.text import (
    FACT_KINDS,
    HELPER,
    NARRATIVE_TEMPLATES,
    Filler,
    Values,
    allocate,
    say_fact,
    spread,
    written,
)
from memharness.data_prep.synth.vocabulary import FIRST_NAMES, TOPICS

PER_BOOK = 26  # 2,305 questions / 89 books
CHAPTER_TOKENS = 4_000
PARAGRAPH_TOKENS = 120
ASPECTS = {"character": 4, "plot": 4, "settg": 3, "relat": 4, "times": 4, "span": 4, "meaning": 3}
COMPLEXITY = {
    "character": "sh",
    "plot": "sh",
    "settg": "dtl",
    "relat": "mh",
    "times": "mh",
    "span": "dtl",
    "meaning": "dtl",
}
KIND_OF = {"character": "name", "plot": "shop", "settg": "brand", "meaning": "name"}
LETTERS = "ABCD"


def plan_book(n_q: int, cast: list[str], topics: list, rng: random.Random) -> tuple[list, list]:
    """Planted sentences, in the order they must appear, and the question items."""
    values, plants, items = Values(rng), [], []
    nouns = tuple(n for t in topics for n in t.nouns)
    aspects = [a for a, n in allocate(n_q, ASPECTS).items() for _ in range(n)]
    rng.shuffle(aspects)
    for q, aspect in enumerate(aspects, start=1):
        who, other = rng.sample(cast, 2)
        kind = (
            HELPER
            if aspect == "relat"
            else next((k for k in FACT_KINDS if k.name == KIND_OF.get(aspect)), None)
        )
        noun = values.subject(kind.name if kind else aspect, nouns)  # one question a subject
        item = {"QID": f"Q{q:04d}", "Aspect": aspect, "Complexity": COMPLEXITY[aspect]}
        if aspect == "times":
            k = rng.randint(2, 6)
            plants += [f"{who} wrote a letter to {other} about the {noun}." for _ in range(k)]
            question, gold, wrong = (
                f"How many times did {who} write to {other} about the {noun}?",
                str(k),
                [str(k + d) for d in (-1, 1, 2)],
            )
        elif aspect == "span":
            a, b = rng.sample(topics, 2)
            first, second = (
                f"the {values.subject('fair', t.nouns)} fair at {rng.choice(t.places)}"
                for t in (a, b)
            )
            plants += [f"{who} went to {first}.", f"Much later, {who} went to {second}."]
            question = f"Which did {who} visit first: {first} or {second}?"
            gold, wrong = first, [second]
        else:
            gold = values.draw(kind)
            plants.append(say_fact(kind, who, noun, gold, rng))
            question = kind.ask_3rd.format(who=who, poss="their", noun=noun)
            wrong = [values.draw(kind) for _ in range(3)]
        options = [gold, *wrong]
        rng.shuffle(options)
        item.update(
            Question=question,
            Options=dict(zip(LETTERS, options, strict=False)),
            Gold=LETTERS[options.index(gold)],
        )
        items.append(item)
    return plants, items


def write_book(
    root: Path, b: int, n_q: int, tokens: int, seed: int
) -> tuple[list[Path], int, dict]:
    """One book's text and questions; returns its files, tokens and bookmeta entry."""
    rng = random.Random(f"{seed}:novelqa:{b}")
    cast = rng.sample(FIRST_NAMES, 6)
    topics = [replace(t, people=tuple(cast)) for t in rng.sample(TOPICS, 3)]
    plants, items = plan_book(n_q, cast, topics, rng)
    n_chapters = max(1, round(tokens / CHAPTER_TOKENS))
    n_paragraphs = spread(max(len(plants), round(tokens / PARAGRAPH_TOKENS)), n_chapters)
    slots = sorted(rng.sample(range(sum(n_paragraphs)), len(plants)))
    at = dict(
        zip(slots, plants, strict=True)
    )  # plants stay in plan order (span: first before second)
    filler, book_id, used, g = Filler(rng), f"B{b:02d}", 0, 0
    per_paragraph = max(10, tokens // sum(n_paragraphs))
    text_file = root / "Books" / "PublicDomain" / f"{book_id}.txt"
    text_file.parent.mkdir(parents=True, exist_ok=True)
    sep = filler.count("\n\n")
    with open(text_file, "w", encoding="utf-8") as f:
        for c, n_par in enumerate(n_paragraphs, start=1):
            topic, head = topics[c % len(topics)], f"Chapter {c}."
            f.write(("\n\n" if c > 1 else "") + head)
            used += filler.count(head) + (sep if c > 1 else 0)
            for _ in range(n_par):
                lead = at.get(g, "")
                g += 1
                text, n = filler.fill(topic, per_paragraph, NARRATIVE_TEMPLATES, lead)
                f.write("\n\n" + text)
                used += n + sep
        f.write("\n")
    qa_file = root / "Data" / "PublicDomain" / f"{book_id}.json"
    qa_file.parent.mkdir(parents=True, exist_ok=True)
    qa_file.write_text(json.dumps(items, indent=1) + "\n", encoding="utf-8")
    meta = {
        "title": f"The {topics[0].nouns[0].title()} of {topics[0].places[0].removeprefix('the ').title()}",
        "author": f"{cast[0]} Synth",
        "yearpub": str(1850 + b % 100),
        "period": "19th century",
        "tokenlen": used,
        "copyright": "PublicDomain",
    }
    return [text_file, qa_file], used, meta


def write(out: Path, questions: int, tokens: int, seed: int) -> dict:
    """``questions`` over ceil(questions / 26) books of ``tokens`` tokens each."""
    root, n_books = out, math.ceil(questions / PER_BOOK)
    files, per, meta, aspects = [], [], {}, {}
    for b, n_q in enumerate(spread(questions, n_books)):
        book_files, used, meta[f"B{b:02d}"] = write_book(root, b, n_q, tokens, seed)
        files += book_files
        per.append(used)
        for item in json.loads(book_files[1].read_text(encoding="utf-8")):
            aspects[item["Aspect"]] = aspects.get(item["Aspect"], 0) + 1
    (root / "bookmeta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    overrides = ["dataset=novelqa", f"dataset.loader.path={root}"]
    return written([*files, root / "bookmeta.json"], overrides, per, questions, aspects)


def min_tokens(questions: int) -> int:
    """Planted sentences (~2.3 per question at ~15 tokens) in the fullest book."""
    return 40 * math.ceil(questions / math.ceil(questions / PER_BOOK)) + 100
