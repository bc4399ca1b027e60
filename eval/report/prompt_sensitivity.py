"""Answer-prompt sensitivity in the tables: when a question set holds runs under several answer
prompts (``eval.answer.name``, conf/answer_prompt/; experiment=answer_prompts), each system's accuracy
under each prompt, its band (min-max), and whether the ranking survives the change of prompt
(Kendall's tau against the harness's prompt, the flipped pairs named)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.report.judge_sensitivity import summarize_set
from memharness.eval.report.table_format import Section, number

METRIC = "judge"  # the accuracy compared across prompts
DEFAULT = "harness"  # a run without eval.answer.name used the harness's prompt


def prompt_of(run: dict[str, Any]) -> str:
    return str((run.get("config") or {}).get("eval.answer.name") or DEFAULT)


def _accuracy(run: dict[str, Any], metric: str) -> float | None:
    summary = (run.get("metrics") or {}).get(metric) or {}
    return summary.get("mean")


def section(runs: Sequence[dict[str, Any]], metric: str = METRIC) -> Section | None:
    """One row per (set, system) of the sets run under two or more answer prompts; None if none."""
    rows, notes, width = [], [], 0
    for key in sorted({(r["group"], r["dataset"]) for r in runs}):
        group = [r for r in runs if (r["group"], r["dataset"]) == key]
        prompts = sorted({prompt_of(r) for r in group}, key=lambda p: (p != DEFAULT, p))
        if len(prompts) < 2:
            continue
        systems = sorted({r["memory"] for r in group})
        acc: dict[str, dict[str, float | None]] = {p: {} for p in prompts}
        for r in group:  # the first run of a (prompt, memory) pair counts
            acc[prompt_of(r)].setdefault(r["memory"], _accuracy(r, metric))
        summary = summarize_set(systems, prompts, acc)
        width = max(width, len(prompts))
        for s in systems:
            b = summary["bands"][s]
            cells = [number(acc[p].get(s)) for p in prompts]
            band = "-" if b is None else f"{number(b[0])}-{number(b[1])}"
            rows.append(
                [
                    key[0],
                    key[1],
                    s,
                    *[f"{p}: {c}" for p, c in zip(prompts, cells, strict=True)],
                    band,
                ]
            )
        for p, cmp in summary["against_reference"].items():
            flips = ", ".join(
                f"{a} > {b} under {prompts[0]}, {b} > {a} under {p}" for a, b in cmp["flipped"]
            )
            tau = "undefined" if cmp["tau"] is None else f"{cmp['tau']:.2f}"
            notes.append(
                f"Set {key[0]}: {prompts[0]} vs {p}: tau {tau}; flipped: {flips or 'none'}."
            )
        if summary["ranking_changes"]:
            notes.append(f"Set {key[0]}: THE RANKING DOES NOT SURVIVE A CHANGE OF ANSWER PROMPT.")
    if not rows:
        return None
    rows = [r[:-1] + ["-"] * (width + 4 - len(r)) + r[-1:] for r in rows]
    return Section(
        title=f"Answer-prompt sensitivity ({metric})",
        header=["set", "dataset", "memory", *[f"prompt {i + 1}" for i in range(width)], "band"],
        rows=rows,
        note="Each system's accuracy under each answer prompt (eval.answer.name; "
        "conf/answer_prompt/), its band (min-max), and Kendall's tau of each prompt's ranking "
        "against the first prompt's, with the pairs that flip. " + " ".join(notes),
    )
