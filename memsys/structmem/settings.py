"""Structural memory's settings, one group per step: the sections of ``conf/memory/structmem.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``), as in
GraphRAG (``memsys/graphrag/settings.py``; ``memsys.settings.group`` builds an object from its YAML section):
the run check validates ``memory.rerank.batch`` like any other setting. The switches (structure,
retrieval, scorer, answer_with, documents), the paper's K / R / T / N (top_k, top_r, top_t, turns:
the keys the experiments sweep), temperature and prompts stay at the top level. Every key is
documented in the YAML file; the defaults here are those of the constructor before grouping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memharness.memsys.settings import Range


@dataclass(frozen=True)
class Extraction:
    """``extraction``: source chunks and the LLM extraction of units (extraction.py)."""

    chunk_tokens: Annotated[int, Range(1)] | None = None  # null: the dataset's units are the chunks
    max_tokens: dict[str, Annotated[int, Range(1)]] | None = None  # null: extraction.DEFAULT_CAPS
    deduplicate: bool = False


@dataclass(frozen=True)
class Rerank:
    """``rerank``: LLM-rated candidates (retrieval.py ``rerank``); R is the top-level ``top_r``."""

    batch: Annotated[int, Range(1)] = 10
    format: Literal["json", "lines"] = "json"
    formats: dict[str, str] | None = None  # the output-format text of each format
    max_tokens: Annotated[int, Range(1)] = 256


@dataclass(frozen=True)
class Iterative:
    """``iterative``: thoughts between turns (retrieval.py ``iterative``); T and N are the
    top-level ``top_t`` and ``turns``."""

    final: Literal["best_score", "final_query"] = "best_score"
    thought_max_tokens: Annotated[int, Range(1)] = 256
    thought_budget_tokens: Annotated[int, Range(1)] | None = 4096  # null: every gathered unit


@dataclass(frozen=True)
class BM25:
    """``bm25``: the Okapi scorer of ``scorer: bm25 | hybrid`` (scoring.py)."""

    k1: Annotated[float, Range(0)] = 1.5
    b: Annotated[float, Range(0, 1)] = 0.75
    epsilon: Annotated[float, Range(0)] = 0.25
    stopwords: bool = True


@dataclass(frozen=True)
class Fusion:
    """``fusion``: reciprocal-rank fusion of ``scorer: hybrid`` (scoring.py)."""

    k: Annotated[float, Range(0)] = 60.0
    depth: Annotated[int, Range(1)] = 100
