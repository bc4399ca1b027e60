"""Tables and plots from run folders (reads metrics.json, samples.jsonl and config.yaml).

    memharness report   # latest run of each row identity under results/runs
    memharness report RUN_OR_PARENT ... --out results/tables \
        --name sample --baseline full_context

Writes <name>.md / .tex (scores, memory-attributable accuracy, evidence recall, intrinsic cost, judge
reliability, paired comparison against the baseline), <name>.csv (one row per run), <name>_long.csv
(one row per run x metric: mean, CI, n), <name>_paired.csv, and the figures <name>.png/.pdf,
<name>_cost.png/.pdf and <name>_pareto.png/.pdf (accuracy against context tokens and search
latency p50); it prints every path.

Run folders still marked ``INCOMPLETE.json`` (a run that stopped early or is still going) are not
tabulated; they are listed with their reason on stdout and under the markdown table.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memharness.eval.judge.separation import judge_notes
from memharness.eval.metrics import registry
from memharness.eval.record.read import ReportError, find_incomplete, load_runs
from memharness.eval.report import (
    errata,
    headlines,
    letting_go,
    plots,
    prompt_sensitivity,
    resolution,
    tables,
)
from memharness.eval.report import table_format as fmt
from memharness.eval.report.paired import paired_frame
from memharness.memsys.services import files as fileio

DEFAULT_METRICS = (*registry.names(section="scores"), "context_tokens")


def latest_per_config(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the newest run (by folder name, a timestamp) of each row identity (``tables.IDENTITY``)."""
    return tables.latest(runs)


def write_tables(
    runs: list[dict[str, Any]],
    out: Path,
    name: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    baseline: str = "full_context",
    resamples: int = 2000,
    incomplete: Sequence[tuple[Path, str]] = (),
) -> dict[str, Path]:
    """Write <name>.md and .tex (sections), <name>.csv (one row per run), <name>_long.csv (one row per
    run x metric) and <name>_paired.csv (every row against the baseline of its comparable group)."""
    out.mkdir(parents=True, exist_ok=True)
    runs = tables.identify(runs)
    tables.assign_groups(runs)
    metrics = tables.present_metrics(runs, metrics)
    wide = add_apart_columns(tables.wide_frame(runs, metrics), runs)
    best = tables.best_cells(wide, metrics)
    order = {r["folder"]: r for r in runs}
    ordered = [order[f] for f in wide["folder"]]
    paired = paired_frame(ordered, baseline, resamples=resamples)
    sections = build_sections(wide, letting_go.without(metrics), best, paired, baseline, ordered)
    sections += letting_go.sections(wide, best)  # issue 45: empty without dataset.forget runs
    paths = {
        "md": out / f"{name}.md",
        "tex": out / f"{name}.tex",
        "csv": out / f"{name}.csv",
        "long_csv": out / f"{name}_long.csv",
        "paired_csv": out / f"{name}_paired.csv",
    }
    preface = (
        "One row per run: memory, the resolved settings that differ (setting), dataset, models, n, seed and "
        "question set. " + fmt.sets_note(ordered)
    )
    md = fmt.to_markdown(sections, f"Comparison: {name}", preface)
    if incomplete:
        md += f"\nIncomplete runs, not tabulated ({len(incomplete)}):\n\n"
        md += "".join(f"- `{folder}`: {reason}\n" for folder, reason in incomplete)
    fileio.write_text(paths["md"], md + "\n")
    fileio.write_text(paths["tex"], fmt.to_latex(sections))
    long = tables.long_frame(wide, metrics)
    for key, frame in (("csv", wide), ("long_csv", long), ("paired_csv", paired)):
        fileio.atomic_write(paths[key], lambda f, frame=frame: frame.to_csv(f, index=False))
    return paths


def apart_cells(run: dict[str, Any]) -> dict[str, float]:
    """``apart:<group>:<metric>`` means (and ``apart:<group>:n``) of the questions a dataset keeps
    out of every mean (metrics.json ``metrics_apart``: LoCoMo's category 5)."""
    cells: dict[str, float] = {}
    for group, values in sorted((run.get("metrics_apart") or {}).items()):
        cells[f"apart:{group}:n"] = values.get("n")
        for name, summary in values.items():
            if isinstance(summary, dict) and (
                name == "judge" or registry.in_section(name, "scores")
            ):
                cells[f"apart:{group}:{name}"] = summary.get("mean")
    return cells


def add_apart_columns(wide: Any, runs: list[dict[str, Any]]) -> Any:
    """The wide frame with every run's ``apart_cells`` as columns (none when no run has any)."""
    cells = {r["folder"]: apart_cells(r) for r in runs}
    names = {c for row in cells.values() for c in row}
    for column in sorted(names, key=lambda c: (c.rsplit(":", 1)[0], not c.endswith(":n"), c)):
        wide[column] = wide["folder"].map(lambda f, c=column: cells.get(f, {}).get(c))
    return wide


