"""How much can each run's judge be trusted? A report from run folders.

    memharness judge-report results/runs [--out results/tables --name judges]

Per run (from metrics.json ``judge_reliability``): the accuracy the strict and the lenient prompt
give and Cohen's κ between them, the second judge's accuracy and κ (``judge@judge2=<name>``), and
the canary rates: how often the judge accepts the reference itself, another question's reference
and a plausible wrong answer it wrote itself. Across runs: runs that answered the same questions
with the same predictions but were judged by different models (e.g. a rerun with
``judge=openai``; the answers come from the cache) are paired, and κ is computed over the questions
whose prediction is identical in both. Writes <name>.md / .csv / .json and prints where.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd
from memharness.eval.metrics.stats import cohen_kappa
from memharness.eval.record import scores
from memharness.eval.record.read import ReportError, load_runs
from memharness.eval.report import tables
from memharness.eval.report.paired import label
from memharness.eval.report.table_format import Section, to_markdown
from memharness.memsys.services import files as fileio


def run_row(run: dict[str, Any]) -> dict[str, Any]:
    """One run's judge reliability as flat numbers."""
    rel = run.get("judge_reliability") or {}
    m = run["metrics"]
    lenient, second = rel.get("strict_vs_lenient") or {}, rel.get("judge_vs_judge2") or {}
    row = {
        "memory": label(run),
        "dataset": run["dataset"],
        "judge": tables.short_model(run["judge_model"]),
        "judge2": tables.short_model(run["judge2_model"]),
        "judged": (m.get("judge") or {}).get("n"),
        "accuracy_strict": (m.get("judge") or {}).get("mean"),
        "accuracy_lenient": (m.get("judge_lenient") or {}).get("mean"),
    }
    if lenient:
        row.update(kappa_lenient=lenient.get("kappa"), agreement_lenient=lenient.get("agreement"))
    if second:
        row.update(
            accuracy_judge2=(m.get("judge2") or {}).get("mean"),
            kappa_judge2=second.get("kappa"),
            agreement_judge2=second.get("agreement"),
        )
    for prefix, key in (("", "canaries"), ("judge2_", "canaries_judge2")):
        can = rel.get(key) or {}
        for name, part in (
            ("accepts_reference", "accepts_reference"),
            ("far_other", "false_accept_other"),
            ("far_wrong", "false_accept_wrong"),
        ):
            if part in can:
                row[f"{prefix}{name}"] = can[part]["rate"]
                row[f"{prefix}{name}_n"] = can[part]["n"]
        if "false_accept_wrong" in can:
            row[f"{prefix}wrong_discarded"] = can["false_accept_wrong"].get("discarded", 0)
    row["folder"] = run["folder"]
    return row


def verdicts(folder: str | Path) -> dict[str, tuple[str, int]]:
    """question id -> (prediction, judge verdict) for the questions the judge scored."""
    samples = tables.read_samples(Path(folder))
    return {
        key: (s.get("prediction", ""), int(scores.value(s, "judge")))
        for key, s in zip(tables.question_keys(samples), samples, strict=True)
        if scores.value(s, "judge") is not None
    }


def cross_judge(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """κ between judges of runs with the same answers: same memory, setting, dataset, questions and LLM."""
    rows = []
    for a, b in combinations(runs, 2):
        same = all(
            a.get(k) == b.get(k)
            for k in ("memory", "setting", "dataset", "qset", "llm", "embedder")
        )
        if (
            not same
            or a["judge_model"] == b["judge_model"]
            or "-" in (a["judge_model"], b["judge_model"])
        ):
            continue
        va, vb = verdicts(a["folder"]), verdicts(b["folder"])
        shared = sorted(q for q in va.keys() & vb.keys() if va[q][0] == vb[q][0])
        if not shared:
            continue
        k = cohen_kappa([va[q][1] for q in shared], [vb[q][1] for q in shared])
        rows.append(
            {
                "memory": label(a),
                "dataset": a["dataset"],
                "judge_a": tables.short_model(a["judge_model"]),
                "judge_b": tables.short_model(b["judge_model"]),
                "questions": len(shared),
                "accuracy_a": sum(va[q][1] for q in shared) / len(shared),
                "accuracy_b": sum(vb[q][1] for q in shared) / len(shared),
                **k,
            }
        )
    return rows


def _section(title: str, frame: pd.DataFrame, note: str) -> Section | None:
    if frame.empty:
        return None
    cols = [
        c
        for c in frame.columns
        if c != "folder" and (frame[c].notna().any() or c.startswith("kappa"))
    ]
    rows = [[_cell(c, r[c]) for c in cols] for _, r in frame.iterrows()]
    return Section(title, cols, rows, set(), note)


def _cell(column: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or pd.isna(value):
        return "-"
    if column.endswith("_n") or column in (
        "judged",
        "questions",
        "n",
        "wrong_discarded",
        "judge2_wrong_discarded",
    ):
        return str(int(value))
    return f"{float(value):.3f}"


def build(
    paths: Sequence[str | Path], out: Path, name: str, latest_only: bool = True
) -> dict[str, Path]:
    runs = [tables.attach(run) for run in load_runs(paths)]  # broken runs left out, named
    runs = tables.latest(runs) if latest_only else tables.identify(runs)
    per_run = pd.DataFrame([run_row(r) for r in runs])
    pairs = pd.DataFrame(cross_judge(runs))
    out.mkdir(parents=True, exist_ok=True)
    sections = [
        s
        for s in (
            _section(
                "Per run",
                per_run,
                "accuracy_strict / accuracy_lenient: judge accuracy under the strict and the "
                "lenient (generous) prompt; kappa: Cohen's κ between them ('-' when undefined). accepts_reference "
                "should be near 1; far_other / far_wrong (false accepts of another question's reference and of a "
                "plausible wrong answer the judge wrote) near 0; _n: canaries with a parsed verdict.",
            ),
            _section(
                "Between judges (same answers, different judge models)",
                pairs,
                "κ over the questions whose prediction is identical in both runs.",
            ),
        )
        if s is not None
    ]
    paths = {"md": out / f"{name}.md", "csv": out / f"{name}.csv", "json": out / f"{name}.json"}
    fileio.write_text(paths["md"], to_markdown(sections, f"Judge reliability: {name}") + "\n")
    per_run.to_csv(paths["csv"], index=False)
    fileio.write_text(
        paths["json"],
        json.dumps(
            {
                "runs": per_run.to_dict(orient="records"),
                "between_judges": pairs.to_dict(orient="records"),
            },
            indent=1,
            default=str,
        ),
    )
    return paths


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "runs", nargs="*", default=["results/runs"], help="run folders or folders holding them"
    )
    parser.add_argument("--out", default="results/tables", type=Path)
    parser.add_argument("--name", default="judges")
    parser.add_argument(
        "--all", action="store_true", help="every run, not only the latest of each row identity"
    )
    args = parser.parse_args(argv)
    try:
        written = build(args.runs, args.out, args.name, latest_only=not args.all)
    except ReportError as err:
        raise SystemExit(f"error: {err}") from None
    print(f"wrote {len(written)} files:")
    for kind, path in written.items():
        print(f"  {kind}: {path}")


if __name__ == "__main__":
    main()
