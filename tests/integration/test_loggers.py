"""Experiment tracking: the CSV logger and MLflow against a local file store, fed by real runs."""

from __future__ import annotations

import csv
import json

import pytest
from test_cli import ROOT, run_py

FAKES = ("llm=fake", "embedder=fake", f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]")


def test_csv_logger_appends_one_row_per_run_with_the_union_of_columns(tmp_path):
    path = tmp_path / "runs.csv"
    for extra in (
        ("memory=full_context", "dataset.limit=2"),
        ("memory=memtree", "dataset.limit=3"),
    ):
        proc = run_py(tmp_path, *extra, *FAKES, "logger=csv", f"logger.path={path}")
        assert proc.returncode == 0, proc.stderr[-2000:]
        metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    rows = list(csv.DictReader(open(path)))
    assert [r["memory"] for r in rows] == ["full_context", "memtree"]
    assert float(rows[1]["count.questions"]) == 3 and float(rows[0]["count.questions"]) == 2
    assert float(rows[1]["f1"]) == metrics["metrics"]["f1"]["mean"]
    assert float(rows[1]["f1.ci_low"]) == metrics["metrics"]["f1"]["ci_low"]


@pytest.mark.slow  # over 8 s: the slow tier (CI runs both tiers)
@pytest.mark.doubles
def test_mlflow_logger_writes_a_local_file_store(tmp_path):
    import os

    from mlflow.tracking import MlflowClient

    store = f"file://{tmp_path / 'mlruns'}"
    proc = run_py(
        tmp_path,
        "memory=full_context",
        "dataset.limit=2",
        *FAKES,
        "logger=mlflow",
        f"logger.tracking_uri={store}",
        "logger.experiment=unit",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(store)
    runs = client.search_runs([client.get_experiment_by_name("unit").experiment_id])
    assert len(runs) == 1
    data = runs[0].data
    assert data.metrics["f1"] == metrics["metrics"]["f1"]["mean"] and "f1.ci_high" in data.metrics
    assert data.metrics["count.questions"] == 2 and data.params["memory._target_"].endswith(
        "FullContext"
    )
    assert data.params["dataset.limit"] == "2" and data.params["llm"] == metrics["llm"]
    artifacts = {a.path for a in client.list_artifacts(runs[0].info.run_id)}
    assert artifacts == {"metrics.json", "config.yaml"}


def test_unknown_logger_lists_the_choices(tmp_path):
    proc = run_py(tmp_path, "logger=nope")
    assert (
        proc.returncode != 0
        and "csv" in proc.stderr
        and "mlflow" in proc.stderr
        and "Traceback" not in proc.stderr
    )
