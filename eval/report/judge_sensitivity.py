"""The judge-sensitivity table: each system's accuracy under each judge, its band, and whether the
ranking survives a change of judge (Kendall's tau against the first judge, the flipped pairs named).

Written by ``memharness rejudge`` (eval/cli/rejudge.py) from its results: one section per
comparable question set, as markdown, a long CSV and the full JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from memharness.eval.metrics.sensitivity import band, flipped_pairs, kendall_tau


def summarize_set(
    systems: Sequence[str], judges: Sequence[str], acc: dict[str, dict[str, float | None]]
) -> dict[str, Any]:
    """One question set's sensitivity: ``acc[judge][system]`` -> bands per system, and per judge
    after the first its tau against the first and the pairs that flip."""
    ref = judges[0]
    scored = {j: {s: v for s, v in acc[j].items() if v is not None} for j in judges}
    bands = {s: band([acc[j].get(s) for j in judges]) for s in systems}
    against = {
        j: {
            "tau": kendall_tau(scored[ref], scored[j]),
            "flipped": [list(p) for p in flipped_pairs(scored[ref], scored[j])],
        }
        for j in judges[1:]
    }
    return {
        "reference": ref,
        "bands": {s: list(b) if b else None for s, b in bands.items()},
        "against_reference": against,
        "ranking_changes": any(v["flipped"] for v in against.values()),
    }


def _cell(res: dict[str, Any]) -> str:
    if res["accuracy"] is None:
        return f"- ({res['undecided']} undecided)"
    extra = f", {res['undecided']} undecided" if res["undecided"] else ""
    agree = res.get("agreement")
    rep = f", unanimous {agree['unanimous']:.2f}" if agree else ""
    return f"{res['accuracy']:.3f} (n={res['n']}{extra}{rep})"


def markdown(sets: Sequence[dict[str, Any]], judges: Sequence[str], calls: dict[str, Any]) -> str:
    """The table, one section per question set, and the calls made."""
    out = ["# Judge sensitivity (memharness rejudge)", ""]
    for qs in sets:
        out += [f"## {qs['title']}", ""]
        head = ["system", *judges, "band (min-max)"]
        if qs.get("majority"):
            head.append("majority of judges")
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for system in qs["systems"]:
            b = qs["summary"]["bands"][system]
            row = [system, *(_cell(qs["results"][j][system]) for j in judges)]
            row.append("-" if b is None else f"{b[0]:.3f}-{b[1]:.3f} ({b[1] - b[0]:.3f})")
            if qs.get("majority"):
                m = qs["majority"][system]
                row.append("-" if m["accuracy"] is None else f"{m['accuracy']:.3f} (n={m['n']})")
            out.append("| " + " | ".join(row) + " |")
        out.append("")
        ref = qs["summary"]["reference"]
        for judge, cmp in qs["summary"]["against_reference"].items():
            tau = "undefined" if cmp["tau"] is None else f"{cmp['tau']:.2f}"
            flips = "; ".join(
                f"{a} > {b} under {ref}, {b} > {a} under {judge}" for a, b in cmp["flipped"]
            )
            out.append(f"- Kendall tau {ref} vs {judge}: {tau}; flipped: {flips or 'none'}")
        verdict = "CHANGES" if qs["summary"]["ranking_changes"] else "does not change"
        out += [f"- The ranking {verdict} with the judge.", ""]
    stages = calls["spend"]
    out.append(
        f"Calls: judge {stages['judge']['calls']} sent to a backend, "
        f"{stages['judge']['cache_hits']} from the call cache; answer {stages['answer']['calls']}."
    )
    return "\n".join(out) + "\n"


def long_frame(sets: Sequence[dict[str, Any]], judges: Sequence[str]) -> pd.DataFrame:
    """One row per (question set, system, judge)."""
    rows = [
        {
            "set": qs["set"],
            "dataset": qs["dataset"],
            "system": system,
            "judge": judge,
            **{
                k: v
                for k, v in qs["results"][judge][system].items()
                if k not in ("agreement", "verdicts")
            },
            "unanimous": (qs["results"][judge][system].get("agreement") or {}).get("unanimous"),
        }
        for qs in sets
        for system in qs["systems"]
        for judge in judges
    ]
    return pd.DataFrame(rows)