def build_sections(
    wide: Any,
    metrics: Sequence[str],
    best: set,
    paired: Any,
    baseline: str,
    runs: list[dict[str, Any]],
) -> list[fmt.Section]:
    """Scores, memory-attributable accuracy, retrieval, cost, judge reliability, paired comparison."""
    scores = [m for m in metrics if ":" not in m and registry.in_section(m, "scores")]
    needs = ["closed_book_accuracy"] + [m for m in metrics if m.endswith(":needs_memory")]
    retrieval = [
        m for m in metrics if registry.in_section(m, "retrieval") and m != "context_tokens"
    ] + ["context_tokens"]
    judging = ["judge", *registry.names(section="judging")]
    separation = " ".join(judge_notes(runs, lambda r: r.get("setting", "")))
    sections = [
        fmt.metric_section(
            "Scores",
            wide,
            scores,
            best,
            "Means with bootstrap 95% CIs over the questions that have "
            "the metric; best per set in bold. Models: the LLM that built and answered, the "
            "embedder, the judge. judge '(k no verdict)': k answers whose judge reply did not "
            "parse or whose judge call failed; the mean leaves them out and the run counts them "
            "as failed." + (f" {separation}" if separation else ""),
            models=True,
            extra=["failed", "judge_unparsed"],
        ),
        resolution.section(runs),
        headlines.section(runs),
        errata.section(runs),
        prompt_sensitivity.section(runs),
        fmt.metric_section(
            "Memory-attributable accuracy",
            wide,
            needs,
            best,
            "closed_book_accuracy: share answered "
            "correctly with no memory; `:needs_memory`: the metric on the other questions only.",
        ),
        fmt.metric_section(
            "Retrieval: evidence recall",
            wide,
            retrieval,
            best,
            "evidence_recall_at_k: share of the "
            "gold evidence under the top k retrieved items' provenance; evidence_recall: under every "
            "retrieved item; evidence_units: source units those items cover (a summary covers many).",
        ),
        fmt.column_section(
            "Cost (intrinsic: the same whether or not the cache served the calls)",
            wide,
            fmt.COST_COLUMNS,
            "method = build + retrieve + answer; eval = judge, closed-book pass "
            "and judge audit. Tokens are prompt + completion; USD from the configured prices; "
            "method_llm_s sums the latency of each call when it was made. What this run actually "
            "sent to a backend is metrics.json `calls`.",
        ),
        latency_section(wide, metrics),
        fmt.metric_section(
            "Ingestion cost per episode (intrinsic)",
            wide,
            [m for m in registry.names(section="ingestion") if m in metrics],
            best,
            "Per episode (conversation, document), mean and bootstrap 95% CI over the episodes: "
            "the build's LLM replies (ingest_calls), their tokens, the texts it embedded, its "
            "seconds (backend latency when each call was made + the build's own compute), seconds "
            "per inserted unit, dollars at the configured prices; memory_items / memory_tokens: "
            "the size of the built memory.",
        ),
        fmt.metric_section(
            "Judge reliability",
            wide,
            judging,
            set(),
            "judge_lenient: the same answers under a "
            "generous prompt; judge2: a second judge model.",
        ),
        fmt.column_section(
            "Judge reliability: canaries and agreement",
            wide,
            fmt.JUDGE_COLUMNS,
            "accepts_reference: says 1 to the reference itself (want 1); far_other / far_wrong: "
            "false-accept rate on another question's reference / a plausible wrong answer written "
            "by the judge (want 0); κ: Cohen's kappa of strict vs lenient prompt and of judge vs "
            "judge2 ('-' when undefined: both gave one constant verdict). A judge with high false "
            "accepts makes every accuracy above optimistic.",
            rates=True,
        ),
        fmt.column_section(
            "Kept apart from every mean",
            wide,
            [c for c in wide.columns if str(c).startswith("apart:")],
            "apart:<group>:<metric>: questions the dataset reports separately and never folds "
            "into the means above (LoCoMo's category 5, adversarial: asked whether the "
            "conversation mentions something it does not); n is how many.",
            rates=True,
        ),
        fmt.paired_section(paired, baseline),
    ]
    return [s for s in sections if s is not None]


def headline_metric(wide: Any) -> str | None:
    """The accuracy a figure or the latency table shows beside cost: judge, else mc_accuracy, else f1."""
    return next(
        (
            m
            for m in ("judge", "mc_accuracy", "f1")
            if f"{m}.mean" in wide and wide[f"{m}.mean"].notna().any()
        ),
        None,
    )


