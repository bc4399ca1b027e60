"""Put run folders into a published table's cells: which run fills a row, what differs from the paper.

A run can fill a row when its memory is the row's system, its dataset is the column's, and its
config.yaml has the row's ``memory`` values. Rows that change the paper's model or embedder (CAM
Table 3's backbones, MemTree Table A.4's smaller models) take only runs of that model, and other
rows of the same system leave those runs to them. Of several runs the one with the fewest
differences from the paper's setting wins, then the newest; the others are counted.

A run's differences from the paper (``flags``): model, embedder, judge (judge cells), a question
subset (``dataset.limit``), fewer questions than the paper's ``paper_n``, every ``protocol`` value
(``dataset.budget_tokens``, ``memory.top_k``, ...) the run set differently, and an unnamed dataset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from memharness.eval.papers.runs import _ABSENT, Missing, Run, Value, value_for
from memharness.eval.papers.store import Cell, Column, Row, Table

NO_EMBEDDER = ("full_context",)  # systems whose results do not depend on the embedder
WALL_CLOCK_UNITS = ("s", "min", "h")  # a cell measured in these is a wall-clock time
STATUS_TEXT = {
    "ok": "",
    "not_run": "no run",
    "not_in_harness": "system not in harness",
    "missing": "n/a",
    "not_computable": "not computable",
}


@dataclass
class Resolved:
    """One cell of the report: the published number, the reproduced one (or why not), its run."""

    row: Row
    column: Column
    cell: Cell
    published: bool  # the paper's table has this cell
    status: str  # ok | not_run | not_in_harness | missing | not_computable
    reason: str = ""
    value: Value | None = None
    runs: list[Run] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    alternatives: int = 0

    @property
    def diff(self) -> float | None:
        """Reproduced minus published, for cells that state a value (not a bound or a range)."""
        if self.status != "ok" or self.cell.value is None or self.cell.relation not in ("=", "~"):
            return None
        return self.value.mean - float(self.cell.value)

    @property
    def holds(self) -> bool | None:
        """For a bound or range (>, <, in): does the reproduced value satisfy it?"""
        if self.status != "ok":
            return None
        c, x = self.cell, self.value.mean
        if c.relation == ">" and c.value is not None:
            return x > c.value
        if c.relation == "<" and c.value is not None:
            return x < c.value
        if c.relation == "in":
            return c.low <= x <= c.high
        return None


def cell_at(table: Table, row: Row, column: Column) -> tuple[Cell, bool]:
    """The published cell, or an empty one built from the row and column (nothing published there)."""
    if (row.id, column.id) in table.cells:
        return table.cells[(row.id, column.id)], True
    ident = {k: row.setting.get(k, getattr(table, k)) for k in ("model", "embedder", "judge")}
    blank = Cell(
        paper=table.paper,
        table=table.id,
        row=row.id,
        column=column.id,
        system=row.system,
        memory=row.memory,
        datasets=column.datasets,
        category=column.category,
        metric=column.metric,
        source=column.source,
        unit=column.unit,
        harness_unit=column.harness_unit,
        value=None,
        note="not in the paper's table",
        decimals=column.decimals if column.decimals is not None else table.decimals,
        protocol={**table.protocol, **row.protocol},
        paper_n=column.paper_n,
        **ident,
    )
    return blank, False


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < 1e-9
    return a == b


def fits_row(run: Run, row: Row, datasets: tuple[str, ...]) -> bool:
    """System, dataset and the row's memory settings (config.yaml ``memory.*``) all match."""
    if row.system is None or run.memory != row.system or (datasets and run.dataset not in datasets):
        return False
    return all(_same(run.setting(f"memory.{k}"), v) for k, v in row.memory.items())


def _identity_ok(run: Run, row: Row) -> bool:
    """A row that varies the model or the embedder takes only runs of that model / embedder."""
    checks = {"model": run.llm, "embedder": run.embedder}
    return all(row.setting[k].matches(checks[k]) for k in checks if row.setting.get(k) is not None)


def run_flags(run: Run, cell: Cell) -> list[str]:
    """How a run's setting differs from the paper's for this cell (the judge only for judge cells)."""
    flags = []
    if cell.model is not None and not cell.model.matches(run.llm):
        flags.append(f"model {_short(run.llm)} (paper: {cell.model.name})")
    if (
        cell.embedder is not None
        and cell.system not in NO_EMBEDDER
        and not cell.embedder.matches(run.embedder)
    ):
        flags.append(f"embedder {_short(run.embedder)} (paper: {cell.embedder.name})")
    if cell.metric == "judge" and cell.judge is not None and not cell.judge.matches(run.judge):
        flags.append(f"judge {_short(run.judge)} (paper: {cell.judge.name})")
    limit = run.setting("dataset.limit")
    if limit not in (None, _ABSENT):
        flags.append(f"subset dataset.limit={limit}")
    for path, expected in sorted(cell.protocol.items()):
        actual = run.setting(path)
        if actual is not _ABSENT and not _same(actual, expected):
            flags.append(f"{path}={json.dumps(actual)} (paper: {json.dumps(expected)})")
    if not cell.datasets:
        flags.append(f"dataset {run.dataset} (the paper does not name one)")
    warm = warm_cache_flag(run, cell)
    if warm:
        flags.append(warm)
    return flags


