"""The report's figures: scores with CIs and score against intrinsic cost, one panel per dataset.

Each figure is written as PNG and PDF. Tick labels are wrapped and rotated, and the figure widens
until no two labels overlap (``overlapping_labels`` checks the drawn bounding boxes); error bars
are black with caps so they stay visible on every bar colour.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from memharness.eval.report.paired import label as row_label
from memharness.memsys.services import files as fileio

ERROR_STYLE = {"ecolor": "black", "elinewidth": 1.2, "capsize": 4, "capthick": 1.2}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def overlapping_labels(fig) -> list[tuple[str, str]]:
    """Pairs of tick labels (within one axis) that collide when drawn.

    Horizontal labels collide when their boxes overlap. Rotated labels are parallel strips: two
    collide when the distance between their anchors across the strips (the horizontal gap times
    sin of the angle) is smaller than the text's height."""
    if not hasattr(fig.canvas, "get_renderer"):  # a figure closed by pyplot: give it a canvas again
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    clashes = []
    for ax in fig.axes:
        for ticks in (
            ax.get_xticklabels(),
            ax.get_yticklabels(),
            ax.get_xticklabels(minor=True),
            ax.get_yticklabels(minor=True),
        ):
            shown = [t for t in ticks if t.get_text() and t.get_visible()]
            for i, a in enumerate(shown):
                clashes += [
                    (a.get_text(), b.get_text())
                    for b in shown[i + 1 :]
                    if _collide(a, b, renderer, fig.dpi)
                ]
    return clashes


def _collide(a, b, renderer, dpi: float) -> bool:
    angle = math.radians(a.get_rotation() % 180)
    if angle == 0 or a.get_rotation() != b.get_rotation():
        return a.get_window_extent(renderer).overlaps(b.get_window_extent(renderer))
    xa = a.get_transform().transform(a.get_position())[0]
    xb = b.get_transform().transform(b.get_position())[0]
    lines = max(a.get_text().count("\n"), b.get_text().count("\n")) + 1
    height = a.get_fontsize() * dpi / 72 * 1.2 * lines
    return abs(xa - xb) * abs(math.sin(angle)) < height


def _save(fig, out: Path, name: str) -> list[Path]:
    """Rotate crowded x labels, then widen until no labels overlap; write PNG and PDF."""
    for _ in range(10):
        clashes = overlapping_labels(fig)
        if not clashes:
            break
        crowded = [
            ax for ax in fig.axes if any(t.get_rotation() == 0 for t in ax.get_xticklabels())
        ]
        if crowded:
            for ax in crowded:
                for t in ax.get_xticklabels():
                    t.set(rotation=45, ha="right", rotation_mode="anchor")
            continue
        w, h = fig.get_size_inches()
        fig.set_size_inches(w * 1.3, h)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    try:  # atomic: a reader never sees half a figure
        fileio.atomic_write(
            paths[0],
            lambda f: fig.savefig(f, dpi=150, bbox_inches="tight", format="png"),
            mode="wb",
        )
        fileio.atomic_write(
            paths[1], lambda f: fig.savefig(f, bbox_inches="tight", format="pdf"), mode="wb"
        )
    finally:
        _plt().close(fig)
    return paths


def _labels(frame: pd.DataFrame) -> list[str]:
    out = []
    for _, r in frame.iterrows():
        text = row_label({"memory": r["memory"], "setting": r["setting"]})
        out.append(textwrap.fill(text, 22) + f"\nn={r['n']}, set {r['set']}")
    return out


def score_bars(wide: pd.DataFrame, metrics: Sequence[str], out: Path, name: str) -> list[Path]:
    """Grouped bars (one bar per metric, CI whiskers), one panel per dataset."""
    present = [m for m in metrics if f"{m}.mean" in wide and wide[f"{m}.mean"].notna().any()]
    if not present:
        return []
    plt = _plt()
    datasets = sorted(wide["dataset"].unique())
    widths = [max(2.2, 1.1 * (wide["dataset"] == d).sum()) for d in datasets]
    fig, axes = plt.subplots(
        1,
        len(datasets),
        figsize=(sum(widths) + 1.5, 4.2),
        squeeze=False,
        gridspec_kw={"width_ratios": widths},
        layout="constrained",
    )
    bar = 0.8 / len(present)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, dataset in zip(axes[0], datasets, strict=False):
        frame = wide[wide["dataset"] == dataset].reset_index(drop=True)
        for k, metric in enumerate(present):
            rows = frame[frame[f"{metric}.mean"].notna()]
            means = rows[f"{metric}.mean"].astype(float)
            errs = [
                means - rows[f"{metric}.ci_low"].astype(float),
                rows[f"{metric}.ci_high"].astype(float) - means,
            ]
            ax.bar(
                rows.index + k * bar,
                means,
                bar,
                yerr=errs,
                error_kw=ERROR_STYLE,
                label=metric,
                color=colours[k % len(colours)],
            )
        ax.set_xticks(
            frame.index + bar * (len(present) - 1) / 2,
            _labels(frame),
            rotation=30,
            ha="right",
            fontsize=8,
        )
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{dataset} (set {', '.join(sorted(frame['set'].unique()))})", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("mean (95% CI)")
    handles, names = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        for h, n in zip(*ax.get_legend_handles_labels(), strict=False):
            if n not in names:
                handles.append(h)
                names.append(n)
    fig.legend(
        handles,
        names,
        loc="outside upper center",
        ncol=min(len(names), 6),
        frameon=False,
        fontsize=8,
    )
    return _save(fig, out, name)


