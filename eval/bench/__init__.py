"""Benchmarks: each module exposes ``main() -> dict`` that prints and returns its figures."""

from typing import Any


def print_figures(figures: dict[str, Any], targets: dict[str, str], width: int = 36) -> None:
    """One line per figure (floats to 3 decimals), its target beside it where one is set."""
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else value
        print(
            f"  {key:{width}s} {shown}" + (f"   (target {targets[key]})" if key in targets else "")
        )