def latency_section(wide: Any, metrics: Sequence[str]) -> fmt.Section | None:
    """Accuracy beside context tokens and the p50 / p95 of every stage's latency."""
    headline = headline_metric(wide)
    columns = ([f"{headline}.mean"] if headline else []) + ["context_tokens.mean"]
    latency = [m for m in registry.names(section="latency") if m in metrics]
    columns += [f"{m}.{p}" for m in latency for p in ("p50", "p95")]
    if not latency:
        return None
    return fmt.column_section(
        "Latency and context per question (intrinsic)",
        wide,
        columns,
        "Seconds, p50 / p95 over the scored questions. search = the retrieval: search_backend_s "
        "(its chat and embedding calls' latency when each was made, cached or not) + "
        "search_compute_s (the system's own work, measured each run); answer = the answer call's "
        "latency when made; total = search + answer. context_tokens.mean: tokens of the "
        "retrieved context per question. A warm rerun shows the cold run's backend latencies.",
        significant=True,
    )


def write_plot(
    runs: list[dict[str, Any]],
    out: Path,
    name: str,
    metrics: Sequence[str] = ("judge", "rouge_l_recall", "f1", "evidence_recall"),
) -> list[Path]:
    """<name>.png/.pdf (scores, one panel per dataset) and <name>_cost.png/.pdf (score vs intrinsic cost)."""
    runs = tables.identify(runs)
    tables.assign_groups(runs)
    wide = tables.wide_frame(runs, tables.present_metrics(runs, metrics))
    paths = plots.score_bars(wide, metrics, out, name)
    if not paths:
        raise ReportError(f"none of the metrics {list(metrics)} is in the runs")
    headline = headline_metric(wide)
    if headline is None:
        return paths
    return (
        paths
        + plots.cost_scatter(wide, headline, out, f"{name}_cost")
        + plots.pareto(wide, headline, out, f"{name}_pareto")
    )


def build_report(
    paths: Sequence[str | Path],
    out: Path,
    name: str,
    latest_only: bool = True,
    baseline: str = "full_context",
    resamples: int = 2000,
    loaded: list[dict] | None = None,
) -> dict[str, Path]:
    """The tables and plots of the runs under ``paths`` (``loaded``: those runs, read already)."""
    loaded = load_runs(paths) if loaded is None else loaded  # broken runs left out, named
    runs = [tables.attach(run) for run in loaded]
    if latest_only:
        runs = latest_per_config(runs)
    try:
        written = write_tables(
            runs,
            out,
            name,
            baseline=baseline,
            resamples=resamples,
            incomplete=find_incomplete(paths),
        )
        for path in write_plot(runs, out, name):
            kind = next((k for k in ("cost", "pareto") if path.stem.endswith(f"_{k}")), "")
            written[(kind and kind + "_") + path.suffix[1:]] = path
    except OSError as err:
        raise ReportError(
            f"cannot write {err.filename or out} ({err.strerror or err}); choose a writable --out"
        ) from None
    return written


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "runs",
        nargs="*",
        default=["results/runs", "results/sweeps"],
        help="run folders, sweep folders, or folders holding them",
    )
    parser.add_argument("--out", default="results/tables", type=Path)
    parser.add_argument("--name", default="comparison")
    parser.add_argument(
        "--all",
        action="store_true",
        help="keep every run, not only the latest of each row identity",
    )
    parser.add_argument(
        "--baseline",
        default="full_context",
        help="memory (or row label) every row is compared with, question by question",
    )
    parser.add_argument("--resamples", type=int, default=2000, help="paired bootstrap resamples")
    args = parser.parse_args(argv)
    args.runs = [
        p for p in args.runs if Path(p).exists()
    ] or args.runs  # the defaults may not all exist yet
    try:
        incomplete = find_incomplete(args.runs)
        for folder, reason in incomplete:
            print(f"incomplete (not tabulated): {folder}: {reason}")
        loaded = load_runs(args.runs)
        written = build_report(
            args.runs,
            args.out,
            args.name,
            latest_only=not args.all,
            baseline=args.baseline,
            resamples=args.resamples,
            loaded=loaded,
        )
    except ReportError as err:
        raise SystemExit(f"error: {err}") from None
    from memharness.eval.report.browser import write_browser

    good = [run["folder"] for run in loaded]  # the browser shows the runs the tables show
    written["browser"] = write_browser(good, args.out / f"{args.name}_browser.html")
    print(f"wrote {len(written)} files:")
    for kind, path in written.items():
        print(f"  {kind}: {path}")


if __name__ == "__main__":
    main()
