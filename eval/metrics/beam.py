"""BEAM's scores (``src/evaluation/compute_metrics.py`` and ``report_results.py`` of
mohammadtavakoli78/BEAM @b2a3ee8), re-implemented to give the same numbers.

- Rubric nuggets: every rubric item is judged on its own (a JSON reply with ``score`` 1, 0.5 or
  0); the question's score is the mean over its items (``nugget_score``). Upstream sums
  ``int(score)`` for every ability but event ordering, which turns a 0.5 into 0; the harness keeps
  the half credit the judge prompt defines (``truncate_half=True`` gives upstream's sum).
- Event ordering: the answer's lines (``answer.split("\\n")``, empty lines included) are aligned
  to the rubric items greedily, each line to the first unused item the judge calls the same event;
  precision, recall and F1 count aligned lines; Kendall tau-b (scipy) compares the two rankings
  over the union of items, an item missing from one list ranked last there; tau is normalised to
  (tau + 1) / 2 and the score is ``tau_norm * f1`` (``event_ordering_score``). A tau scipy cannot
  compute (a constant ranking: NaN upstream) is 0 here.
- The official aggregate (``report_results.py``): per ability the mean question score, event
  ordering by its ``tau_norm``, every other ability by its nugget score; the headline here is the
  mean over the abilities present (``official_aggregate``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

EVENT_ORDERING = "event_ordering"
SCORES = (0.0, 0.5, 1.0)  # the judge prompt's scale


def parse_nugget_reply(reply: str) -> float | None:
    """The ``score`` of a judge reply (a JSON object, possibly fenced or with text around it);
    None when no score on the prompt's scale can be read."""
    text = reply.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    candidates += [text, *re.findall(r"\{[^{}]*\}", text, re.DOTALL)]
    for candidate in candidates:
        try:
            obj = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "score" in obj:
            try:
                value = float(obj["score"])
            except (TypeError, ValueError):
                return None
            return value if value in SCORES else None
    match = re.search(r'"?score"?\s*:\s*"?([01](?:\.[05])?)', text)
    return float(match.group(1)) if match and float(match.group(1)) in SCORES else None


def nugget_score(verdicts: Sequence[float], truncate_half: bool = False) -> float:
    """The question's score: the mean of its nugget verdicts (upstream's ``int()`` with
    ``truncate_half``)."""
    if not verdicts:
        raise ValueError("a rubric has no nugget verdict")
    return sum(int(v) if truncate_half else v for v in verdicts) / len(verdicts)


def align(
    reference: Sequence[str], system: Sequence[str], same: Callable[[str, str], bool]
) -> list[str]:
    """Each system line replaced by the first unused reference item ``same(item, line)`` accepts."""
    used: set[int] = set()
    out = []
    for line in system:
        hit = next(
            (i for i, ref in enumerate(reference) if i not in used and same(ref, line)), None
        )
        if hit is None:
            out.append(line)
        else:
            used.add(hit)
            out.append(reference[hit])
    return out


def event_ordering_score(
    reference: Sequence[str], system: Sequence[str], same: Callable[[str, str], bool]
) -> dict[str, float]:
    """Precision, recall, F1, normalised Kendall tau-b and their product (``final_score``)."""
    from scipy.stats import kendalltau

    ref, sys_ = list(reference), align(reference, system, same)
    tp = len(set(ref) & set(sys_))
    fp = len([x for x in sys_ if x not in ref])
    fn = len([x for x in ref if x not in sys_])
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys(ref + sys_))

    def ranks(seq: list[str]) -> list[int]:
        at = {item: i + 1 for i, item in enumerate(seq)}
        return [at.get(u, len(union) + 1) for u in union]

    tau = kendalltau(ranks(ref), ranks(sys_), variant="b").statistic
    tau_norm = 0.0 if tau is None or math.isnan(tau) else (tau + 1) / 2
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "tau_norm": tau_norm,
        "final_score": tau_norm * f1,
    }


def official_aggregate(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``report_results.py``'s per-ability means and their mean over the abilities present. Each
    sample: {"ability", "nugget": score or None, "tau_norm": for event ordering}."""
    by_ability: dict[str, list[float]] = {}
    for s in samples:
        value = s.get("tau_norm") if s["ability"] == EVENT_ORDERING else s.get("nugget")
        if value is not None:
            by_ability.setdefault(str(s["ability"]), []).append(float(value))
    per = {k: sum(v) / len(v) for k, v in sorted(by_ability.items())}
    return {
        "per_ability": per,
        "n": {k: len(v) for k, v in sorted(by_ability.items())},
        "overall": sum(per.values()) / len(per) if per else None,
    }
