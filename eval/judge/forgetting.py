"""The judged readings of the forgetting metrics (issue 45, docs/forgetting.md), with their own
prompts (``eval.forget_judge``, conf/eval/default.yaml) sent to the harness judge's model:

- ``forget_answer_leak_judge`` (deletions) and ``stale_answer_judge`` (corrections): 1 when the
  judge finds the answer still gives the old value (``leak_prompt``; the reference is the deleted or
  superseded answer);
- ``forget_abstain_judge`` (deletions): 1 when it finds the answer declines to answer
  (``abstain_prompt``; the old value is not shown).

Not the accuracy prompt (``eval.judge.prompt``): asked whether "The dog was named Max." is a right
answer against the deleted "Pepper, a grey greyhound", Qwen2.5-Coder-1.5B said 1, so every system of
the sample sweep read 0.5. Only questions whose gold keeps the old value are asked (LongMemEval's
knowledge updates do not); an unparsed reply or a failed call is recorded with its status and reply
and no value, never guessed."""

from __future__ import annotations

from typing import Any

from memharness.eval.judge.loop import answers_to_judge, verdicts
from memharness.eval.record.scores import put
from omegaconf import OmegaConf

KIND = "forget_judge"
LEAK = {"deletion": "forget_answer_leak_judge", "correction": "stale_answer_judge"}
ABSTAIN = "forget_abstain_judge"


def prompt_settings(section: Any, prompt: str) -> Any:
    """One of ``eval.forget_judge``'s prompts in the shape ``judge_request`` reads."""
    return OmegaConf.create(
        {
            "prompt": section[prompt],
            "max_tokens": int(section.max_tokens),
            "quote": bool(section.get("quote", False)),
        }
    )


class ForgetJudge:
    """The scorer of the three judged metrics above."""

    name = KIND

    def score(self, pending: Any, ctx: Any) -> None:
        todo = [
            (q, r)
            for q, r in answers_to_judge(pending, lambda record: None)
            if q.update is not None and q.update.superseded_answer
        ]
        if not todo:
            return
        section = ctx.cfg.eval.forget_judge
        llm = ctx.judges.primary if ctx.judges else ctx.services.llm
        asked = [(q, r, LEAK[q.update.kind], "leak_prompt") for q, r in todo]
        asked += [(q, r, ABSTAIN, "abstain_prompt") for q, r in todo if q.update.kind == "deletion"]
        with ctx.services.meter.stage("judge"):
            for prompt in ("leak_prompt", "abstain_prompt"):
                some = [(q, r, metric) for q, r, metric, p in asked if p == prompt]
                cases = [(q, q.update.superseded_answer, r["prediction"]) for q, r, _ in some]
                results = verdicts(llm, prompt_settings(section, prompt), cases, "forget judge")
                for (_, record, metric), v in zip(some, results, strict=True):
                    value = None if v["verdict"] is None else float(v["verdict"])
                    failed = {"error": v["error"]} if v["status"] == "judge_failed" else {}
                    put(record, metric, value, KIND, reply=v["reply"], status=v["status"], **failed)


SCORER = ForgetJudge()
