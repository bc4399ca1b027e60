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


def verdicts(
    llm: Any, prompt_cfg: Any, cases: Sequence[tuple[Question, str, str]], desc: str
) -> list[dict[str, Any]]:
    """The harness judge's verdict on each (question, reference, answer) case, with ``prompt_cfg``'s
    prompt: verdict (0/1, None when the reply did not parse or the call failed), reply, status
    (parsed | judge_unparsed | judge_failed), error, cached. Failures are kept, never dropped."""
    requests = [judge_request(q, ref, ans, prompt_cfg) for q, ref, ans in cases]
    out = []
    for comp in llm.complete(requests, desc=desc) if requests else []:
        verdict = parse_judge(comp.text) if comp.ok else None
        status = (
            "judge_failed"
            if not comp.ok
            else ("parsed" if verdict is not None else "judge_unparsed")
        )
        out.append(
            {
                "verdict": verdict,
                "reply": comp.text,
                "status": status,
                "error": comp.error,
                "cached": comp.cached,
            }
        )
    return out


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
    cases = [(q, reference_text(q), r["prediction"]) for q, r in todo]
    with services.meter.stage("judge"):
        results = verdicts(
            judges.primary if judges else services.llm, cfg.eval.judge, cases, "judge"
        )
    for (_, record), v, flagged in zip(todo, results, flags, strict=False):
        seen = {"injection": flagged} if flagged else {}
        failed = {"error": v["error"]} if v["status"] == "judge_failed" else {}
        value = None if v["verdict"] is None else float(v["verdict"])
        put(record, "judge", value, KIND, reply=v["reply"], status=v["status"], **failed, **seen)


class Judge:
    """The harness judge as a scorer (metric ``judge``; ``judge_all``)."""

    name = KIND

    def score(self, pending: Any, ctx: Any) -> None:
        judge_all(pending, ctx.cfg, ctx.services, ctx.judges)


SCORER = Judge()
