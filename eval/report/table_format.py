"""The report's sections (scores, retrieval, cost, judge reliability, paired comparison) as
markdown and LaTeX. Every cell is text built here; LaTeX special characters are escaped."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from memharness.eval.metrics import kinds
from memharness.eval.report.tables import short_model
from memharness.memsys.services.formats import latex_escape, markdown_cell

COST_COLUMNS = (
    "build_calls",
    "build_tokens",
    "embed_texts",
    "method_calls",
    "method_tokens",
    "tokens_per_question",
    "method_usd",
    "method_llm_s",
    "eval_calls",
    "eval_usd",
)
JUDGE_COLUMNS = (
    "judge_accepts_reference",
    "judge_far_other",
    "judge_far_wrong",
    "judge_kappa_lenient",
    "judge_kappa_judge2",
)


@dataclass
class Section:
    """One table of the report: a title, a header, text cells, cells to bold and a note."""

    title: str
    header: list[str]
    rows: list[list[str]]
    bold: set[tuple[int, int]] = field(default_factory=set)
    note: str = ""


def number(value: Any, digits: int = 3) -> str:
    """A number for a table cell; '-' for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        if value.is_integer():
            return f"{int(value):,}"
        return f"{value:.{digits}f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def no_verdict(row: pd.Series) -> int:
    """Answers of the run the judge gave no verdict on (reply unparsed or call failed)."""
    return sum(int(_float(row.get(k)) or 0) for k in ("judge_unparsed", "judge_failed"))


def metric_cell(row: pd.Series, metric: str) -> str:
    """'mean [low, high]' (or '-' when the run lacks the metric); the judge's cell says how many
    answers got no verdict, since its mean is over the others only."""
    missing = no_verdict(row) if metric == "judge" else 0
    mark = f" ({missing} no verdict)" if missing else ""
    mean = row.get(f"{metric}.mean")
    if mean is None or pd.isna(mean):
        return "-" + mark
    low, high = float(row[f"{metric}.ci_low"]), float(row[f"{metric}.ci_high"])
    if abs(float(mean)) >= 1000:  # token counts
        return f"{float(mean):,.0f} [{low:,.0f}, {high:,.0f}]"
    return f"{float(mean):.3f} [{low:.3f}, {high:.3f}]" + mark


def _ident(wide: pd.DataFrame, models: bool = False) -> list[str]:
    cols = ["memory"] + (["setting"] if (wide["setting"] != "").any() else []) + ["dataset", "set"]
    if models:
        cols += ["llm", "embedder", "judge"] + (["judge2"] if (wide["judge2"] != "-").any() else [])
        cols += ["n", "seed"]
    return cols


def _ident_cells(row: pd.Series, cols: Sequence[str]) -> list[str]:
    return [
        short_model(row[c])
        if c in ("llm", "embedder", "judge", "judge2")
        else (memory_label(row) if c == "memory" else row[c] if c != "setting" else (row[c] or "-"))
        for c in cols
    ]


def memory_label(row: pd.Series) -> str:
    """The memory cell: an oracle (it reads the gold evidence) says so, since it is never ranked."""
    return f"{row['memory']} {ORACLE_MARK}" if row.get("oracle") else str(row["memory"])


ORACLE_MARK = "(oracle: gold evidence, not ranked)"


def metric_section(
    title: str,
    wide: pd.DataFrame,
    metrics: Sequence[str],
    best: set[tuple[int, str]],
    note: str,
    models: bool = False,
    extra: Sequence[str] = (),
) -> Section | None:
    """Rows x metrics with CIs; cells in ``best`` bold."""
    metrics = [
        m
        for m in metrics
        if (f"{m}.mean" in wide and wide[f"{m}.mean"].notna().any())
        or (m == "judge" and any(no_verdict(r) for _, r in wide.iterrows()))
    ]
    if not metrics:
        return None
    ident = _ident(wide, models) + list(extra)
    rows, bold = [], set()
    for i, (idx, row) in enumerate(wide.iterrows()):
        rows.append(
            [str(c) for c in _ident_cells(row, ident)] + [metric_cell(row, m) for m in metrics]
        )
        bold.update((i, len(ident) + j) for j, m in enumerate(metrics) if (idx, m) in best)
    return Section(title, ident + [kinds.header(m) for m in metrics], rows, bold, note)


