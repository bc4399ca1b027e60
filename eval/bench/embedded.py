"""The embedded default's own figures (``make bench``; issue 28), each measured in one run.

The workload is what a demo row sends, in a row's order: the sample dialogues' questions answered
from their gold units (one batch per episode), then judged with the strict prompt, then again with
the lenient one, then the canaries (the reference, another question's reference). It is sent twice
to the default ``llm=local`` backend, once with prefix reuse off (``prefix_cache_mb=0``: llama.cpp
still resumes after the previous call's common prefix) and once on. Figures:

- ``prompt_tokens_evaluated_ratio``: prompt tokens llama.cpp processed with reuse / without;
- ``prompt_tokens_per_s_{off,on}``: prompt tokens sent per second of wall time;
- ``judge_calls_per_s_{off,on}``: verdicts per second;
- ``same_replies``: 1.0 when every reply is identical with and without reuse (target == 1);
- ``speedup_with_prefix_reuse``: wall time off / on.

If ``results/sweeps/demo`` holds a demo sweep, its build / answer / judge / audit shares of the
backend time are printed as well (read from each row's metrics.json). Under load every rate is a
lower bound; the token ratio does not depend on load.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memharness.eval.bench import REPO, print_figures

STAGES = ("build", "answer", "judge", "audit")


def demo_workload() -> list[tuple[str, Any]]:
    """(kind, request) pairs in a demo row's order (see the module docstring)."""
    from hydra import compose, initialize_config_dir
    from memharness.data_prep.sample import load
    from memharness.eval.judge.prompt import judge_request, reference_text
    from memharness.eval.run.answer import answer_request
    from memharness.memsys.types import RetrievedItem

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config")
    episodes = load(parts=["dialogues"]).episodes
    work: list[tuple[str, Any]] = []
    questions = [q for ep in episodes for q in ep.questions]
    for ep in episodes:
        for q in ep.questions:  # the evidence's units, else the first three (a retrieval stand-in)
            spans = [
                (e.position, e.end or e.position + 1) for e in q.evidence if e.position is not None
            ]
            gold = [u for a, b in spans for u in ep.units[a:b]] or ep.units[:3]
            items = [RetrievedItem(u.text, 1.0, u.id, 0, (u.id,)) for u in gold]
            work.append(("answer", answer_request(q, items, cfg.eval.answer)))
    refs = [reference_text(q) for q in questions]
    lenient = dict(cfg.eval.judge, prompt=cfg.eval.judge_audit.lenient_prompt)
    for kind, judge_cfg, predictions in (
        ("judge", cfg.eval.judge, [f"{r}, I think" for r in refs]),
        ("lenient", lenient, [f"{r}, I think" for r in refs]),
        ("canary", cfg.eval.judge, refs),
        ("canary", cfg.eval.judge, refs[1:] + refs[:1]),
    ):
        for q, ref, pred in zip(questions, refs, predictions, strict=True):
            work.append((kind, judge_request(q, ref, pred, _Cfg(judge_cfg))))
    return work


class _Cfg(dict):
    __getattr__ = dict.__getitem__


def _send(prefix_cache_mb: int, work: list[tuple[str, Any]], embedded: str) -> dict[str, Any]:
    from memharness.memsys.services.backends.local import LlamaCppBackend

    backend = LlamaCppBackend(embedded=embedded, prefix_cache_mb=prefix_cache_mb)
    model = backend._llm  # load outside the timed part
    evaluated: list[int] = []
    real_eval = model.eval
    model.eval = lambda tokens: evaluated.append(len(tokens)) or real_eval(tokens)
    start = time.perf_counter()
    replies = [backend.chat(request) for _, request in work]
    wall = time.perf_counter() - start
    judged = sum(1 for kind, _ in work if kind != "answer")
    return {
        "texts": [r.text for r in replies],
        "sent": sum(r.prompt_tokens for r in replies),
        "evaluated": sum(evaluated),
        "wall": wall,
        "judge_calls": judged,
    }


def demo_split(sweep: Path = REPO / "results" / "sweeps" / "demo") -> dict[str, float]:
    """Each stage's share of the demo sweep's backend seconds (empty when no demo was run)."""
    totals = dict.fromkeys(STAGES, 0.0)
    for path in sorted(sweep.rglob("metrics.json")):
        calls = json.loads(path.read_text()).get("calls", {})
        for stage in STAGES:
            totals[stage] += float((calls.get(stage) or {}).get("backend_s", 0.0))
    whole = sum(totals.values())
    return {f"demo_{s}_share": totals[s] / whole for s in STAGES} if whole else {}


def main(embedded: str = "qwen2.5-coder-1.5b") -> dict[str, Any]:
    work = demo_workload()
    off, on = _send(0, work, embedded), _send(2048, work, embedded)
    figures: dict[str, Any] = {
        "requests": len(work),
        "prompt_tokens_sent": off["sent"],
        "prompt_tokens_evaluated_off": off["evaluated"],
        "prompt_tokens_evaluated_on": on["evaluated"],
        "prompt_tokens_evaluated_ratio": on["evaluated"] / max(1, off["evaluated"]),
        "prompt_tokens_per_s_off": off["sent"] / off["wall"],
        "prompt_tokens_per_s_on": on["sent"] / on["wall"],
        "judge_calls_per_s_off": off["judge_calls"] / off["wall"],
        "judge_calls_per_s_on": on["judge_calls"] / on["wall"],
        "speedup_with_prefix_reuse": off["wall"] / on["wall"],
        "same_replies": float(off["texts"] == on["texts"]),
        **demo_split(),
    }
    print_figures(figures, {"same_replies": "== 1"}, 32)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
