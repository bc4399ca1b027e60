"""Tables and plots from run folders (reads only metrics.json and samples.jsonl).

    python -m memharness.eval.report                      # latest run of each memory x dataset under results/runs
    python -m memharness.eval.report RUN_OR_PARENT ... --out results/tables --name sample
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any, Sequence

from .aggregate import HIGHER_IS_BETTER
from .separation import judge_notes

DEFAULT_METRICS = ("judge", "mc_accuracy", "rouge_l_recall", "rouge_1_f", "rouge_l_f", "exact_match", "f1",
                   "context_tokens")


class ReportError(Exception):
    """No usable run folder, or a run folder missing a file the report needs."""


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Every folder holding a metrics.json under the given paths (a run folder or a parent)."""
    runs: set[Path] = set()
    for p in map(Path, paths):
        if (p / "metrics.json").is_file():
            runs.add(p)
        elif p.is_dir():
            runs.update(m.parent for m in p.rglob("metrics.json"))
        else:
            raise ReportError(f"{p} is neither a run folder nor a folder holding run folders")
    if not runs:
        raise ReportError(f"no run folders (with metrics.json) under {[str(p) for p in paths]}")
    return sorted(runs)


def load_run(folder: Path) -> dict[str, Any]:
    for name in ("metrics.json", "samples.jsonl"):
        if not (folder / name).is_file():
            raise ReportError(f"run folder {folder} has no {name}")
    metrics = json.loads((folder / "metrics.json").read_text())
    with open(folder / "samples.jsonl", encoding="utf-8") as f:
        n_samples = sum(1 for line in f if line.strip())
    if n_samples != metrics["counts"]["questions"]:
        raise ReportError(f"{folder}: samples.jsonl has {n_samples} lines but metrics.json counts "
                          f"{metrics['counts']['questions']} questions")
    return {"folder": str(folder), **metrics}


_NOT_CONFIG = ("memory=", "dataset=", "hydra.", "progress=")


def setting(run: dict[str, Any]) -> str:
    """The run's command-line overrides beyond memory and dataset (e.g. a sweep's parameters)."""
    return " ".join(sorted(o for o in run.get("overrides", []) if not o.startswith(_NOT_CONFIG)))


