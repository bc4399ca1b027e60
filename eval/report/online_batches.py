"""CAM Fig. 3 from run folders (``experiment=online_batches``): cost per batch and accuracy vs batch size.

    memharness online-batches results/runs --out results/figures/online_batches

For every run with ``dataset.insert_batch_size`` set, the runner recorded each batch it fed
(``memory_stats.json`` -> ``insert_batches``: units, seconds, LLM requests). Per memory and batch
size this writes the mean seconds and LLM requests per batch over every batch of every episode
(Fig. 3a; a book's last batch may be shorter) and the run's accuracy (Fig. 3b: the judge score,
else multiple-choice accuracy) to ``online_batches.md`` and ``online_batches.png``. Of repeated
settings the latest run folder wins.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from memharness.eval.record.read import read_metrics
from memharness.eval.report.memtree_figures import accuracy, find_runs
from memharness.memsys.services import files as fileio


def load_point(folder: Path) -> dict[str, Any] | None:
    """(memory, dataset, batch size) with per-batch cost and accuracy; None for runs without a batch size."""
    cfg = (
        yaml.safe_load((folder / "config.yaml").read_text())
        if (folder / "config.yaml").exists()
        else {}
    )
    size = (cfg.get("dataset") or {}).get("insert_batch_size")
    if not size:
        return None
    stats = json.loads((folder / "memory_stats.json").read_text())
    batches = [
        b for ep in stats.values() if isinstance(ep, dict) for b in ep.get("insert_batches", [])
    ]
    if not batches:
        return None
    metrics = read_metrics(folder)
    return {
        "memory": cfg["memory"]["name"],
        "dataset": cfg["dataset"]["name"],
        "batch_size": int(size),
        "batches": len(batches),
        "seconds": float(np.mean([b["seconds"] for b in batches])),
        "llm_requests": float(np.mean([b["llm_requests"] for b in batches])),
        "accuracy": accuracy(metrics, "judge")
        if accuracy(metrics, "judge") is not None
        else accuracy(metrics),
        "folder": str(folder),
    }


def collect(paths: list[str]) -> list[dict[str, Any]]:
    latest: dict[tuple, dict[str, Any]] = {}
    for folder in find_runs(paths):
        point = load_point(folder)
        if point:
            latest[(point["memory"], point["dataset"], point["batch_size"])] = point
    return sorted(latest.values(), key=lambda p: (p["dataset"], p["memory"], p["batch_size"]))


def table(points: list[dict[str, Any]]) -> str:
    rows = [
        "| dataset | memory | batch size | batches | seconds / batch | LLM requests / batch | accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in points:
        acc = "" if p["accuracy"] is None else f"{p['accuracy']:.3f}"
        rows.append(
            f"| {p['dataset']} | {p['memory']} | {p['batch_size']} | {p['batches']} | {p['seconds']:.2f} | "
            f"{p['llm_requests']:.1f} | {acc} |"
        )
    return "\n".join(rows) + "\n"


def plot(points: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    series: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for p in points:
        series.setdefault((p["dataset"], p["memory"]), []).append(p)
    for (dataset, memory), ps in series.items():
        sizes = [p["batch_size"] for p in ps]
        label = f"{memory} ({dataset})"
        axes[0].plot(sizes, [p["seconds"] for p in ps], marker="o", label=label)
        axes[1].plot(sizes, [p["llm_requests"] for p in ps], marker="o", label=label)
        if any(p["accuracy"] is not None for p in ps):
            axes[2].plot(sizes, [p["accuracy"] for p in ps], marker="o", label=label)
    for ax, label in zip(
        axes,
        ("seconds per batch (Fig. 3a)", "LLM requests per batch", "accuracy (Fig. 3b)"),
        strict=False,
    ):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size (units)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run folders or folders holding them")
    parser.add_argument("--out", default="results/figures/online_batches")
    args = parser.parse_args(argv)
    points = collect(args.paths)
    if not points:
        print("no run with dataset.insert_batch_size set under", " ".join(args.paths))
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fileio.write_text((out / "online_batches.md"), table(points))
    plot(points, out / "online_batches.png")
    print(f"{len(points)} settings -> {out / 'online_batches.md'}, {out / 'online_batches.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
