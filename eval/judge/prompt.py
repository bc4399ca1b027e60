"""The harness judge's words: the request it is sent, the reference it compares with, and how its
reply is read (MemTree App. A.2.2). The audit, the labelled set, closed book and the bench send
the same request, so they share the call cache with runs."""

from __future__ import annotations

from typing import Any

from memharness.eval.judge.injection import quote_prediction
from memharness.eval.metrics.scorers import references
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question


def judge_request(question: Question, reference: str, prediction: str, cfg: Any) -> ChatRequest:
    """The judge's request; the prediction goes in neutralised (``eval/judge/injection.py``)."""
    prompt = cfg.prompt.format(
        question=question.text,
        reference=reference,
        prediction=quote_prediction(prediction, reference, bool(cfg.get("quote", False))),
    )
    return ChatRequest.user(prompt, max_tokens=int(cfg.max_tokens), choices=("0", "1"))


def reference_text(question: Question) -> str:
    """The reference the judge compares with: the gold answers joined, or the gold option's text."""
    return " / ".join(references(question))


def parse_judge(reply: str) -> int | None:
    """Read a 0/1 verdict. Anything that is not exactly one of them gives None (unparsed).

    Surrounding whitespace, quotes and a trailing full stop are tolerated; a reply
    such as "1 because ..." or "yes" is not a verdict and is never guessed at.
    """
    text = reply.strip().strip("\"'`").rstrip(".").strip()
    if text in ("0", "1"):
        return int(text)
    return None