def cost_scatter(wide: pd.DataFrame, metric: str, out: Path, name: str) -> list[Path]:
    """Score (with CI) against the method's intrinsic tokens per question, one panel per dataset."""
    if "tokens_per_question" not in wide or f"{metric}.mean" not in wide:
        return []
    data = wide[wide["tokens_per_question"].notna() & wide[f"{metric}.mean"].notna()]
    if data.empty:
        return []
    plt = _plt()
    from matplotlib.ticker import NullFormatter

    datasets = sorted(data["dataset"].unique())
    fig, axes = plt.subplots(
        1,
        len(datasets),
        figsize=(4.2 * len(datasets) + 2.5, 3.6),
        squeeze=False,
        layout="constrained",
    )
    markers = "osD^vP*Xh<>"
    for ax, dataset in zip(axes[0], datasets, strict=False):
        frame = data[data["dataset"] == dataset]
        for i, (_, r) in enumerate(frame.iterrows()):
            mean = float(r[f"{metric}.mean"])
            ax.errorbar(
                [max(float(r["tokens_per_question"]), 1.0)],
                [mean],
                yerr=[
                    [mean - float(r[f"{metric}.ci_low"])],
                    [float(r[f"{metric}.ci_high"]) - mean],
                ],
                fmt=markers[i % len(markers)],
                markersize=7,
                capsize=4,
                elinewidth=1.2,
                label=row_label({"memory": r["memory"], "setting": r["setting"]})
                + f" (set {r['set']})",
            )
        tokens = frame["tokens_per_question"].astype(float).clip(lower=1.0)
        log = (
            tokens.max() / tokens.min() >= 10
        )  # within one decade a log axis would show no labelled tick
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(
                NullFormatter()
            )  # minor log labels (2x10^2, 3x10^2, ...) collide
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("method tokens per question (intrinsic" + (", log)" if log else ")"))
        ax.set_title(dataset, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    axes[0][0].set_ylabel(f"{metric} (95% CI)")
    return _save(fig, out, name)


PARETO_AXES = (
    ("context_tokens.mean", "context tokens per question", 1.0),
    ("search_latency_s.p50", "search latency p50 (s)", 1e-4),
)  # (wide column, axis label, floor: a log axis cannot show 0)


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats (x no higher and y no lower, one strictly),
    ordered by x: lower cost with higher accuracy is better."""
    front = [
        i
        for i, (x, y) in enumerate(points)
        if not any(
            (ox <= x and oy >= y) and (ox < x or oy > y)
            for j, (ox, oy) in enumerate(points)
            if j != i
        )
    ]
    return sorted(front, key=lambda i: points[i])


def pareto(wide: pd.DataFrame, metric: str, out: Path, name: str) -> list[Path]:
    """Accuracy (with CI) against context tokens per question and against search latency p50, one
    row of panels per question set (``set``), one point per system; the front is joined by a line."""
    axes_cols = [a for a in PARETO_AXES if a[0] in wide]
    if f"{metric}.mean" not in wide or not axes_cols:
        return []
    data = wide[wide[f"{metric}.mean"].notna()]
    sets = sorted(data["set"].unique())
    if not sets:
        return []
    plt = _plt()
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(
        len(sets),
        len(axes_cols),
        figsize=(4.4 * len(axes_cols) + 2.5, 3.4 * len(sets)),
        squeeze=False,
        layout="constrained",
    )
    markers = "osD^vP*Xh<>"
    for row, group in zip(axes, sets, strict=False):
        frame = data[data["set"] == group]
        for ax, (col, label, floor) in zip(row, axes_cols, strict=False):
            rows = frame[frame[col].notna()]
            xs = rows[col].astype(float).clip(lower=floor).tolist()
            ys = rows[f"{metric}.mean"].astype(float).tolist()
            for i, (x, y, (_, r)) in enumerate(zip(xs, ys, rows.iterrows(), strict=True)):
                ax.errorbar(
                    [x],
                    [y],
                    yerr=[[y - float(r[f"{metric}.ci_low"])], [float(r[f"{metric}.ci_high"]) - y]],
                    fmt=markers[i % len(markers)],
                    markersize=7,
                    capsize=4,
                    elinewidth=1.2,
                    label=row_label({"memory": r["memory"], "setting": r["setting"]}),
                )
            front = pareto_front(list(zip(xs, ys, strict=True)))
            if len(front) > 1:
                ax.plot([xs[i] for i in front], [ys[i] for i in front], "k--", lw=0.8)
            if xs and max(xs) / min(xs) >= 10:
                ax.set_xscale("log")
                ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(-0.05, 1.05)
            ax.set_xlabel(label)
            dataset = ", ".join(sorted(frame["dataset"].unique()))
            ax.set_title(f"{dataset} (set {group}, n={int(frame['n'].max())})", fontsize=10)
            ax.grid(alpha=0.3)
        row[0].set_ylabel(f"{metric} (95% CI)")
        row[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return _save(fig, out, name)
