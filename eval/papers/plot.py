"""Published vs reproduced, one dumbbell per cell: the paper's number (open diamond, or a bar for a
range), the reproduced mean (dot) with its 95% CI, and "no run" where no run fills the cell.
One panel per unit, so percentages and counts never share an axis."""

from __future__ import annotations

from pathlib import Path

from memharness.eval.papers.match import STATUS_TEXT, Resolved
from memharness.eval.papers.store import Paper, Table


def _items(grid: list[list[Resolved]]) -> list[Resolved]:
    """Cells with something to draw: a published number or a reproduced one."""
    return [
        r
        for line in grid
        for r in line
        if r.row.system is not None and (r.cell.numbers() or r.status == "ok")
    ]


def write_plot(paper: Paper, table: Table, grid: list[list[Resolved]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = _items(grid)
    units = sorted({r.cell.unit for r in items}) or ["-"]
    heights = [max(1, sum(r.cell.unit == u for r in items)) for u in units]
    fig, axes = plt.subplots(
        len(units),
        1,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        figsize=(7.5, 1.2 + 0.26 * sum(heights) + 0.5 * len(units)),
    )
    for ax, unit in zip(axes[:, 0], units, strict=False):
        members = [r for r in items if r.cell.unit == unit]
        for y, res in enumerate(reversed(members)):
            _draw(ax, y, res)
        ax.set_yticks(range(len(members)))
        ax.set_yticklabels([_label(r) for r in reversed(members)], fontsize=7)
        ax.set_ylim(-0.7, len(members) - 0.3)
        ax.set_xlabel(unit, fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    handles = [
        plt.Line2D(
            [], [], marker="D", color="tab:gray", markerfacecolor="none", ls="", label="published"
        ),
        plt.Line2D([], [], marker="o", color="tab:blue", ls="", label="reproduced (95% CI)"),
    ]
    fig.legend(handles=handles, loc="upper center", ncol=2, frameon=False, fontsize=8)
    fig.suptitle(f"{paper.short}, {table.title}", fontsize=9, y=0.995, x=0.02, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _label(res: Resolved) -> str:
    """The cell's row and column; a cell with nothing reproduced says why ("no run", "n/a")."""
    text = f"{res.row.label} · {res.column.label}"
    return text if res.status == "ok" else f"{text} ({STATUS_TEXT[res.status]})"


def _draw(ax, y: int, res: Resolved) -> None:
    c = res.cell
    if c.low is not None and c.high is not None:
        ax.plot([c.low, c.high], [y, y], color="tab:gray", lw=5, alpha=0.5, solid_capstyle="butt")
    elif c.value is not None:
        ax.plot([c.value], [y], marker="D", color="tab:gray", markerfacecolor="none", ls="")
    if res.status != "ok":
        return
    v = res.value
    if v.ci_low is not None and v.ci_high is not None:
        ax.errorbar(
            [v.mean],
            [y],
            xerr=[[v.mean - v.ci_low], [v.ci_high - v.mean]],
            fmt="o",
            color="tab:blue",
            capsize=2,
            ms=4,
        )
    else:
        ax.plot([v.mean], [y], marker="o", color="tab:blue", ls="", ms=4)
    if c.value is not None and c.relation in ("=", "~"):
        ax.plot([c.value, v.mean], [y, y], color="tab:blue", lw=0.6, alpha=0.5)
