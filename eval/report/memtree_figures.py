"""MemTree figures and tables from run folders only (metrics.json, memory_stats.json, config.yaml).

    memharness memtree-figures results/runs/memtree-sample --out results/figures/memtree

Finds every run folder under the given paths and draws what the runs support:
  - Fig. A.6 depth distribution and Fig. A.7 accuracy heatmap over the θ0 x λ grid,
  - Fig. A.4 accuracy vs k for collapsed and traversal retrieval,
  - the insertion-order spread table (accuracy and tree statistics over shuffle seeds),
  - Fig. 4 nodes and median tokens per depth, and insertion latency / LLM calls as the tree grows,
    for every run (``fig4_<run>.png``).
Each comparison keeps the other experiments' knobs at their defaults (θ0 0.4, λ 0.5,
collapsed retrieval, stream order); of repeated settings the latest run folder wins.
Every figure is written as PNG and, beside it, PDF; heat-map cells show the score and the number
of questions behind it; the command prints every path it wrote.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from memharness.eval.record.read import read_metrics
from memharness.memsys.services import files as fileio
from memharness.memsys.services.files import json_text

DEFAULTS = {"base_threshold": 0.4, "rate": 0.5, "traversal": "collapsed", "insert_order_seed": None}
ACCURACY_KEYS = ("judge", "mc_accuracy", "accuracy", "exact_match", "f1")


def find_runs(paths: list[str]) -> list[Path]:
    """Run folders (holding metrics.json and memory_stats.json) under ``paths``, oldest first."""
    found: set[Path] = set()
    for p in map(Path, paths):
        for m in [p / "metrics.json"] if (p / "metrics.json").exists() else p.rglob("metrics.json"):
            if (m.parent / "memory_stats.json").exists():
                found.add(m.parent)
    return sorted(found, key=lambda r: (r.name, str(r)))


def accuracy(metrics: dict[str, Any], key: str | None = None) -> float | None:
    """The headline score of a run: ``key`` if given, else the first known accuracy key found."""

    def value(v: Any) -> float | None:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, dict) and isinstance(v.get("mean"), (int, float)):
            return float(v["mean"])
        return None

    for scope in (metrics, metrics.get("overall", {}), metrics.get("metrics", {})):
        if not isinstance(scope, dict):
            continue
        for k in [key] if key else ACCURACY_KEYS:
            if k in scope and value(scope[k]) is not None:
                return value(scope[k])
    return None


def accuracy_n(metrics: dict[str, Any], key: str | None = None) -> int | None:
    """How many questions the headline score averages (its ``n``), when metrics.json records it."""
    scope = metrics.get("metrics", {})
    for k in [key] if key else ACCURACY_KEYS:
        if isinstance(scope.get(k), dict) and "n" in scope[k]:
            return int(scope[k]["n"])
    return None


def save(fig: Any, path: Path, dpi: int = 120) -> list[Path]:
    """Write the figure as PNG and, beside it, PDF; return both paths."""
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    fig.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
    return [path, path.with_suffix(".pdf")]


def episode_stats(memory_stats: Any) -> list[dict[str, Any]]:
    """MemTree stats per episode, whether the file holds one stats dict, a list or a mapping by episode."""
    if isinstance(memory_stats, dict) and "structure" in memory_stats:
        return [memory_stats]
    items = memory_stats.values() if isinstance(memory_stats, dict) else memory_stats
    out = []
    for s in items:
        if isinstance(s, dict):
            out.extend(episode_stats(s) if "structure" not in s else [s])
    return out


def load_run(folder: Path, metric: str | None) -> dict[str, Any] | None:
    """One run's settings, score and per-episode tree statistics; None if it is not a MemTree run."""
    stats = episode_stats(json.loads((folder / "memory_stats.json").read_text()))
    if not stats:
        return None
    cfg = (
        yaml.safe_load((folder / "config.yaml").read_text())
        if (folder / "config.yaml").exists()
        else {}
    )
    settings = dict(stats[0].get("config", {}))
    dataset = (cfg.get("dataset") or {}).get("name") or folder.parent.name.split("-", 1)[-1]
    metrics = read_metrics(folder)
    return {
        "folder": folder,
        "dataset": dataset,
        "settings": settings,
        "stats": stats,
        "accuracy": accuracy(metrics, metric),
        "n": accuracy_n(metrics, metric),
    }