def latest_per_config(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the newest run (by folder name, a timestamp) of each (memory, dataset, setting)."""
    best: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: Path(r["folder"]).name):
        best[(run["memory"], run["dataset"], setting(run))] = run
    return list(best.values())


def table_rows(runs: list[dict[str, Any]], metrics: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
    present = [m for m in metrics if any(m in r["metrics"] for r in runs)]
    with_setting = any(setting(r) for r in runs)
    header = ["memory", *(["setting"] if with_setting else []), "dataset", "n", "failed", "judge_unparsed", *present, "judge_check", "build_s", "llm_calls"]
    rows = []
    for r in sorted(runs, key=lambda r: (r["dataset"], r["memory"], setting(r))):
        c = r["counts"]
        row = [r["memory"], *([setting(r) or "-"] if with_setting else []), r["dataset"], c["questions"],
               c["answer_failed"] + c["retrieve_failed"] + c.get("build_failed", 0),
               c["judge_unparsed"]]
        row += [r["metrics"].get(m) for m in present]
        cal = r.get("judge_calibration")
        row.append(f"{cal['says_1_to_reference']:.2f}/{cal['says_0_to_other_reference']:.2f}" if cal else None)
        row += [round(r["time"]["build_s"], 1), r["calls"]["total"]["calls"]]
        rows.append(row)
    return header, rows


def best_by_dataset(header: list[str], rows: list[list[Any]]) -> set[tuple[int, int]]:
    """(row, column) cells holding the best mean of a metric within each dataset, by its direction."""
    marked = set()
    ds = header.index("dataset")
    for col, name in enumerate(header):
        if name not in HIGHER_IS_BETTER:
            continue
        for dataset in {row[ds] for row in rows}:
            cells = [(i, row[col]["mean"]) for i, row in enumerate(rows) if row[ds] == dataset and row[col]]
            if len(cells) < 2:
                continue
            pick = max if HIGHER_IS_BETTER[name] else min
            best = pick(v for _, v in cells)
            marked.update((i, col) for i, v in cells if v == best)
    return marked


def _cell(value: Any, bold: bool, fmt: str) -> str:
    if isinstance(value, dict):
        text = f"{value['mean']:.3f} [{value['ci_low']:.3f}, {value['ci_high']:.3f}]" if fmt != "csv" \
            else f"{value['mean']:.4f}"
    elif value is None:
        text = "-"
    else:
        text = str(value)
    if bold and fmt == "md":
        return f"**{text}**"
    if bold and fmt == "tex":
        return f"\\textbf{{{text}}}"
    return text


def write_tables(runs: list[dict[str, Any]], out: Path, name: str, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, Path]:
    """Write <name>.md, .csv and .tex; the best value per metric and dataset is marked (md bold, tex bold)."""
    out.mkdir(parents=True, exist_ok=True)
    header, rows = table_rows(runs, metrics)
    best = best_by_dataset(header, rows)
    paths = {fmt: out / f"{name}.{fmt}" for fmt in ("md", "csv", "tex")}
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(_cell(v, (i, j) in best, "md") for j, v in enumerate(row)) + " |"
           for i, row in enumerate(rows)]
    md.append("")
    md.append("Means with bootstrap 95% CIs; best per dataset in bold (lower is better for context_tokens). "
              "judge_check: how often the judge says 1 to the reference itself / 0 to another question's "
              "reference (1.00/1.00 is a sound judge; x/0.00 is a judge that always agrees).")
    md += ["", *judge_notes(runs, setting)]
    paths["md"].write_text("\n".join(md) + "\n")
    with open(paths["csv"], "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows([[_cell(v, False, "csv") for v in row] for row in rows])
    tex = ["\\begin{tabular}{" + "l" * len(header) + "}", "\\toprule",
           " & ".join(h.replace("_", "\\_") for h in header) + " \\\\", "\\midrule"]
    tex += [" & ".join(_cell(v, (i, j) in best, "tex").replace("_", "\\_") for j, v in enumerate(row)) + " \\\\"
            for i, row in enumerate(rows)]
    tex += ["\\bottomrule", "\\end{tabular}"]
    paths["tex"].write_text("\n".join(tex) + "\n")
    return paths


def write_plot(runs: list[dict[str, Any]], out: Path, name: str, metrics: Sequence[str] = ("judge", "rouge_l_recall", "f1")) -> Path:
    """Grouped bars with CI whiskers: one group per (dataset, memory), one bar per metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = sorted(runs, key=lambda r: (r["dataset"], r["memory"], setting(r)))
    present = [m for m in metrics if any(m in r["metrics"] for r in runs)]
    if not present:
        raise ReportError(f"none of the metrics {list(metrics)} is in the runs")
    fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(runs)), 3.6))
    width = 0.8 / len(present)
    for k, metric in enumerate(present):
        xs, means, errs = [], [], [[], []]
        for i, r in enumerate(runs):
            s = r["metrics"].get(metric)
            if s:
                xs.append(i + k * width)
                means.append(s["mean"])
                errs[0].append(s["mean"] - s["ci_low"])
                errs[1].append(s["ci_high"] - s["mean"])
        ax.bar(xs, means, width, yerr=errs, capsize=3, label=metric)
    ax.set_xticks([i + width * (len(present) - 1) / 2 for i in range(len(runs))])
    ax.set_xticklabels([f"{r['memory']}\n{r['dataset']}" + (f"\n{setting(r)}" if setting(r) else "") for r in runs],
                       fontsize=7)
    ax.set_ylim(0, 1.2)  # headroom so the legend row never covers a bar
    ax.set_ylabel("score (mean, 95% CI)")
    ax.legend(fontsize=8, loc="upper center", ncol=len(present), frameon=False)
    fig.tight_layout()
    path = out / f"{name}.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def build_report(paths: Sequence[str | Path], out: Path, name: str, latest_only: bool = True) -> dict[str, Path]:
    runs = [load_run(f) for f in find_runs(paths)]
    if latest_only:
        runs = latest_per_config(runs)
    written = write_tables(runs, out, name)
    written["png"] = write_plot(runs, out, name)
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", default=["results/runs"], help="run folders or folders holding them")
    parser.add_argument("--out", default="results/tables", type=Path)
    parser.add_argument("--name", default="comparison")
    parser.add_argument("--all", action="store_true", help="keep every run, not only the latest per memory x dataset")
    args = parser.parse_args(argv)
    try:
        written = build_report(args.runs, args.out, args.name, latest_only=not args.all)
    except ReportError as err:
        raise SystemExit(f"error: {err}") from None
    for fmt, path in written.items():
        print(f"{fmt}: {path}")


if __name__ == "__main__":
    main()