def column_section(
    title: str,
    wide: pd.DataFrame,
    columns: Sequence[str],
    note: str,
    rates: bool = False,
    significant: bool = False,
) -> Section | None:
    """Rows x plain numeric columns: counts and amounts (cost), rates shown with 3 decimals, or
    (``significant``) 3 significant digits (latencies from microseconds to minutes)."""
    columns = [c for c in columns if c in wide]  # a column exists when some run measured it
    if not any(wide[c].notna().any() for c in columns):
        return None
    ident = _ident(wide)

    def cell(value: Any) -> str:
        v = _float(value)
        if v is None:
            return "-"
        return f"{v:.3f}" if rates else f"{v:.3g}" if significant and abs(v) < 1000 else number(v)

    rows = [
        [str(c) for c in _ident_cells(row, ident)] + [cell(row[c]) for c in columns]
        for _, row in wide.iterrows()
    ]
    return Section(title, ident + list(columns), rows, set(), note)


def _float(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def paired_section(paired: pd.DataFrame, baseline: str) -> Section | None:
    if paired.empty:
        return None
    rows = [
        [
            r["row"],
            r["dataset"],
            r["set"],
            r["metric"],
            f"{int(r['n_pairs'])}/{int(r['questions'])}",
            f"{r['mean']:.3f}",
            f"{r['baseline_mean']:.3f}",
            f"{r['diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
            r["test"],
            f"{r['p']:.3g}",
        ]
        for _, r in paired.iterrows()
    ]
    header = [
        "memory",
        "dataset",
        "set",
        "metric",
        "pairs",
        "mean",
        f"{baseline}",
        "diff [95% CI]",
        "test",
        "p",
    ]
    bold = {
        (i, 7) for i, (_, r) in enumerate(paired.iterrows()) if r["ci_low"] > 0 or r["ci_high"] < 0
    }
    note = (
        f"Each row minus `{baseline}` over the questions both answered (pairs: those questions / the "
        "questions of the two runs; paired bootstrap CI of the mean "
        "difference; exact McNemar test for 0/1 metrics, sign-flip permutation test otherwise). Bold: the CI "
        "excludes 0. No correction for multiple comparisons."
    )
    return Section(f"Paired comparison against {baseline}", header, rows, bold, note)


def sets_note(runs: Sequence[dict[str, Any]]) -> str:
    """What each comparable-group letter stands for."""
    seen = {}
    for r in runs:
        seen.setdefault(
            r["group"],
            f"{r['dataset']}, {r['n']} questions (qset {r['qset']}), judge "
            f"{short_model(r['judge_model'])}",
        )
    return "Sets (rows are ranked only within a set): " + "; ".join(
        f"{k} = {v}" for k, v in sorted(seen.items())
    )


def to_markdown(sections: Sequence[Section], title: str, preface: str = "") -> str:
    lines = [f"# {title}", ""] + ([preface, ""] if preface else [])
    for s in sections:
        lines += [
            f"## {s.title}",
            "",
            "| " + " | ".join(markdown_cell(h) for h in s.header) + " |",
            "|" + "---|" * len(s.header),
        ]
        for i, row in enumerate(s.rows):
            cells = [
                f"**{markdown_cell(c)}**" if (i, j) in s.bold and c != "-" else markdown_cell(c)
                for j, c in enumerate(row)
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", s.note, ""] if s.note else [""]
    return "\n".join(lines)


def to_latex(sections: Sequence[Section]) -> str:
    """One booktabs tabular per section, every cell escaped."""
    out = []
    for s in sections:
        out += [
            f"% {s.title}",
            "\\begin{tabular}{" + "l" * len(s.header) + "}",
            "\\toprule",
            " & ".join(latex_escape(h) for h in s.header) + " \\\\",
            "\\midrule",
        ]
        for i, row in enumerate(s.rows):
            cells = [
                f"\\textbf{{{latex_escape(c)}}}"
                if (i, j) in s.bold and c != "-"
                else latex_escape(c)
                for j, c in enumerate(row)
            ]
            out.append(" & ".join(cells) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(out)
