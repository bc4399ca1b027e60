"""The papers' tables with reproduced numbers beside the published ones.

    memharness papers results/runs                      # every stored paper table
    memharness papers results/runs/sweep --paper memtree_2024 --table 4
    memharness papers RUN_OR_SWEEP ... --out results/papers --no-plot
    memharness papers --no-runs --paper cam_2025 --table 2     # the stored table

For each table of ``eval/papers/published/<paper>.yaml`` it prints the paper's layout where every cell
reads ``published / reproduced [95% CI] / difference · n · run``, flags (⚑) the runs whose
setting differs from the paper's (model, embedder, judge, subset, budget, top-k, ...), and
writes ``<paper>_<table>.md``, ``.tex`` (escaped) and ``.png`` (published vs reproduced), plus
``<name>.csv`` / ``<name>.json`` with one record per cell. Nothing is estimated. Reads only run
folders: metrics.json, config.yaml, memory_stats.json. A cell no run fills says what is missing
("no run: dataset qmsum", "no run: raptor on fables", "system not in harness"); ``--no-runs``
prints the stored tables that way without any run folder.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from memharness.eval.papers import plot as paper_plot
from memharness.eval.papers.load import load_all
from memharness.eval.papers.match import STATUS_TEXT, Resolved, resolve_table
from memharness.eval.papers.names import conf_dir
from memharness.eval.papers.runs import PaperReportError, Run, load_runs
from memharness.eval.papers.store import FOLDER, Paper, PublishedError, Table
from memharness.memsys.services import files as fileio
from memharness.memsys.services.formats import latex_escape, markdown_cell

WHOLE_UNITS = ("count", "calls", "chunks", "depth")
SYMBOLS = {"~": "≈ ", ">": "> ", "<": "< ", "=": ""}


def fmt(x: float, decimals: int, unit: str = "") -> str:
    if unit in WHOLE_UNITS and float(x).is_integer():
        return str(int(x))
    if isinstance(x, int) and not isinstance(x, bool):
        return str(x)
    return f"{x:.{decimals}f}"


def published_text(res: Resolved) -> str:
    c = res.cell
    if c.relation == "in":
        return f"{fmt(c.low, 0, 'depth')}–{fmt(c.high, 0, 'depth')}"
    if c.value is None:
        return "—"
    text = SYMBOLS[c.relation] + fmt(c.value, c.decimals, c.unit)
    return text + (f" ± {fmt(c.sd, c.decimals)}" if c.sd is not None else "")


def reproduced_text(res: Resolved) -> str:
    if (
        res.status == "not_run" and res.reason
    ):  # names what is missing: a dataset, a system, a setting
        return f"{STATUS_TEXT['not_run']}: {res.reason}"
    if res.status != "ok":
        return STATUS_TEXT[res.status]
    v, d, unit = res.value, res.cell.decimals, res.cell.unit
    text = fmt(v.mean, d, unit if v.n in (None, 1) else "")
    if res.cell.sd is not None and v.sd is not None:
        text += f" ± {fmt(v.sd, d)}"
    if v.ci_low is not None and v.ci_high is not None:
        text += f" [{fmt(v.ci_low, d)}, {fmt(v.ci_high, d)}]"
    return text


def verdict_text(res: Resolved) -> str:
    if res.diff is not None:
        whole = res.cell.unit in WHOLE_UNITS and float(res.diff).is_integer()
        return f"{int(res.diff):+d}" if whole else f"{res.diff:+.{res.cell.decimals}f}"
    holds = res.holds
    return "" if holds is None else ("✓" if holds else "✗")


def cell_parts(res: Resolved, letters: dict[str, str]) -> tuple[str, str]:
    """(numbers, annotations) of one cell: ``84.8 / 61.2 [55.0, 67.1] / -23.6`` and ``n=40 · a⚑``."""
    if not res.published and res.status != "ok":
        return "", ""
    numbers = " / ".join(
        p for p in (published_text(res), reproduced_text(res), verdict_text(res)) if p
    )
    notes = []
    if res.status == "ok" and res.value.n is not None:
        notes.append(f"n={res.value.n}" + (f"/{res.cell.paper_n}" if res.cell.paper_n else ""))
    if res.runs:
        notes.append("".join(letters[str(r.folder)] for r in res.runs) + ("⚑" if res.flags else ""))
    return numbers, " · ".join(notes)


def run_letters(grid: list[list[Resolved]]) -> dict[str, str]:
    """a, b, c, ... for the runs in order of first use."""
    letters: dict[str, str] = {}
    for line in grid:
        for res in line:
            for run in res.runs:
                key = str(run.folder)
                if key not in letters:
                    i = len(letters)
                    letters[key] = (chr(97 + i // 26 - 1) if i >= 26 else "") + chr(97 + i % 26)
    return letters


def setting_line(table: Table) -> str:
    judged = any(c.metric == "judge" for c in table.cells.values())
    parts = [
        f"{k} {getattr(table, k).name}" if getattr(table, k) else f"{k} not stated"
        for k in ("model", "embedder", "judge")
        if k != "judge" or judged
    ]
    if table.protocol:
        parts.append(
            "protocol "
            + ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(table.protocol.items()))
        )
    units = sorted({c.unit for c in table.columns})
    return " · ".join(parts) + f" · units: {', '.join(units)}"


def experiment_line(table: Table) -> str:
    """How to run what the table needs: the experiment named in the published file."""
    if table.experiment is None:
        return ""
    path = conf_dir() / "experiment" / f"{table.experiment}.yaml"
    sweep = path.is_file() and bool((yaml.safe_load(path.read_text()) or {}).get("sweep_only"))
    return (
        f"runs: `python run.py{' -m' if sweep else ''} experiment={table.experiment}` "
        f"(its header lists what differs from the paper's protocol)"
    )


def legend(table: Table, grid: list[list[Resolved]], letters: dict[str, str]) -> list[str]:
    """Runs with their differences from the paper, rows not in the harness, notes and gaps."""
    runs: dict[str, tuple[Run, set[str], int]] = {}
    for line in grid:
        for res in line:
            for run in res.runs:
                _, flags, alts = runs.get(str(run.folder), (run, set(), 0))
                own = (
                    {f for f in res.flags if not f.startswith("n=")}
                    if len(res.runs) == 1
                    else set()
                )
                runs[str(run.folder)] = (run, flags | own, max(alts, res.alternatives))
    lines = []
    for key, (run, flags, alts) in sorted(runs.items(), key=lambda kv: letters[kv[0]]):
        more = f"; {alts} other matching run(s) not shown" if alts else ""
        lines.append(
            f"{letters[key]}: {run.folder} ({run.memory} on {run.dataset}{more})"
            + (": ⚑ " + "; ".join(sorted(flags)) if flags else "")
        )
    absent = [f"{r.label}: {r.why}" for r in table.rows if r.system is None]
    if absent:
        lines.append("Not in this harness: " + " | ".join(absent))
    gaps = [
        f"{res.row.label} / {res.column.label}: {res.reason}"
        for line in grid
        for res in line
        if res.published and res.status in ("missing", "not_computable") and res.reason
    ]
    if gaps:
        lines.append("Not reproduced: " + " | ".join(gaps))
    notes = [
        f"{res.row.label} / {res.column.label}: {res.cell.note}"
        for line in grid
        for res in line
        if res.published and res.cell.note and res.status != "not_computable"
    ]
    if table.note:
        lines.append(f"Note: {table.note}")
    if notes:
        lines.append("Cell notes: " + " | ".join(notes))
    return lines


def row_label(row: Any, line: list[Resolved]) -> str:
    """The row's label; a row reproduced by an oracle run (metrics.json ``oracle``: it reads the
    gold evidence) says so: it is a reference, not a memory system."""
    oracle = any(run.metrics.get("oracle") for res in line for run in res.runs)
    return f"{row.label} (oracle)" if oracle and "oracle" not in row.label.lower() else row.label


KEY = (
    "Each cell: published / reproduced [95% CI] / reproduced − published (✓/✗: the paper's bound "
    "or range is met or not) · n (/the paper's n) · run (⚑: its setting differs from the paper's)."
)


def markdown(paper: Paper, table: Table, grid: list[list[Resolved]]) -> str:
    letters = run_letters(grid)
    out = [
        f"### {paper.short}, {table.title}: {table.caption}",
        "",
        f"`{paper.key}` v{paper.version} · paper: {setting_line(table)}",
        "",
        *([experiment_line(table), ""] if table.experiment else []),
        "| | " + " | ".join(c.label for c in table.columns) + " |",
        "|---|" + "---|" * len(table.columns),
    ]
    for row, line in zip(table.rows, grid, strict=False):
        cells = []
        for res in line:
            numbers, notes = cell_parts(res, letters)
            cells.append(numbers + (f" · {notes}" if notes else ""))
        out.append(
            f"| {row_label(row, line)} | " + " | ".join(markdown_cell(c) for c in cells) + " |"
        )
    out += ["", KEY, ""] + [f"- {line}" for line in legend(table, grid, letters)]
    return "\n".join(out) + "\n"


def latex(paper: Paper, table: Table, grid: list[list[Resolved]]) -> str:
    letters = run_letters(grid)
    cols = "l" + "c" * len(table.columns)
    out = [
        "% generated by memharness papers; needs \\usepackage{booktabs,amssymb}",
        "\\begin{table}[t]",
        "\\centering",
        "\\footnotesize",
        f"\\caption{{{latex_escape(f'{paper.short}, {table.title}: {table.caption}')}}}",
        f"\\begin{{tabular}}{{{cols}}}",
        "\\toprule",
        " & ".join([""] + [latex_escape(c.label) for c in table.columns]) + " \\\\",
        "\\midrule",
    ]
    for row, line in zip(table.rows, grid, strict=False):
        cells = []
        for res in line:
            numbers, notes = cell_parts(res, letters)
            cells.append(
                latex_escape(numbers)
                + (f"\\textsuperscript{{{latex_escape(notes)}}}" if notes else "")
            )
        out.append(" & ".join([latex_escape(row_label(row, line))] + cells) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}", "", f"\\par {latex_escape(KEY)}"]
    if table.experiment:
        out.append(f"\\par {latex_escape(experiment_line(table).replace('`', ''))}")
    out += [f"\\par {latex_escape(line)}" for line in legend(table, grid, letters)]
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


def records(paper: Paper, table: Table, grid: list[list[Resolved]]) -> list[dict[str, Any]]:
    """One flat record per cell (the long format of the CSV and JSON outputs)."""
    out = []
    for line in grid:
        for res in line:
            c, v = res.cell, res.value
            out.append(
                {
                    "paper": paper.key,
                    "version": paper.version,
                    "table": table.id,
                    "row": res.row.id,
                    "row_label": res.row.label,
                    "system": res.row.system,
                    "column": res.column.id,
                    "column_label": res.column.label,
                    "dataset": "|".join(c.datasets),
                    "category": "=".join(c.category) if c.category else "",
                    "metric": c.metric,
                    "unit": c.unit,
                    "relation": c.relation,
                    "published": c.value,
                    "published_low": c.low,
                    "published_high": c.high,
                    "published_sd": c.sd,
                    "in_paper": res.published,
                    "reproduced": v.mean if v else None,
                    "ci_low": v.ci_low if v else None,
                    "ci_high": v.ci_high if v else None,
                    "sd": v.sd if v else None,
                    "diff": res.diff,
                    "holds": res.holds,
                    "n": v.n if v else None,
                    "paper_n": c.paper_n,
                    "status": res.status,
                    "reason": res.reason,
                    "runs": "|".join(str(r.folder) for r in res.runs),
                    "flags": "; ".join(res.flags),
                }
            )
    return out


def select_tables(
    papers: list[Paper], paper_key: str | None, table_id: str | None
) -> list[tuple[Paper, Table]]:
    if paper_key is not None:
        papers = [p for p in papers if p.key == paper_key]
        if not papers:
            raise PublishedError(
                f"no published numbers for paper {paper_key!r}; known: "
                f"{[p.key for p in load_all()]}"
            )
    picked = [
        (p, t)
        for p in papers
        for t in p.tables
        if table_id is None or t.id.lower() == table_id.lower()
    ]
    if not picked:
        raise PublishedError(
            f"no table {table_id!r} in {[p.key for p in papers]}; tables: "
            f"{ {p.key: [t.id for t in p.tables] for p in papers} }"
        )
    if table_id is not None and len({p.key for p, _ in picked}) > 1:
        raise PublishedError(
            f"table {table_id!r} is in several papers {[p.key for p, _ in picked]}: give --paper"
        )
    return picked


def build_report(
    paths: Sequence[str | Path],
    out: Path,
    paper_key: str | None = None,
    table_id: str | None = None,
    name: str = "paper_report",
    plot: bool = True,
    published: Path = FOLDER,
) -> dict[str, Any]:
    """Write every selected table's md / tex / png and the long-format csv / json; return paths and text."""
    runs = (
        load_runs(paths) if paths else []
    )  # no paths: the stored tables, every cell says what is missing
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Any] = {"tables": {}, "markdown": []}
    rows: list[dict[str, Any]] = []
    for paper, table in select_tables(load_all(published), paper_key, table_id):
        grid = resolve_table(runs, table)
        stem = out / f"{paper.key}_{table.id.replace('.', '_')}"
        md = markdown(paper, table, grid)
        fileio.write_text(stem.with_suffix(".md"), md)
        fileio.write_text(stem.with_suffix(".tex"), latex(paper, table, grid))
        files = {"md": stem.with_suffix(".md"), "tex": stem.with_suffix(".tex")}
        if plot:
            files["png"] = paper_plot.write_plot(paper, table, grid, stem.with_suffix(".png"))
        written["tables"][f"{paper.key}:{table.id}"] = files
        written["markdown"].append(md)
        rows += records(paper, table, grid)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    fileio.write_text(out / f"{name}.csv", buf.getvalue())
    fileio.write_text((out / f"{name}.json"), json.dumps(rows, indent=1, ensure_ascii=False))
    written["csv"], written["json"] = out / f"{name}.csv", out / f"{name}.json"
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "runs",
        nargs="*",
        default=["results/runs"],
        help="run folders, sweeps or folders holding them",
    )
    parser.add_argument(
        "--paper",
        default=None,
        help="a file of eval/papers/published/ (e.g. memtree_2024); default all",
    )
    parser.add_argument(
        "--table", default=None, help="a table id of that paper (e.g. 4, A.2, fig5); default all"
    )
    parser.add_argument("--out", type=Path, default=Path("results/papers"))
    parser.add_argument(
        "--name", default="paper_report", help="file name of the long-format csv / json"
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--no-runs",
        action="store_true",
        help="read no run folder: the published tables, every cell naming what is missing",
    )
    args = parser.parse_args(argv)
    try:
        written = build_report(
            [] if args.no_runs else args.runs,
            args.out,
            args.paper,
            args.table,
            args.name,
            plot=not args.no_plot,
        )
    except (PaperReportError, PublishedError) as err:
        raise SystemExit(f"error: {err}") from None
    print("\n".join(written["markdown"]))
    for key, files in written["tables"].items():
        print(f"{key}: " + ", ".join(str(p) for p in files.values()))
    print(f"csv: {written['csv']}\njson: {written['json']}")


if __name__ == "__main__":
    main()
