"""The judging loop of a run: which answers go to a judge, the calls under stage ``judge``, and the
harness judge's verdicts (``judge``). The benchmark's own judge (``official.py``) goes through the
same two steps with its own prompts and verdict rule."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from memharness.eval.judge import injection
from memharness.eval.judge.judges import Judges
from memharness.eval.judge.prompt import judge_request, parse_judge, reference_text
from memharness.eval.record.scores import put
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question
from omegaconf import DictConfig

log = logging.getLogger("memharness")
KIND = "judge"  # the Score kind of the harness judge


def answers_to_judge(
    pending: Sequence[tuple[Question, Any, dict]], on_empty: Callable[[dict], None]
) -> list[tuple[Question, dict]]:
    """The scored generative answers a judge is asked about. An empty answer is wrong and never
    judged: ``on_empty`` records its score and status instead."""
    todo = []
    for q, _, record in pending:
        if record["status"] != "scored" or record.get("mode") != "generative":
            continue
        if record.get("answer_empty"):
            on_empty(record)
        else:
            todo.append((q, record))
    return todo


def ask(judge: Any, requests: list[ChatRequest], services: Any, desc: str) -> list[Any]:
    """The judge's completions of ``requests``, metered under stage ``judge``."""
    with services.meter.stage("judge"):
        return judge.complete(requests, desc=desc)


def _empty(record: dict) -> None:
    put(record, "judge", 0.0, KIND, status="answer_empty")


def judge_all(
    pending: list[tuple[Question, Any, dict]],
    cfg: DictConfig,
    services: Any,
    judges: Judges | None = None,
) -> None:
    """The harness judge's verdict (metric ``judge``) on every scored generative answer; an
    unparsed reply or a failed call is recorded (its score's ``status``), never scored."""
    todo = answers_to_judge(pending, _empty)
    flags = injection.flag_all(((reference_text(q), r) for q, r in todo), log)
    requests = [
        judge_request(q, reference_text(q), r["prediction"], cfg.eval.judge) for q, r in todo
    ]
    completions = ask(judges.primary if judges else services.llm, requests, services, "judge")
    for (_, record), comp, flagged in zip(todo, completions, flags, strict=False):
        seen = {"injection": flagged} if flagged else {}
        if not comp.ok:
            put(
                record,
                "judge",
                None,
                KIND,
                reply=comp.text,
                status="judge_failed",
                error=comp.error,
                **seen,
            )
            continue
        verdict = parse_judge(comp.text)
        status = "judge_unparsed" if verdict is None else "parsed"
        value = None if verdict is None else float(verdict)
        put(record, "judge", value, KIND, reply=comp.text, status=status, **seen)


class Judge:
    """The harness judge as a scorer (metric ``judge``; ``judge_all``)."""

    name = KIND

    def score(self, pending: Any, ctx: Any) -> None:
        judge_all(pending, ctx.cfg, ctx.services, ctx.judges)


SCORER = Judge()
