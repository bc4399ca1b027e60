"""The coarsening-traversal (C-T) coupling table: accuracy per hierarchical memory and traversal,
beside the self-sufficiency SS_θ of its representatives and the coherence of its groupings.

The theory paper (Sec. 2.3) predicts that self-sufficient representatives (high SS_θ) favour
collapsed search and referential ones need top-down refinement; App. C adds that poorly coherent
groupings make top-down pruning unsafe. ``experiment=traversal_coupling`` runs every hierarchical
memory with each traversal on the same data; this report lines the runs up:

    memharness coupling results/runs --out results/tables --name coupling

Reads only what runs wrote (metrics.json, memory_stats.json, config.yaml).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from memharness.eval.metrics import registry
from memharness.eval.record.read import read_metrics
from memharness.memsys.services import files as fileio
from memharness.memsys.services.files import json_text

TRAVERSALS = ("collapsed", "collapsed_expand", "top_down")
METRICS = registry.names(section="scores", headline=True)


def episode_summary(stats: dict[str, Any]) -> dict[str, Any]:
    """SS_θ (mean over scored groups, with their count) and the mean coherence gap over levels of one episode."""
    ss = stats.get("ss_theta", {})
    gaps = [v["gap"] for v in stats.get("coherence", {}).values() if v.get("gap") is not None]
    return {
        "ss_values": [s["ss_theta"] for s in ss.get("samples", [])],
        "ss_status": ss.get("status"),
        "gaps": gaps,
        "levels": stats.get("structure", {}).get("levels", 0),
    }


def load_run(folder: Path, metric: str | None) -> dict[str, Any] | None:
    """One row: memory, traversal, accuracy with CI and n, SS_θ, coherence gap; None if not hierarchical."""
    stats = json.loads((folder / "memory_stats.json").read_text())
    episodes = [
        episode_summary(s) for s in stats.values() if isinstance(s, dict) and "coherence" in s
    ]
    if not episodes:
        return None
    metrics = read_metrics(folder)
    cfg = (
        yaml.safe_load((folder / "config.yaml").read_text())
        if (folder / "config.yaml").exists()
        else {}
    )
    memory = cfg.get("memory") or {}
    name = metric or next((m for m in METRICS if m in metrics.get("metrics", {})), None)
    score = metrics.get("metrics", {}).get(name) if name else None
    ss = [v for e in episodes for v in e["ss_values"]]
    gaps = [g for e in episodes for g in e["gaps"]]
    statuses = {e["ss_status"] for e in episodes}
    return {
        "folder": str(folder),
        "memory": metrics.get("memory", memory.get("name")),
        "dataset": metrics.get("dataset"),
        "traversal": memory.get("traversal", "?"),
        "top_k": memory.get("top_k"),
        "metric": name,
        "score": score,
        "ss_theta": float(np.mean(ss)) if ss else None,
        "ss_groups": len(ss),
        "ss_status": "ok" if ss else ("unavailable" if "unavailable" in statuses else "off"),
        "coherence_gap": float(np.mean(gaps)) if gaps else None,
        "levels": max(e["levels"] for e in episodes),
    }


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    found: set[Path] = set()
    for p in map(Path, paths):
        metrics = (
            [p / "metrics.json"] if (p / "metrics.json").exists() else list(p.rglob("metrics.json"))
        )
        found.update(m.parent for m in metrics if (m.parent / "memory_stats.json").exists())
    return sorted(found)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        low, high = value["ci_low"], value["ci_high"]
        return f"{value['mean']:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}] (n={value['n']})"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def coupling_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One line per (dataset, memory): score per traversal, collapsed minus top-down, SS_θ, coherence gap."""
    header = [
        "dataset",
        "memory",
        "metric",
        *TRAVERSALS,
        "collapsed - top_down",
        "SS_θ (groups)",
        "coherence gap",
        "levels",
    ]
    lines = []
    for key in sorted({(r["dataset"], r["memory"]) for r in rows}):
        mine = {r["traversal"]: r for r in rows if (r["dataset"], r["memory"]) == key}
        any_row = next(iter(mine.values()))
        mean = {t: mine[t]["score"]["mean"] for t in TRAVERSALS if t in mine and mine[t]["score"]}
        diff = (
            mean["collapsed"] - mean["top_down"] if {"collapsed", "top_down"} <= set(mean) else None
        )
        ss = [r["ss_theta"] for r in mine.values() if r["ss_theta"] is not None]
        groups = max(r["ss_groups"] for r in mine.values())
        gaps = [r["coherence_gap"] for r in mine.values() if r["coherence_gap"] is not None]
        ss_text = f"{np.mean(ss):.3f} ({groups})" if ss else any_row["ss_status"]
        lines.append(
            [
                key[0],
                key[1],
                any_row["metric"] or "-",
                *[_fmt(mine[t]["score"]) if t in mine else "-" for t in TRAVERSALS],
                _fmt(diff),
                ss_text,
                _fmt(float(np.mean(gaps)) if gaps else None),
                str(max(r["levels"] for r in mine.values())),
            ]
        )
    return header, lines


def write(rows: list[dict[str, Any]], out: Path, name: str) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    header, lines = coupling_table(rows)
    md = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(l) + " |" for l in lines),
        "",
        "Scores: mean [95% CI] (n). The C-T coupling predicts collapsed - top_down > 0 where SS_θ is high "
        "and < 0 where it is low; a small coherence gap makes top-down pruning unsafe (theory App. C).",
    ]
    paths = {"md": out / f"{name}.md", "json": out / f"{name}.json"}
    fileio.write_text(paths["md"], "\n".join(md) + "\n")
    fileio.write_text(paths["json"], json_text(rows, indent=1))
    return paths


def main(argv: Sequence[str] | None = None) -> dict[str, Path]:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "runs", nargs="*", default=["results/runs"], help="run folders or folders holding them"
    )
    ap.add_argument("--out", type=Path, default=Path("results/tables"))
    ap.add_argument("--name", default="coupling")
    ap.add_argument(
        "--metric",
        default=None,
        help="score column (default: the first of judge, mc_accuracy, f1, ...)",
    )
    args = ap.parse_args(argv)
    rows = [r for r in (load_run(f, args.metric) for f in find_runs(args.runs)) if r is not None]
    if not rows:
        raise SystemExit(f"error: no hierarchical-memory run folders under {args.runs}")
    written = write(rows, args.out, args.name)
    for fmt, path in written.items():
        print(f"{fmt}: {path}")
    return written


if __name__ == "__main__":
    main()
