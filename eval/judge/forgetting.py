"""The judged readings of the forgetting metrics (issue 45, docs/forgetting.md): does the answer
state the old value? The harness judge is asked, with its own prompt, whether the answer means the
forgotten (deletion) or superseded (correction) answer instead of the gold one:

- ``forget_answer_leak_judge``: 1 when the judge finds the answer states the deleted fact;
- ``stale_answer_judge``: 1 when it finds the answer states the superseded value.

Same judge model and prompt as ``judge``, so the run's judge audit (canaries, lenient prompt, second
judge) speaks for these verdicts too. Only questions whose gold keeps the old value are asked
(LongMemEval's knowledge updates do not); an unparsed reply or a failed call is recorded with its
status and no value, never guessed."""

from __future__ import annotations

from typing import Any

from memharness.eval.judge.loop import answers_to_judge, verdicts
from memharness.eval.record.scores import put

KIND = "forget_judge"
METRIC = {"deletion": "forget_answer_leak_judge", "correction": "stale_answer_judge"}


class ForgetJudge:
    """The scorer of the two judged metrics above."""

    name = KIND

    def score(self, pending: Any, ctx: Any) -> None:
        todo = [
            (q, r)
            for q, r in answers_to_judge(pending, lambda record: None)
            if q.update is not None and q.update.superseded_answer
        ]
        if not todo:
            return
        cases = [(q, q.update.superseded_answer, r["prediction"]) for q, r in todo]
        llm = ctx.judges.primary if ctx.judges else ctx.services.llm
        with ctx.services.meter.stage("judge"):
            results = verdicts(llm, ctx.cfg.eval.judge, cases, "forget judge")
        for (q, record), v in zip(todo, results, strict=True):
            value = None if v["verdict"] is None else float(v["verdict"])
            failed = {"error": v["error"]} if v["status"] == "judge_failed" else {}
            put(record, METRIC[q.update.kind], value, KIND, status=v["status"], **failed)


SCORER = ForgetJudge()
