"""Generated data at real sizes: seeded files in the upstream schemas (``memharness synth``).

For load, scale and cost rehearsals, never for scores. One module per shape writes one shape's
files; ``SHAPES`` maps each shape name to its writer, its real size and the smallest episode its
questions fit in (docs/datasets.md, "Generated data at real sizes").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from memharness.data_prep.synth import beam, locomo, longmemeval, multihop, novelqa


@dataclass(frozen=True)
class Shape:
    """One generated shape: its writer, its real size and what ``--tokens`` measures."""

    write: Callable[[Path, int, int, int], dict[str, Any]]  # (out, questions, tokens, seed)
    questions: int  # the released file's questions
    tokens: int  # the released file's tokens per episode (cl100k_base)
    episode: str  # what one episode is, so what --tokens sizes
    min_tokens: Callable[[int], int]  # the smallest episode that fits the questions


SHAPES: dict[str, Shape] = {
    "longmemeval_s": Shape(
        partial(longmemeval.write, split="s"),
        500,
        115_000,
        "question's haystack",
        longmemeval.min_tokens,
    ),
    "longmemeval_m": Shape(
        partial(longmemeval.write, split="m"),
        500,
        1_500_000,
        "question's haystack",
        longmemeval.min_tokens,
    ),
    "locomo": Shape(locomo.write, 1_986, locomo.REAL_TOKENS, "conversation", locomo.min_tokens),
    "novelqa": Shape(novelqa.write, 2_305, 200_000, "book", novelqa.min_tokens),
    "multihop": Shape(
        multihop.write,
        2_556,
        multihop.REAL_TOKENS,
        "news corpus (one, shared)",
        multihop.min_tokens,
    ),
    "beam": Shape(beam.write, 400, 128_000, "conversation", beam.min_tokens),
}
