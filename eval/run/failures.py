"""Failures made visible while a run goes: degraded memories, empty answers, failed steps, the
deadline and the budget. The run's verdict and exit codes are ``eval/record/outcome.py``."""

from __future__ import annotations

import logging
from typing import Any

from memharness.memsys.services.types import BackendError

_UNSCORED = (
    "build_failed",
    "retrieve_failed",
    "answer_failed",
    "deadline_exceeded",
    "budget_exceeded",
)


def degradation_fields(memory: Any) -> dict[str, Any]:
    """``{"degraded": {kind: count}}`` when the memory answering a question was built without some
    LLM outputs it needed (``MemorySystem.degrade``); empty otherwise."""
    degraded = getattr(memory, "degraded", None)
    return {"degraded": dict(degraded)} if degraded else {}


def log_step_failure(log: logging.Logger, what: str, err: BaseException) -> None:
    """A failed backend call is one warning line; anything else (a bug) keeps its traceback."""
    if isinstance(err, BackendError):
        log.warning("%s: %s: %s", what, type(err).__name__, err)
    else:
        log.error("%s", what, exc_info=err)


def flag_empty_answer(record: dict[str, Any]) -> None:
    """An answer call that succeeded with no text is recorded as ``answer_empty``: lexical metrics
    score it as the empty string (wrong), and it is never sent to the judge."""
    if record.get("status") == "scored" and not record.get("prediction"):
        record["answer_empty"] = True


def finalize(samples: list[dict[str, Any]]) -> None:
    """Samples that failed only because the run's deadline had passed get ``deadline_exceeded``; only
    because its budget was spent, ``budget_exceeded``."""
    for s in samples:
        error = str(s.get("error", ""))
        if s.get("status") in _UNSCORED and error.startswith("DeadlineExceeded"):
            s["status"] = "deadline_exceeded"
        elif s.get("status") in _UNSCORED and error.startswith("BudgetExceeded"):
            s["status"] = "budget_exceeded"
