"""Answers that try to grade themselves: neutralised before the judge sees them, and flagged.

A prediction reaches the judge prompt neutralised (``quote_prediction``): on one line, without
the ``->`` that precedes the verdict and with every verdict-like span replaced by ``[removed]``,
so no text inside it can end the field, start a new line, write a verdict in the prompt's format
or instruct the grader; ``eval.judge.quote: true`` also puts it inside double quotes it cannot
close. (Quoting alone left the embedded 1.5B judge fooled by 7 of 9 such wrong answers, and quoted
worked examples cost it 0.06-0.09 accuracy on the labelled set; masking is what stops them.)

``verdict_like`` names what in a prediction looks like an attempt to steer the judge: an
instruction to the grader, a verdict in the prompt's format (``-> 1``), the prompt's own field
labels, or a bare ``0``/``1`` where the reference is something else. The judge scorer records the names
in its score's ``injection`` detail and counts flagged answers in ``counts.judge_injection``; the verdict itself
is kept (a flag is a warning to read the answer, not a score).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

ARROW = "->"
PATTERNS = {
    "instruction": re.compile(
        r"\b(ignore|disregard|forget)\b[^.]{0,40}\b(instruction|prompt|rule|above|previous|prior)s?\b"
        r"|(?:^|[.!?;:,]\s*|\b(?:and|just|please|must|should|to|then)\s+)"
        r"(answer|reply|respond|output|return|say|judge|print)\b\s*(?:with\s+)?"
        r"(?:only\s+)?(?:the\s+)?(?:digit\s+|number\s+)?[01]\b(?![-:.,/]?\d)"
        r"|\b(verdict|grade|score|rating|label)\s*(?:is|=|:|should be|must be)\s*[01]\b(?![-:.,/]?\d)"
        r"|\b(this|my) (answer|prediction|response) (is|should be judged|must be judged) "
        r"(correct|right|a match)\b",
        re.IGNORECASE,
    ),
    "verdict_arrow": re.compile(r"-+>\s*[01]\b|=>\s*[01]\b|→\s*[01]\b"),
    "field_label": re.compile(r"\b(query|reference|predicted|verdict)\s*:", re.IGNORECASE),
}
_BARE = re.compile(r"^\W*([01])\W*$")


MASK = "[removed]"


def quote_prediction(prediction: str, reference: str = "", quote: bool = True) -> str:
    """The prediction as the judge sees it: one line, without the verdict arrow, each verdict-like
    span (``verdict_like``) replaced by ``[removed]`` (the small judges follow such text even
    inside quotes), and with ``quote`` double-quoted with nothing that can close the quotes."""
    text = " ".join(str(prediction).split())
    for pattern in PATTERNS.values():
        text = pattern.sub(MASK, text)
    if _BARE.match(text) and not _BARE.match(reference or ""):
        text = MASK
    text = text.replace(ARROW, "- >").replace("→", "- >")
    return '"' + text.replace('"', "'") + '"' if quote else text


def verdict_like(prediction: str, reference: str = "") -> list[str]:
    """Names of the verdict-like patterns in ``prediction`` (empty: nothing suspicious)."""
    found = [name for name, pattern in PATTERNS.items() if pattern.search(prediction)]
    bare = _BARE.match(prediction or "")
    if bare and not _BARE.match(reference or ""):
        found.append("bare_verdict")
    return found


def flag_all(
    cases: Iterable[tuple[str, dict[str, Any]]], log: logging.Logger | None = None
) -> list[list[str]]:
    """The verdict-like patterns of each (reference, sample record)'s prediction, in order (the
    judge scorer records them as its ``injection`` detail); the flagged ones are logged."""
    flagged, out = [], []
    for reference, record in cases:
        names = verdict_like(str(record.get("prediction") or ""), reference)
        out.append(names)
        if names:
            flagged.append(str(record.get("question_id", "?")))
    if flagged and log is not None:
        log.warning(
            "%d answer(s) carry verdict-like text (judge_injection; the judge saw them masked): %s",
            len(flagged),
            ", ".join(flagged[:10]) + (" ..." if len(flagged) > 10 else ""),
        )
    return out