def warm_cache_flag(run: Run, cell: Cell) -> str | None:
    """A wall-clock cell from a run whose build the call cache served (in part) times the cache, not
    the method: say so, with the counts, so 0.0 s is never read as a measurement."""
    if cell.harness_unit not in WALL_CLOCK_UNITS:
        return None
    build = (run.metrics.get("calls") or {}).get("build")
    if not isinstance(build, dict):
        return None
    hits, embed_hits = int(build.get("cache_hits", 0)), int(build.get("embed_cache_hits", 0))
    if not hits and not embed_hits:
        return None
    return (
        f"warm cache: {hits} of {hits + int(build.get('calls', 0))} build LLM requests and {embed_hits} of "
        f"{embed_hits + int(build.get('embed_calls', 0))} embedding requests came from the call cache, "
        "so this wall-clock time is not the method's (rerun with cache.enabled=false)"
    )


def _short(model_id: str | None) -> str:
    """The run's model id as recorded (matching uses the normalised name; the flag shows the record)."""
    return "unknown" if model_id is None else model_id


def choose_run(runs: list[Run], table: Table, row: Row, cell: Cell) -> tuple[Run | None, int]:
    """The run that fills this row for this cell's dataset, and how many others also could."""
    fits = [r for r in runs if fits_row(r, row, cell.datasets)]
    if any(row.setting.get(k) for k in ("model", "embedder")):
        fits = [r for r in fits if _identity_ok(r, row)]
    else:
        siblings = [
            s
            for s in table.rows
            if s is not row
            and s.system == row.system
            and s.memory == row.memory
            and any(s.setting.get(k) for k in ("model", "embedder"))
        ]
        fits = [r for r in fits if not any(_identity_ok(r, s) for s in siblings)]
    if not fits:
        return None, 0
    general = replace(
        cell, metric=None
    )  # the choice ignores the judge flag: one run per row and dataset
    ranked = sorted(
        sorted(fits, key=lambda r: (r.stamp, str(r.folder)), reverse=True),
        key=lambda r: len(run_flags(r, general)),
    )
    return ranked[0], len(ranked) - 1


def missing_run(runs: list[Run], row: Row, cell: Cell) -> str:
    """What a cell no run fills lacks: any run on its dataset, a run of its system there, or a run
    with the row's memory settings."""
    wanted = " or ".join(cell.datasets) or "any dataset"
    on_dataset = [r for r in runs if not cell.datasets or r.dataset in cell.datasets]
    if not on_dataset:
        return f"dataset {wanted}"
    if not any(r.memory == row.system for r in on_dataset):
        return f"{row.system} on {wanted}"
    if not any(fits_row(r, row, cell.datasets) for r in on_dataset):
        settings = ", ".join(f"{k}={v}" for k, v in row.memory.items())
        return f"{row.system} with {settings} on {wanted}"
    models = [row.setting[k].name for k in ("model", "embedder") if row.setting.get(k)]
    if models:  # the row's runs must use its model / embedder
        return f"{row.system} with {' and '.join(models)} on {wanted}"
    return f"{row.system} with the paper's model on {wanted} (its runs fill the rows that vary it)"


def resolve_cell(runs: list[Run], table: Table, row: Row, column: Column) -> Resolved:
    """Published value and, where a run can give it, the reproduced one; never a guess."""
    cell, published = cell_at(table, row, column)
    res = Resolved(row, column, cell, published, "ok")
    if row.system is None:
        res.status, res.reason = "not_in_harness", row.why or ""
        return res
    if cell.ratio is not None:
        return _resolve_ratio(runs, table, res)
    if cell.metric is None:
        res.status, res.reason = (
            "not_computable",
            cell.note or "no run-folder quantity for this cell",
        )
        return res
    run, others = choose_run(runs, table, row, cell)
    if run is None:
        res.status, res.reason = "not_run", missing_run(runs, row, cell)
        return res
    res.runs, res.alternatives, res.flags = [run], others, run_flags(run, cell)
    try:
        res.value = value_for(run, cell.source, cell.metric, cell.category, cell.factor)
    except Missing as err:
        res.status, res.reason = "missing", str(err)
        return res
    if cell.paper_n and res.value.n is not None and res.value.n < cell.paper_n:
        res.flags.append(f"n={res.value.n} of the paper's {cell.paper_n:,}")
    return res


def _resolve_ratio(runs: list[Run], table: Table, res: Resolved) -> Resolved:
    """value(numerator row) / value(denominator row), both in the ratio's column, from one dataset."""
    spec = res.cell.ratio
    column = table.column(spec["column"])
    num = resolve_cell(runs, table, table.row(spec["numerator"]), column)
    den = resolve_cell(runs, table, table.row(spec["denominator"]), column)
    res.runs = num.runs + den.runs
    res.flags = sorted(set(num.flags) | set(den.flags))
    for part in (num, den):
        if part.status != "ok":
            res.status = "not_run" if part.status == "not_run" else "missing"
            res.reason = f"{part.row.label}: {part.status.replace('_', ' ')} {part.reason}".strip()
            return res
    if num.runs[0].dataset != den.runs[0].dataset:
        res.status, res.reason = (
            "missing",
            (
                f"the two runs are on different datasets "
                f"({num.runs[0].dataset}, {den.runs[0].dataset})"
            ),
        )
        return res
    if den.value.mean == 0:
        res.status, res.reason = "missing", f"{den.row.label}'s value is 0"
        return res
    res.value = Value(num.value.mean / den.value.mean)
    return res


def resolve_table(runs: list[Run], table: Table) -> list[list[Resolved]]:
    """Every row x column of the paper's layout, in the paper's order."""
    return [[resolve_cell(runs, table, row, col) for col in table.columns] for row in table.rows]