def _select(runs: list[dict], vary: tuple[str, ...]) -> dict[tuple, dict]:
    """Latest run per value of ``vary``, among runs with every other knob at its default."""
    chosen: dict[tuple, dict] = {}
    for r in runs:
        s = r["settings"]
        if all(s.get(k) == v for k, v in DEFAULTS.items() if k not in vary):
            chosen[tuple(s.get(k) for k in vary)] = r
    return chosen


def depth_counts(run: dict) -> dict[int, int]:
    """Nodes per depth summed over the run's episodes."""
    counts: dict[int, int] = {}
    for s in run["stats"]:
        for d, v in s["depth_profile"].items():
            counts[int(d)] = counts.get(int(d), 0) + v["nodes"]
    return counts


def mean_structure(run: dict) -> dict[str, float]:
    keys = run["stats"][0]["structure"].keys()
    return {k: float(np.mean([s["structure"][k] for s in run["stats"]])) for k in keys}


def fig_thresholds(runs: dict[tuple, dict], out: Path, metric: str = "accuracy") -> list[Path]:
    """Fig. A.6 (node share per depth for each θ0, λ) and Fig. A.7 (accuracy heatmap)."""
    import matplotlib.pyplot as plt

    thetas = sorted({k[0] for k in runs})
    rates = sorted({k[1] for k in runs})
    fig, axes = plt.subplots(
        len(thetas),
        len(rates),
        figsize=(3 * len(rates), 2.4 * len(thetas)),
        squeeze=False,
        sharex=True,
    )
    for i, t in enumerate(thetas):
        for j, lam in enumerate(rates):
            ax = axes[i][j]
            if (t, lam) in runs:
                c = depth_counts(runs[(t, lam)])
                total = sum(c.values()) or 1
                ax.bar(list(c), [v / total for v in c.values()], color="tab:blue")
            ax.set_title(f"θ0={t}, λ={lam}", fontsize=9)
            ax.set_xlabel("depth" if i == len(thetas) - 1 else "")
            ax.set_ylabel("share of nodes" if j == 0 else "")
    fig.tight_layout()
    paths = save(fig, out / "fig_a6_depth_distribution.png")
    plt.close(fig)
    grid = np.full((len(thetas), len(rates)), np.nan)
    counts = np.full((len(thetas), len(rates)), None, dtype=object)
    for (t, lam), r in runs.items():
        if r["accuracy"] is not None:
            grid[thetas.index(t), rates.index(lam)] = 100 * r["accuracy"]
            counts[thetas.index(t), rates.index(lam)] = r.get("n")
    fig, ax = plt.subplots(figsize=(1.2 * len(rates) + 2.5, 0.9 * len(thetas) + 2.0))
    im = ax.imshow(grid, cmap="viridis", origin="lower")
    ax.set_xticks(range(len(rates)), [str(x) for x in rates])
    ax.set_yticks(range(len(thetas)), [str(x) for x in thetas])
    ax.set_xlabel("λ (rate)")
    ax.set_ylabel("θ0 (base threshold)")
    for (a, b), v in np.ndenumerate(
        grid
    ):  # each cell: the score and how many questions it averages
        n = counts[a, b]
        text = "–" if np.isnan(v) else f"{v:.1f}" + (f"\nn={n}" if n is not None else "")
        ax.text(b, a, text, ha="center", va="center", color="w", fontsize=8)
    fig.colorbar(im, ax=ax, label=f"{metric} (%)")
    fig.tight_layout()
    paths += save(fig, out / "fig_a7_threshold_accuracy.png")
    plt.close(fig)
    return paths


