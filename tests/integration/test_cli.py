"""run.py as a user runs it: clear errors for mistakes, and end to end with the real embedded models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from memharness.eval.metrics.registry import untimed
from memharness.eval.record.scores import status, value
from memharness.eval.report.explorer_data import explorer_data
from paths import ROOT
from processes import run_py


def test_unknown_memory_lists_valid_names(tmp_path):
    proc = run_py(tmp_path, "memory=nonexistent")
    assert proc.returncode != 0
    assert "memory=nonexistent: no such memory config" in proc.stderr
    for name in ("full_context", "memorystream", "memtree"):
        assert name in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_dataset_and_llm_list_valid_names(tmp_path):
    proc = run_py(tmp_path, "dataset=nope")
    assert proc.returncode != 0 and "sample" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_py(tmp_path, "llm=nope")
    assert proc.returncode != 0 and "local" in proc.stderr and "Traceback" not in proc.stderr


def test_missing_dataset_file_names_the_setting(tmp_path):
    proc = run_py(
        tmp_path,
        "dataset.loader.path=/nonexistent/sample.json",
        "llm=fake",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
    )
    assert proc.returncode == 2
    assert "dataset.loader.path" in proc.stderr and "/nonexistent/sample.json" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_end_to_end_with_real_embedded_models(tmp_path):
    """The real SmolLM2 (llm=local_tiny: the pipeline, not the model's quality, is under test) + MiniLM
    on a 3-question subset, through run.py."""
    proc = run_py(tmp_path, "memory=memorystream", "dataset.limit=3", "llm=local_tiny")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    metrics = json.loads((out / "metrics.json").read_text())
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 3 == metrics["counts"]["questions"]
    assert metrics["llm"].startswith("llama.cpp:SmolLM2")
    assert metrics["embedder"] == "st:all-MiniLM-L6-v2"  # named by its model, not its folder
    page = explorer_data([out], tmp_path / "page.html")
    assert page["runs"][0]["embedder"] == "all-MiniLM-L6-v2"
    for s in samples:
        assert s["status"] == "scored" and s["prediction"]  # the real model answered
        assert s["retrieved"] and all(i["source_unit_ids"] for i in s["retrieved"])
        # the judge is grammar-constrained to a digit on llama.cpp
        assert status(s, "judge") == "parsed" and value(s, "judge") in (0.0, 1.0)
        assert 0.0 <= value(s, "rouge_l_recall") <= 1.0
    calls = metrics["calls"]
    assert calls["answer"]["calls"] == 3
    # 3 verdicts; the audit: 3 lenient verdicts, 3 written wrong answers, 3 + 3 canary verdicts and one
    # per wrong answer kept (some requests may repeat one already made: a cache hit)
    assert calls["judge"]["calls"] + calls["judge"]["cache_hits"] == 3
    audit = metrics["intrinsic"]["audit"]
    assert 3 + 3 + 3 + 3 <= audit["calls"] <= 3 + 3 + 3 + 3 + 3
    assert calls["audit"]["calls"] + calls["audit"]["cache_hits"] == audit["calls"]
    assert (
        metrics["judge_reliability"]["canaries"]["accepts_reference"]["n"] == 3
        and metrics["judge_reliability"]["canaries"]["questions"] == 3
    )
    assert calls["total"]["prompt_tokens"] > 0 and calls["build"]["embed_texts"] > 0
    # a warm rerun of the same command makes no backend calls and reproduces the metrics
    proc = run_py(
        tmp_path,
        "memory=memorystream",
        "dataset.limit=3",
        "llm=local_tiny",
        f"hydra.run.dir={tmp_path / 'run2'}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    warm = json.loads((tmp_path / "run2" / "metrics.json").read_text())
    assert warm["calls"]["total"]["calls"] == 0 and warm["calls"]["total"]["embed_calls"] == 0
    assert untimed(warm["metrics"]) == untimed(metrics["metrics"])
    # latency is intrinsic: each question's backend latencies are the cold run's, served cached
    for name in ("search_backend_s", "answer_latency_s"):
        assert warm["metrics"][name] == metrics["metrics"][name] and metrics["metrics"][name]["p50"]
    # the cold run loaded weights on its first miss; the warm one loaded none
    assert metrics["time"]["model_load_s"] > 0 and warm["time"]["model_load_s"] == 0


@pytest.mark.slow
def test_multirun_writes_one_folder_per_memory_and_a_table(tmp_path):
    proc = run_py(
        tmp_path,
        "memory=full_context,memorystream",
        "dataset.limit=2",
        "llm=fake",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
        multirun=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    folders = sorted(p.parent for p in (tmp_path / "runs").rglob("metrics.json"))
    # one folder per setting, named by the setting's own overrides (memory and dataset in the parent)
    assert [f.relative_to(tmp_path / "runs").parts[0] for f in folders] == [
        "full_context-sample",
        "memorystream-sample",
    ]
    assert {f.name for f in folders} == {"dataset.limit=2,embedder=fake,llm=fake"}
    summary = (tmp_path / "runs" / "summary.md").read_text()  # written by the sweep's end callback
    assert "| full_context |" in summary and "| memorystream |" in summary
    tables = subprocess.run(
        [
            sys.executable,
            "-m",
            "memharness.eval.report.comparison",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path / "tables"),
            "--name",
            "t",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert tables.returncode == 0, tables.stderr
    md = (tmp_path / "tables" / "t.md").read_text()
    scores = md.split("## Scores")[1].split("##")[0]
    rows = [
        line
        for line in scores.splitlines()
        if line.startswith(("| full_context |", "| memorystream |"))
    ]
    # the same 2 questions and judge: one comparable set, with the models that produced each row
    assert len(rows) == 2 and all(
        "| sample | A | fake-chat | fake-embed | fake-chat | 2 | 0 |" in r for r in rows
    )
    assert (
        "## Paired comparison against full_context" in md
        and (tmp_path / "tables" / "t.pdf").is_file()
    )


@pytest.mark.parametrize("experiment", ["memtree_thresholds", "cam_grid"])
def test_sweep_experiment_without_m_is_refused(tmp_path, experiment):
    """memtree_thresholds says sweep_only; cam_grid only declares sweeper params: both are sweeps."""
    proc = run_py(tmp_path, f"experiment={experiment}")
    assert (
        proc.returncode == 2 and "run it with -m" in proc.stderr and "Traceback" not in proc.stderr
    )
    assert not (tmp_path / "run" / "metrics.json").exists()


@pytest.mark.slow  # over 8 s: the slow tier (CI runs both tiers)
def test_relaunched_sweep_skips_settings_already_done(tmp_path):
    args = (
        "memory=full_context",
        "dataset.limit=1,2",
        "llm=fake",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
    )
    first = run_py(tmp_path, *args, multirun=True)
    assert first.returncode == 0, first.stderr[-3000:]
    done = {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("metrics.json")}
    assert len(done) == 2
    again = run_py(tmp_path, *args, "skip_done=true", multirun=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "runs").rglob("metrics.json")} == done
    assert (
        again.stderr.count("already holds a finished run")
        + again.stdout.count("already holds a finished run")
        == 2
    )
    third = run_py(
        tmp_path,
        "memory=full_context",
        "dataset.limit=1,3",
        "llm=fake",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
        "skip_done=true",
        multirun=True,
    )
    assert (
        third.returncode == 0 and len(list((tmp_path / "runs").rglob("metrics.json"))) == 3
    )  # only limit=3 ran


@pytest.mark.slow  # a two-point sweep in a child process
def test_a_refused_sweep_point_is_listed_in_the_summary_with_its_reason(tmp_path):
    proc = run_py(
        tmp_path,
        "llm=scripted",
        "embedder=hashing",
        "dataset.limit=1",
        "memory.top_k=2,0",
        multirun=True,
    )
    assert proc.returncode == 2 and "memory.top_k=0: expected an integer" in proc.stderr
    summary = (tmp_path / "runs" / "summary.md").read_text()
    assert "Incomplete runs, not tabulated (1)" in summary
    assert "memory.top_k=0`: refused: memory.top_k=0: expected an integer" in summary
