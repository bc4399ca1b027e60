"""Experiment tracking after a run (``logger=none | csv | mlflow | wandb``), from what the run wrote.

The run folder stays the source of truth; a logger copies its headline numbers somewhere a
researcher already looks. Each logger receives the resolved config and metrics.json's content.
"""

from __future__ import annotations

import csv
import io
import logging
import os
from pathlib import Path
from typing import Any

from memharness.memsys.services import files as fileio
from memharness.memsys.services.types import ConfigError

log = logging.getLogger("memharness")


def flat_settings(
    config: dict[str, Any], groups: tuple[str, ...] = ("memory", "dataset", "eval")
) -> dict[str, str]:
    """Dotted ``group.key=value`` strings of the settings that define a run (prompts left out: too long)."""
    out: dict[str, str] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}", v)
        elif not (isinstance(node, str) and "\n" in node):
            out[prefix] = str(node)

    for group in groups:
        walk(group, config.get(group, {}))
    out["seed"] = str(config.get("seed"))
    return out


def headline(metrics: dict[str, Any]) -> dict[str, float]:
    """Means, CI bounds and n of every metric, plus the failure counts, as flat numbers."""
    out: dict[str, float] = {}
    for name, s in metrics.get("metrics", {}).items():
        for field in ("mean", "ci_low", "ci_high", "n"):
            if field in s:
                out[f"{name}.{field}" if field != "mean" else name] = float(s[field])
    out.update({f"count.{k}": float(v) for k, v in metrics.get("counts", {}).items()})
    return out


def log_csv(path: Path, row: dict[str, Any]) -> None:
    """Append a row; when new columns appear the file is rewritten with the union of columns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows, header = [], list(row)
    if path.exists():
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or []) + [
                k for k in row if k not in (reader.fieldnames or [])
            ]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, restval="")
    writer.writeheader()
    writer.writerows([*rows, row])
    fileio.write_text(path, buf.getvalue())


def log_mlflow(
    settings: dict[str, Any], config: dict[str, Any], metrics: dict[str, Any], out_dir: Path
) -> None:
    try:
        import mlflow
    except ImportError as err:
        raise ConfigError(
            "logger=mlflow needs mlflow: pip install -e '.[tracking]' (mlflow-skinny)"
        ) from err
    uri = str(settings["tracking_uri"])
    if uri.startswith("file:") or "://" not in uri:  # a local file store
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(str(settings["experiment"]))
    name = f"{metrics.get('memory')}-{metrics.get('dataset')}"
    with mlflow.start_run(run_name=name):
        params = {
            **flat_settings(config),
            "llm": metrics.get("llm"),
            "embedder": metrics.get("embedder"),
            "folder": str(out_dir),
        }
        mlflow.log_params({k: v[:500] for k, v in params.items() if v is not None})
        mlflow.log_metrics(headline(metrics))
        for artifact in ("metrics.json", "config.yaml"):
            if (out_dir / artifact).exists():
                mlflow.log_artifact(str(out_dir / artifact))


def log_wandb(
    settings: dict[str, Any], config: dict[str, Any], metrics: dict[str, Any], out_dir: Path
) -> None:
    try:
        import wandb
    except ImportError as err:
        raise ConfigError(
            "logger=wandb needs the wandb package (pip install wandb), which memharness does not "
            "install; use logger=csv or logger=mlflow offline"
        ) from err
    run = wandb.init(
        project=settings["project"],
        entity=settings.get("entity"),
        mode=settings.get("mode", "online"),
        name=f"{metrics.get('memory')}-{metrics.get('dataset')}",
        config=flat_settings(config),
    )
    run.log(headline(metrics))
    run.finish()


def log_run(config: dict[str, Any], metrics: dict[str, Any], out_dir: Path) -> None:
    """Send a finished run to the configured logger (``config["logger"]``)."""
    settings = config.get("logger") or {"name": "none"}
    kind = settings.get("name", "none")
    if kind == "none":
        return
    if kind == "csv":
        row = {
            "folder": str(out_dir),
            "memory": metrics.get("memory"),
            "dataset": metrics.get("dataset"),
            "llm": metrics.get("llm"),
            "embedder": metrics.get("embedder"),
            "overrides": " ".join(metrics.get("overrides", [])),
            **headline(metrics),
        }
        log_csv(Path(settings["path"]), row)
    elif kind == "mlflow":
        log_mlflow(settings, config, metrics, out_dir)
    elif kind == "wandb":
        log_wandb(settings, config, metrics, out_dir)
    else:
        raise ConfigError(f"logger.name={kind!r} is not one of none | csv | mlflow | wandb")
    log.info("logged the run to %s", kind)