def fig_retrieval(runs: dict[tuple, dict], out: Path, metric: str = "accuracy") -> list[Path]:
    """Fig. A.4: accuracy vs k, one line per traversal (collapsed; top-down, the paper's "traversal")."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for mode in ("collapsed", "top_down", "collapsed_expand"):
        pts = sorted(
            (k[1], r["accuracy"])
            for k, r in runs.items()
            if k[0] == mode and r["accuracy"] is not None
        )
        if pts:
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], marker="o", label=mode)
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric} (%)")
    ax.legend()
    fig.tight_layout()
    paths = save(fig, out / "fig_a4_retrieval_ablation.png")
    plt.close(fig)
    return paths


def order_table(runs: dict[tuple, dict], out: Path) -> list[Path]:
    """Spread of accuracy and tree statistics over insertion orders (markdown + JSON)."""
    rows = {"accuracy": [r["accuracy"] for r in runs.values() if r["accuracy"] is not None]}
    for r in runs.values():
        for k, v in mean_structure(r).items():
            rows.setdefault(k, []).append(v)
        rows.setdefault("revenue_normalised", []).append(
            float(np.mean([s["revenue"]["normalised"] for s in r["stats"]]))
        )
    summary = {
        k: {
            "mean": float(np.mean(v)),
            "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
            "min": float(np.min(v)),
            "max": float(np.max(v)),
            "n": len(v),
        }
        for k, v in rows.items()
        if v
    }
    lines = [
        f"Insertion orders: {sorted(str(k[0]) for k in runs)}",
        "",
        "| statistic | mean | std | min | max |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {k} | {s['mean']:.4g} | {s['std']:.3g} | {s['min']:.4g} | {s['max']:.4g} |"
        for k, s in summary.items()
    ]
    fileio.write_text((out / "order_spread.md"), "\n".join(lines) + "\n")
    fileio.write_text((out / "order_spread.json"), json_text(summary, indent=2))
    return [out / "order_spread.md", out / "order_spread.json"]


def fig_run(run: dict, out: Path) -> list[Path]:
    """Fig. 4 (nodes and median tokens per depth) plus insertion latency and LLM calls vs tree size."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    profile: dict[int, list[float]] = {}
    for s in run["stats"]:
        for d, v in s["depth_profile"].items():
            profile.setdefault(int(d), []).append(v["tokens_median"])
    c = depth_counts(run)
    a.bar(list(c), list(c.values()), color="tab:blue")
    a.set_xlabel("depth")
    a.set_ylabel("nodes")
    a2 = a.twinx()
    a2.plot(
        sorted(profile),
        [np.median(profile[d]) for d in sorted(profile)],
        color="tab:red",
        marker="o",
    )
    a2.set_ylabel("median tokens", color="tab:red")
    recs = [r for s in run["stats"] for r in s.get("insertions", [])]
    if recs:
        b.scatter(
            [r["nodes_before"] for r in recs], [r["seconds"] for r in recs], s=8, label="seconds"
        )
        b.set_xlabel("nodes before insertion")
        b.set_ylabel("insertion latency (s)")
        b2 = b.twinx()
        b2.scatter(
            [r["nodes_before"] for r in recs],
            [r["llm_calls"] for r in recs],
            s=8,
            color="tab:orange",
        )
        b2.set_ylabel("LLM calls", color="tab:orange")
    fig.suptitle(f"{run['folder'].parent.name}/{run['folder'].name}", fontsize=9)
    fig.tight_layout()
    paths = save(fig, out / f"fig4_{run['folder'].parent.name}_{run['folder'].name}.png", dpi=110)
    plt.close(fig)
    return paths


def main(argv: list[str] | None = None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("paths", nargs="+", help="run folders or folders containing them")
    ap.add_argument("--out", default="results/figures/memtree")
    ap.add_argument(
        "--metric", default=None, help="metrics.json key to plot (default: first accuracy key)"
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [r for r in (load_run(f, args.metric) for f in find_runs(args.paths)) if r is not None]
    written: list[Path] = []
    label = args.metric or "accuracy (first of: " + ", ".join(ACCURACY_KEYS[:2]) + ", ...)"
    for dataset in sorted({r["dataset"] for r in runs}):
        group = [r for r in runs if r["dataset"] == dataset]
        sub = out / dataset
        sub.mkdir(exist_ok=True)
        grid = _select(group, ("base_threshold", "rate"))
        if len(grid) > 1:
            written += fig_thresholds(grid, sub, label)
        ablation = _select(group, ("traversal", "top_k"))
        if len({k[0] for k in ablation}) > 1 or len(ablation) > 1:
            written += fig_retrieval(ablation, sub, label)
        orders = _select(group, ("insert_order_seed",))
        if len(orders) > 1:
            written += order_table(orders, sub)
        written += [p for r in group for p in fig_run(r, sub)]
    if written:
        print(f"wrote {len(written)} files under {out}:")
    for p in written:
        print(f"  {p}")
    if not runs:
        print(f"no MemTree run folders under {args.paths}")
    return written


if __name__ == "__main__":
    main()
