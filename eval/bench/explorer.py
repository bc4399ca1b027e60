"""The results explorer at LongMemEval-S size (``make bench``; issue 41): 12 runs x 500 questions.

The runs are generated (seeded, written as run-format-3 folders and read back through
``eval.record.read`` like any sweep): every question has a haystack of 40 turns of about 600
characters; each of 9 flat systems retrieves 10 of its question's turns, each of 3 tree systems
5 turns and 5 summaries of its own (about 900 characters); every answer has a prompt (cut on the
page at ``--max-prompt-chars``), a judge reply, a lenient and a second judge's verdict, and
evidence recall with the gold items. Figures:

- ``page_mb``: the size of the written page (target <= 25 MB);
- ``first_view_s``: headless Chromium, from navigation to the first view drawn (the script's
  last line; the HTML and its JSON block parsed, the leaderboard rendered): target <= 2 s;
- ``matrix_s``: switching to the matrix (its first rows; the rest render on scroll), no target;
- ``write_s``: reading the 12 folders and writing the page, no target.

Measured on whatever machine runs it: under load the times are upper bounds.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from memharness.eval.bench import print_figures

QUESTIONS, FLAT, TREE, HAYSTACK = 500, 9, 3, 40
TARGETS = {"page_mb": "<= 25", "first_view_s": "<= 2"}
WORDS = (
    "the we she went trip booked dinner friend sister coffee garden marathon concert "
    "flight hotel recipe piano lesson doctor meeting weekend budget apartment moved new "
    "job salary car bike train museum photo birthday gift book movie series"
).split()


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def _metrics(memory: str, values: list[float]) -> dict[str, Any]:
    """A run-format-3 metrics.json for a generated run."""
    n = len(values)
    mean = sum(values) / n
    return {
        "format": 3,
        "memory": memory,
        "dataset": "longmemeval",
        "seed": 0,
        "overrides": [f"memory={memory}", "dataset=longmemeval"],
        "llm": "openai:gpt-4o-mini",
        "embedder": "st:all-MiniLM-L6-v2",
        "counts": {"questions": n, "scored": n, "judge_injection": 0},
        "metrics": {"judge": {"mean": mean, "n": n, "ci_low": mean - 0.04, "ci_high": mean + 0.04}},
        "breakdowns": {},
        "judge": "openai:gpt-4o",
        "data": {"name": "longmemeval", "questions": n},
        "time": {"total_s": 3.5 * n},
        "calls": {},
        "intrinsic": {
            "answer": {"calls": n, "prompt_tokens": 40_000 * n, "completion_tokens": 30 * n}
        },
        "env": {},
        "outcome": {"exit_code": 0, "failed": 0},
    }


def _sample(rng: random.Random, q: int, haystack: list[str], tree: bool, skill: float) -> dict:
    picked = rng.sample(range(HAYSTACK), 5 if tree else 10)
    items = [
        {
            "text": haystack[i],
            "score": rng.random(),
            "level": 0,
            "node_id": f"n{q}-{i}",
            "source_unit_ids": [f"u-{q:03d}-{i:02d}"],
        }
        for i in picked
    ]
    if tree:
        items += [
            {
                "text": _text(rng, 900),
                "score": rng.random(),
                "level": 1,
                "node_id": f"s{q}-{k}",
                "source_unit_ids": [f"u-{q:03d}-{i:02d}" for i in rng.sample(range(HAYSTACK), 8)],
            }
            for k in range(5)
        ]
    gold = [k for k, item in enumerate(items) if f"u-{q:03d}-00" in item["source_unit_ids"]]
    verdict = float(rng.random() < skill)
    answer = _text(rng, 60)
    return {
        "episode_id": f"lme-{q:03d}",
        "question_id": f"q{q:03d}",
        "question": "When did I " + _text(rng, 80) + "?",
        "references": [_text(rng, 30)],
        "options": None,
        "gold_option": None,
        "categories": {"type": rng.choice(["temporal", "multi-session", "knowledge-update"])},
        "position": HAYSTACK,
        "evidence_position": 0,
        "evidence_sources": [f"lme-{q:03d}/s1"],
        "status": "scored",
        "scores": {
            "judge": {
                "value": verdict,
                "kind": "judge",
                "details": {"reply": "yes" if verdict else "no", "status": "parsed"},
            },
            "judge_lenient": {"value": verdict, "kind": "judge_audit", "details": {}},
            "judge2": {"value": float(rng.random() < skill), "kind": "judge_audit", "details": {}},
            "evidence_recall": {
                "value": float(bool(gold)),
                "kind": "evidence",
                "details": {"gold_items": gold, "gold_units": [f"u-{q:03d}-00"] if gold else []},
            },
        },
        "memory": {},
        "retrieved": items,
        "context_tokens": 150 * len(items),
        "prompt": "Answer the question from the conversation.\n"
        + "\n".join(i["text"] for i in items)
        + f"\nQuestion: {answer}",
        "prediction": answer,
    }


def write_runs(
    root: Path, seed: int = 0, questions: int = QUESTIONS, flat: int = FLAT, tree_runs: int = TREE
) -> list[Path]:
    """The generated run folders under ``root`` (12 x 500 by default)."""
    rng = random.Random(seed)
    haystacks = [[_text(rng, 600) for _ in range(HAYSTACK)] for _ in range(questions)]
    folders = []
    for r in range(flat + tree_runs):
        tree = r >= flat
        memory = f"{'tree' if tree else 'flat'}_{r}"
        samples = [_sample(rng, q, haystacks[q], tree, 0.4 + 0.03 * r) for q in range(questions)]
        folder = root / memory
        folder.mkdir(parents=True)
        (folder / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
        values = [s["scores"]["judge"]["value"] for s in samples]
        (folder / "metrics.json").write_text(json.dumps(_metrics(memory, values)))
        folders.append(folder)
    return folders


def first_render(page_file: Path) -> dict[str, float]:
    """Seconds to the first view and to the matrix, in headless Chromium."""
    from playwright.sync_api import sync_playwright

    chromium = (
        os.environ.get("MEMHARNESS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(page_file.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            first = page.evaluate("+document.body.dataset.readyMs") / 1000
            start = time.perf_counter()
            page.click("nav button[data-view='matrix']")
            page.wait_for_selector("#m-body tr")
            matrix = time.perf_counter() - start
        finally:
            browser.close()
    return {"first_view_s": first, "matrix_s": matrix}


def main() -> dict[str, Any]:
    from memharness.eval.report.browser import write_browser

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_runs(root / "runs")
        start = time.perf_counter()
        page_file = write_browser([root / "runs"], root / "explorer.html")
        write_s = time.perf_counter() - start
        figures = {
            "runs": FLAT + TREE,
            "questions": QUESTIONS,
            "page_mb": page_file.stat().st_size / 1e6,
            **first_render(page_file),
            "write_s": write_s,
        }
    print_figures(figures, TARGETS)
    return figures


if __name__ == "__main__":
    main()
