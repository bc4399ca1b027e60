"""The MSC-E generator's model replies parsed (data_prep/msc_e.py): dialogue continuations into
complete Alex/Bob rounds, question lists into valid items plus a count of the rejected ones."""

from __future__ import annotations

import json
import re
from typing import Any

TURN_RE = re.compile(r"^\W*(Alex|Bob)\W*?:[\s*_]*(.*)$", re.I)  # tolerate markdown bold


def parse_turns(text: str) -> list[tuple[str, str]]:
    """Speaker-prefixed lines; unprefixed lines continue the previous turn."""
    turns: list[tuple[str, str]] = []
    for line in text.splitlines():
        m = TURN_RE.match(line.strip())
        if m:
            turns.append((m.group(1).capitalize(), m.group(2).strip()))
        elif turns and line.strip():
            turns[-1] = (turns[-1][0], f"{turns[-1][1]} {line.strip()}".strip())
    return [(s, t) for s, t in turns if t]


def pair_rounds(turns: list[tuple[str, str]]) -> list[list[dict[str, str]]]:
    """Complete rounds only: an Alex turn immediately answered by a Bob turn."""
    rounds, i = [], 0
    while i + 1 < len(turns):
        if turns[i][0] == "Alex" and turns[i + 1][0] == "Bob":
            rounds.append(
                [
                    {"speaker": "Alex", "text": turns[i][1]},
                    {"speaker": "Bob", "text": turns[i + 1][1]},
                ]
            )
            i += 2
        else:
            i += 1
    return rounds


def parse_qa(text: str) -> tuple[list[dict[str, str]], int]:
    """Valid {question, response} items of a JSON array (or loose objects); and the number rejected."""
    items: list[Any] = []
    start, end = text.find("["), text.rfind("]")
    try:
        parsed = json.loads(text[start : end + 1]) if 0 <= start < end else None
        items = parsed if isinstance(parsed, list) else []
    except json.JSONDecodeError:
        items = []
    if not items:
        for blob in re.findall(r"\{[^{}]*\}", text):
            try:
                items.append(json.loads(blob))
            except json.JSONDecodeError:
                items.append(None)
    good = [
        {"question": it["question"].strip(), "answer": it["response"].strip()}
        for it in items
        if isinstance(it, dict)
        and isinstance(it.get("question"), str)
        and isinstance(it.get("response"), str)
        and it["question"].strip()
        and it["response"].strip()
    ]
    return good, len(items) - len(good) + (0 if items else 1)
