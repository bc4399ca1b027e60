"""Benchmarks: each module exposes ``main() -> dict`` that prints and returns its figures."""

import operator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]  # the checkout: its conf/ holds the runner's defaults
CONF = REPO / "conf"

# benches that ``make bench`` (no names) leaves out: minutes long or writing docs; run them by name
# (``memharness bench rehearsal --questions 2``, ``make rehearse``); the only ones that take flags
ON_DEMAND = {
    "rehearsal": "every memory system at LongMemEval-S size, each in its own process (make rehearse)",
    "costs": "what a full run costs per system x benchmark, from the dry-run estimator",
}

_COMPARE = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    ">": operator.gt,
    "<": operator.lt,
}


def misses(value: Any, target: str) -> bool:
    """Whether ``value`` misses ``target`` (``">= 0.9"``, ``"<= 0.05"``, ``"== 0"``...)."""
    op, _, bound = target.partition(" ")
    if op not in _COMPARE or not isinstance(value, (int, float)):
        return False
    return not _COMPARE[op](value, float(bound))


def print_figures(figures: dict[str, Any], targets: dict[str, str], width: int = 36) -> None:
    """One line per figure (floats to 3 decimals, below 0.001 in scientific notation), its target
    beside it where one is set and ``MISS`` after a figure that misses it."""
    for key, value in figures.items():
        small = isinstance(value, float) and 0 < abs(value) < 1e-3
        shown = f"{value:.2e}" if small else f"{value:.3f}" if isinstance(value, float) else value
        target = targets.get(key)
        flag = "  MISS" if target is not None and misses(value, target) else ""
        print(f"  {key:{width}s} {shown}" + (f"   (target {target}){flag}" if target else ""))
