"""Reports from fixture run folders: comparable rows and groups, best marked by direction within a
group only, CSV / long CSV / LaTeX, paired comparisons, figures in PNG and PDF."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest
import records
import yaml
from memharness.eval.metrics.lexical import summarize
from memharness.eval.metrics.stats import mcnemar, paired_bootstrap
from memharness.eval.record.read import find_runs, load_run
from memharness.eval.report import plots
from memharness.eval.report.comparison import ReportError, build_report, latest_per_config


def _summary(mean):
    return {"mean": mean, "n": 4, "ci_low": mean - 0.1, "ci_high": mean + 0.1}


def write_run(
    root: Path,
    memory: str,
    stamp: str,
    judge: float,
    ctx: float,
    n: int = 4,
    dataset="sample",
    overrides: list[str] | None = None,
    **extra,
) -> Path:
    """A run folder with no config.yaml and no per-question metrics."""
    folder = root / f"{memory}-{dataset}" / stamp
    counts = {
        "questions": n,
        "scored": n,
        "retrieve_failed": 0,
        "answer_failed": 0,
        "judge_failed": 0,
        "judge_unparsed": 0,
        "mc_unparsed": 0,
    }
    doc = records.metrics(
        memory,
        dataset,
        counts=counts,
        overrides=overrides or [],
        metrics={"judge": _summary(judge), "f1": _summary(0.5), "context_tokens": _summary(ctx)},
        time={"build_s": 1.0},
        calls={"total": {"calls": 10}},
        **extra,
    )
    return records.write(folder, doc, [records.sample(f"q{i}") for i in range(n)])


def write_full_run(
    root: Path,
    memory: str,
    stamp: str,
    judge: dict[str, float],
    config: dict | None = None,
    judge_model: str = "judge-a",
    f1: dict[str, float] | None = None,
    dataset: str = "sample",
    intrinsic_tokens: int = 100,
) -> Path:
    """A run folder as the runner writes it: config.yaml, per-question metrics, summaries, ledgers."""
    folder = root / f"{memory}-{dataset}" / stamp
    samples = [
        records.sample(q, {"judge": v, **({"f1": f1[q]} if f1 else {})}) for q, v in judge.items()
    ]
    values = list(judge.values())
    summaries = {"judge": summarize(values, 200, 0.95, 0)}
    if f1:
        summaries["f1"] = summarize(list(f1.values()), 200, 0.95, 0)
    stage = {
        "calls": 2,
        "prompt_tokens": intrinsic_tokens,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "call_s": 1.0,
        "embed_texts": 3,
    }
    doc = records.metrics(
        memory,
        dataset,
        llm="llama.cpp:Model-A.gguf:ctx4096",
        embedder="st:mini",
        judge=judge_model,
        counts={"questions": len(samples), "scored": len(samples)},
        metrics=summaries,
        intrinsic={"build": stage, "retrieve": {}, "answer": stage},
    )
    records.write(folder, doc, samples)
    cfg = {
        "memory": {"name": memory, "top_k": 3},
        "dataset": {"name": dataset, "limit": None},
        "seed": 0,
        "cache": {"enabled": True, "path": "/x"},
        "eval": {"judge": {"prompt": "Decide ..."}},
    }
    for key, value in (config or {}).items():
        node = cfg
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    return folder


QS = [f"q{i}" for i in range(8)]


def test_tables_mark_best_by_direction(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "memtree", "2026-01-01_00-00-00", judge=0.8, ctx=900)
    write_run(runs, "full_context", "2026-01-01_00-00-00", judge=0.6, ctx=400)
    out = build_report([runs], tmp_path / "tables", "cmp")
    md = out["md"].read_text()
    memtree_rows = [line for line in md.splitlines() if line.startswith("| memtree")]
    full_rows = [line for line in md.splitlines() if line.startswith("| full_context")]
    assert "**0.800 [0.700, 0.900]**" in memtree_rows[0]  # higher judge is better
    assert any("**400.000" in r for r in full_rows) and not any(
        "**900" in r for r in memtree_rows
    )  # lower context
    assert md.count("**0.500 [0.400, 0.600]**") == 2  # a tie marks every tied run
    rows = list(csv.DictReader(out["csv"].open()))
    assert {r["memory"]: r["judge.mean"] for r in rows} == {"memtree": "0.8", "full_context": "0.6"}
    assert {r["judge.ci_low"] for r in rows} == {
        "0.7000000000000001",
        "0.5",
    }  # the CIs are in the CSV
    assert "\\textbf{0.800" in out["tex"].read_text()
    assert (
        out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        and out["pdf"].read_bytes()[:4] == b"%PDF"
    )


def test_an_oracle_row_is_labelled_and_never_marked_best(tmp_path):
    runs = tmp_path / "runs"
    write_run(runs, "memtree", "2026-01-01_00-00-00", judge=0.8, ctx=900)
    write_run(runs, "full_context", "2026-01-01_00-00-00", judge=0.6, ctx=400)
    write_run(runs, "oracle", "2026-01-01_00-00-00", judge=0.95, ctx=100, oracle=True)
    out = build_report([runs], tmp_path / "tables", "cmp")
    md = out["md"].read_text()
    oracle_rows = [line for line in md.splitlines() if line.startswith("| oracle")]
    assert oracle_rows and all("(oracle: gold evidence, not ranked)" in r for r in oracle_rows)
    assert not any("**" in r for r in oracle_rows)  # best judge and least context, yet unmarked
    memtree = next(line for line in md.splitlines() if line.startswith("| memtree"))
    assert "**0.800 [0.700, 0.900]**" in memtree  # the best memory is still marked
    rows = {r["memory"]: r["oracle"] for r in csv.DictReader(out["csv"].open())}
    assert rows == {"memtree": "False", "full_context": "False", "oracle": "True"}


def test_best_is_never_marked_across_question_sets_or_judges(tmp_path):
    runs = tmp_path / "runs"
    write_full_run(runs, "full_context", "s1", {q: 1.0 for q in QS})  # set A: 8 questions
    write_full_run(runs, "memtree", "s1", {q: 0.0 for q in QS[:3]})  # a 3-question subset
    write_full_run(
        runs, "memorystream", "s1", {q: 0.0 for q in QS}, judge_model="judge-b"
    )  # another judge
    out = build_report([runs], tmp_path / "t", "x")
    wide = pd.read_csv(out["csv"])
    assert wide["set"].nunique() == 3  # three comparable groups, none with two rows
    md = out["md"].read_text()
    assert "**" not in md.split("## Scores")[1].split("##")[0]  # nothing ranked
    assert "judge judge-b" in md and "3 questions" in md  # the sets are explained
    # two runs on the same questions and judge are ranked against each other
    write_full_run(runs, "memtree", "s2", {q: 0.5 for q in QS}, config={"memory.top_k": 5})
    md = build_report([runs], tmp_path / "t", "y")["md"].read_text()
    scores = md.split("## Scores")[1].split("##")[0]
    assert "**1.000" in scores and scores.count("**") == 2


def test_rows_are_identified_by_resolved_settings(tmp_path):
    runs = tmp_path / "runs"
    write_full_run(
        runs, "memtree", "2026-01-01", {q: 0.0 for q in QS}, config={"memory.base_threshold": 0.1}
    )
    write_full_run(
        runs, "memtree", "2026-01-02", {q: 0.5 for q in QS}, config={"memory.base_threshold": 0.4}
    )
    # cache off is not another experiment: the newer run replaces the older one with the same identity
    write_full_run(
        runs,
        "memtree",
        "2026-01-03",
        {q: 1.0 for q in QS},
        config={"memory.base_threshold": 0.4, "cache.enabled": False},
    )
    kept = latest_per_config([load_run(f) for f in find_runs([runs])])
    assert sorted((r["setting"], r["metrics"]["judge"]["mean"]) for r in kept) == [
        ("memory.base_threshold=0.1", 0.0),
        ("memory.base_threshold=0.4", 1.0),
    ]
    wide = pd.read_csv(build_report([runs], tmp_path / "t", "x")["csv"])
    assert set(wide["llm"]) == {"llama.cpp:Model-A.gguf:ctx4096"} and set(wide["judge"]) == {
        "judge-a"
    }
    assert (
        set(wide["embedder"]) == {"st:mini"} and set(wide["n"]) == {8} and set(wide["seed"]) == {0}
    )


def test_csv_long_format_and_latex_escaping(tmp_path):
    runs = tmp_path / "runs"
    write_full_run(
        runs, "full_context", "s1", {q: 1.0 for q in QS}, config={"eval.note": "50% & $x_1$"}
    )
    write_full_run(
        runs,
        "mem_tree",
        "s1",
        {q: float(i % 2) for i, q in enumerate(QS)},
        config={"eval.note": "#2"},
    )
    out = build_report([runs], tmp_path / "t", "x")
    long = pd.read_csv(out["long_csv"])
    judge = long[(long["metric"] == "judge") & (long["memory"] == "mem_tree")].iloc[0]
    assert (judge["mean"], judge["n"], judge["kind"]) == (0.5, 8, "score") and judge[
        "ci_low"
    ] < 0.5 < judge["ci_high"]
    cost = long[(long["metric"] == "method_tokens") & (long["memory"] == "mem_tree")].iloc[0]
    assert cost["mean"] == 200 and cost["kind"] == "cost"  # intrinsic: build + answer prompt tokens
    tex = out["tex"].read_text()
    assert r"mem\_tree" in tex and r"eval.note=50\% \& \$x\_1\$" in tex and r"eval.note=\#2" in tex
    assert "50% & $x_1$" in out["md"].read_text()


def test_paired_comparison_against_the_baseline(tmp_path):
    runs = tmp_path / "runs"
    base = {q: v for q, v in zip(QS, [1, 1, 0, 0, 1, 0, 1, 1], strict=False)}
    other = {q: v for q, v in zip(QS, [1, 0, 1, 1, 1, 1, 1, 1], strict=False)}
    f1_base = {q: 0.1 * i for i, q in enumerate(QS)}
    f1_other = {q: 0.1 * i + 0.05 for i, q in enumerate(QS)}
    write_full_run(runs, "full_context", "s1", {q: float(v) for q, v in base.items()}, f1=f1_base)
    write_full_run(runs, "memtree", "s1", {q: float(v) for q, v in other.items()}, f1=f1_other)
    out = build_report([runs], tmp_path / "t", "x", baseline="full_context", resamples=500)
    paired = pd.read_csv(out["paired_csv"]).set_index("metric")
    a, b = [other[q] for q in QS], [base[q] for q in QS]
    assert paired.loc["judge", "n_pairs"] == 8 and paired.loc["judge", "test"] == "mcnemar"
    assert paired.loc["judge", "p"] == pytest.approx(mcnemar(a, b)["p"])
    assert paired.loc["judge", "diff"] == pytest.approx(0.25)
    assert paired.loc["judge", "ci_low"] == pytest.approx(
        paired_bootstrap(a, b, 500, 0.95, 0)["ci_low"]
    )
    assert paired.loc["f1", "test"] == "permutation" and paired.loc["f1", "p"] == pytest.approx(
        2 / 256
    )
    md = out["md"].read_text()
    assert "## Paired comparison against full_context" in md and "**+0.050 [+0.050, +0.050]**" in md


def test_report_errors_are_raised(tmp_path):
    with pytest.raises(ReportError, match="no run folders"):
        build_report([tmp_path], tmp_path / "t", "x")
    bad = write_run(tmp_path / "runs", "memtree", "s", judge=0.5, ctx=1, n=3)
    (bad / "samples.jsonl").write_text(json.dumps(records.sample("q0")) + "\n")
    with pytest.raises(ReportError, match="samples.jsonl has 1 lines"):
        build_report([bad], tmp_path / "t", "x")
    (bad / "samples.jsonl").write_text('{"i": 0}\n')
    with pytest.raises(ReportError, match="samples.jsonl:1: not a run-format-3 sample: episode_id"):
        build_report([bad], tmp_path / "t", "x")
    (bad / "samples.jsonl").unlink()
    with pytest.raises(ReportError, match="no samples.jsonl"):
        build_report([bad], tmp_path / "t", "x")


def test_runs_of_a_sweep_without_config_keep_one_row_per_override(tmp_path):
    runs = tmp_path / "runs"
    for i, theta in enumerate(("0.1", "0.4", "0.4")):
        write_run(
            runs,
            "memtree",
            f"2026-01-0{i + 1}_00-00-00",
            judge=0.1 * (i + 1),
            ctx=1,
            overrides=["memory=memtree", f"memory.base_threshold={theta}", "hydra.run.dir=x"],
        )
    out = build_report([runs], tmp_path / "tables", "sweep")
    scores = out["md"].read_text().split("## Scores")[1].split("##")[0]
    rows = [line for line in scores.splitlines() if line.startswith("| memtree")]
    assert len(rows) == 2  # two settings; of the two 0.4 runs the newer (judge 0.3) is kept
    assert "| memory.base_threshold=0.1 |" in rows[0] and "| memory.base_threshold=0.4 |" in rows[1]
    assert "0.300" in rows[1] and "hydra" not in out["md"].read_text()


def test_figures_widen_until_no_labels_overlap(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 3))
    ax.bar(range(12), range(12))
    ax.set_xticks(range(12), [f"memory system with a long name {i}" for i in range(12)], fontsize=9)
    assert plots.overlapping_labels(fig)  # the check sees the collision
    paths = plots._save(fig, tmp_path, "crowded")
    assert plots.overlapping_labels(fig) == []
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(
        p.stat().st_size > 0 for p in paths
    )


def test_questions_kept_apart_get_their_own_section_never_the_scores():
    import pandas as pd
    from memharness.eval.report import comparison

    run = {
        "folder": "f1",
        "metrics_apart": {
            "adversarial": {
                "n": 3,
                "locomo_adversarial": {"mean": 0.5, "n": 3},
                "context_tokens": {"mean": 200.0, "n": 3},  # not a score: left out
            }
        },
    }
    assert comparison.apart_cells(run) == {
        "apart:adversarial:n": 3,
        "apart:adversarial:locomo_adversarial": 0.5,
    }
    wide = comparison.add_apart_columns(
        pd.DataFrame({"folder": ["f0", "f1"]}), [{"folder": "f0"}, run]
    )
    assert list(wide.columns) == [
        "folder",
        "apart:adversarial:n",
        "apart:adversarial:locomo_adversarial",
    ]
    assert wide["apart:adversarial:locomo_adversarial"].tolist()[1] == 0.5
    assert pd.isna(wide["apart:adversarial:n"].tolist()[0])


def test_paired_comparison_keeps_repeated_ids_and_reports_pairs_of_questions(tmp_path):
    """A folder written before loaders refused repeated ids: each occurrence is its own pair, and
    the table says how many pairs of how many questions were used."""
    runs = tmp_path / "runs"
    ids = ["q0", "q1", "q1", "q2", "q3"]  # q1 twice
    for memory, verdicts in (("full_context", [1, 0, 1, 0, 1]), ("memtree", [1, 1, 1, None, 0])):
        samples = [
            records.sample(q, {"judge": None if v is None else float(v)})
            for q, v in zip(ids, verdicts, strict=True)
        ]
        scored = [float(v) for v in verdicts if v is not None]
        doc = records.metrics(
            memory,
            judge="judge-a",
            counts={"questions": 5, "scored": 5},
            metrics={"judge": summarize(scored, 200, 0.95, 0)},
        )
        records.write(runs / f"{memory}-sample" / "s1", doc, samples)
    out = build_report([runs], tmp_path / "t", "x", baseline="full_context", resamples=200)
    paired = pd.read_csv(out["paired_csv"]).set_index("metric")
    # 4 pairs (q3 failed in memtree) of 5 questions; the repeated q1 pairs occurrence by occurrence
    assert (paired.loc["judge", "n_pairs"], paired.loc["judge", "questions"]) == (4, 5)
    assert paired.loc["judge", "diff"] == pytest.approx((0 + 1 + 0 - 1) / 4)
    assert "| 4/5 |" in out["md"].read_text()
