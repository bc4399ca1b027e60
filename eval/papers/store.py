"""Published numbers as data: one versioned YAML per paper under ``eval/papers/published/``.

A file holds tables; a table holds rows (a system and its setting), columns (a dataset, a
category, a metric and a unit) and cells (the published value of a row x column). Loading
resolves every cell into a flat record with the paper's model, embedder and judge for its
table, so ``eval.paper_report`` can match it against run folders and the tests can check it
against the paper's text. The format is documented in ``docs/papers.md``.

Names a cell uses are the harness's own: ``system`` is a memory name (``metrics.json``
``memory``), ``dataset`` a dataset name, ``category`` a (label key, label value) of
``metrics.json`` ``breakdowns``, ``metric`` a metric key (``source: metrics``), a dotted path
into each episode of ``memory_stats.json`` (``source: memory_stats``) or into ``metrics.json``
(``source: run``). Reading and validating the files is ``eval/papers/load.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = 1
FOLDER = Path(__file__).resolve().parent / "published"
SOURCES = ("metrics", "memory_stats", "run")
RELATIONS = ("=", "~", ">", "<", "in")
KINDS = ("table", "figure")
FORMATS = ("tsv", "html", "markdown", "text")
IDENTITIES = ("model", "embedder", "judge")
# Unit conversions from the harness's value to the paper's unit (harness_unit, unit) -> factor.
CONVERSIONS = {("fraction", "%"): 100.0, ("s", "h"): 1 / 3600, ("s", "min"): 1 / 60}


class PublishedError(Exception):
    """A published-numbers file breaks the schema; the message names the file and the cell."""


@dataclass(frozen=True)
class Identity:
    """A model, embedder or judge as the paper names it, with the ids a run may report for it."""

    name: str
    ids: tuple[str, ...]

    def matches(self, model_id: str | None) -> bool:
        return model_id is not None and normalize_model_id(model_id) in {
            normalize_model_id(i) for i in self.ids
        }


def normalize_model_id(model_id: str) -> str:
    """A run's model id reduced to the model's name: ``openai:gpt-4o@1a2b`` -> ``gpt-4o``,
    ``vllm:meta-llama/Llama-3.1-8B-Instruct`` -> ``llama-3.1-8b-instruct``,
    ``llama.cpp:x.gguf:ctx4096`` -> ``x``. Quantisation suffixes are kept: a quantised model
    is not the paper's model."""
    text = model_id.strip()
    head, sep, rest = text.partition(":")
    if sep and head in ("openai", "vllm", "llama.cpp", "st"):
        text = rest
    text = re.sub(r":ctx\d+$", "", text.split("@")[0])
    text = text.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"\.gguf$", "", text, flags=re.I).lower()


@dataclass
class Column:
    id: str
    label: str
    datasets: tuple[str, ...]  # empty: the paper does not say (any dataset matches, flagged)
    category: tuple[str, str] | None
    metric: str | None  # None: not computable from run folders (the cell says why)
    source: str
    unit: str
    harness_unit: str
    paper_n: int | None
    locate: dict[str, Any]
    decimals: int | None = None


@dataclass
class Row:
    id: str
    label: str
    system: str | None  # None: not a system of this harness (``why`` says which)
    why: str | None
    memory: dict[str, Any]  # config.yaml memory.* values that pick this row's runs
    setting: dict[str, Identity | None]  # identities that differ from the table's for this row
    protocol: dict[str, Any]
    locate: dict[str, Any]


@dataclass
class Cell:
    """One published number with everything needed to reproduce and check it."""

    paper: str
    table: str
    row: str
    column: str
    system: str | None
    memory: dict[str, Any]
    datasets: tuple[str, ...]
    category: tuple[str, str] | None
    metric: str | None
    source: str
    unit: str
    harness_unit: str
    value: float | None
    low: float | None = None
    high: float | None = None
    sd: float | None = None
    relation: str = "="
    ratio: dict[str, str] | None = None  # value = (numerator row / denominator row) in ``column``
    note: str | None = None
    quote: str | None = None  # the sentence the value comes from (figures, prose)
    value_text: str | None = None  # how the value is written in the quote, if not as digits
    decimals: int = 1
    model: Identity | None = None
    embedder: Identity | None = None
    judge: Identity | None = None
    protocol: dict[str, Any] = field(default_factory=dict)
    paper_n: int | None = None

    @property
    def factor(self) -> float:
        """Multiplier from the harness's value to the paper's unit."""
        if self.harness_unit == self.unit:
            return 1.0
        return CONVERSIONS[(self.harness_unit, self.unit)]

    def numbers(self) -> list[float]:
        """The published numbers of this cell (value, or the range ends, and the sd)."""
        out = [v for v in (self.value, self.low, self.high, self.sd) if v is not None]
        return [float(v) for v in out]

    def record(self) -> dict[str, Any]:
        """A flat, JSON-ready view: paper, table, row, column, value and the paper's setting."""
        ident = {k: (getattr(self, k).name if getattr(self, k) else None) for k in IDENTITIES}
        return {
            "paper": self.paper,
            "table": self.table,
            "row": self.row,
            "column": self.column,
            "system": self.system,
            "memory": self.memory,
            "dataset": list(self.datasets),
            "category": list(self.category) if self.category else None,
            "metric": self.metric,
            "source": self.source,
            "unit": self.unit,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "sd": self.sd,
            "relation": self.relation,
            "note": self.note,
            "protocol": self.protocol,
            "paper_n": self.paper_n,
            **ident,
        }


@dataclass
class Table:
    paper: str
    id: str
    kind: str
    caption: str
    source: dict[str, Any]
    model: Identity | None
    embedder: Identity | None
    judge: Identity | None
    protocol: dict[str, Any]
    rows: list[Row]
    columns: list[Column]
    cells: dict[tuple[str, str], Cell]
    decimals: int
    note: str | None = None
    experiment: str | None = None  # the conf/experiment that runs what this table needs

    @property
    def title(self) -> str:
        """How the paper names it: "Table 4", "Table A.2", "Fig. 5", "Fig. A.4"."""
        if self.kind == "figure":
            return "Fig. " + (self.id[3:] if self.id.lower().startswith("fig") else self.id)
        return f"Table {self.id}"

    def row(self, row_id: str) -> Row:
        return next(r for r in self.rows if r.id == row_id)

    def column(self, column_id: str) -> Column:
        return next(c for c in self.columns if c.id == column_id)


@dataclass
class Paper:
    key: str
    title: str
    short: str
    source: str
    version: int
    path: Path
    tables: list[Table]

    def table(self, table_id: str) -> Table:
        for t in self.tables:
            if t.id.lower() == str(table_id).lower():
                return t
        raise PublishedError(
            f"{self.path.name}: no table {table_id!r}; tables: {[t.id for t in self.tables]}"
        )

    def cells(self) -> list[Cell]:
        return [c for t in self.tables for c in t.cells.values()]


# ---------------------------------------------------------------------------------- loading
