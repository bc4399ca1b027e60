"""Finding and loading run folders: what every report, browser and collector reads first."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memharness.eval.record import schema
from memharness.eval.record.folder import MARKER, read_marker
from memharness.eval.record.schema import ReportError

log = logging.getLogger(__name__)


def _json(text: str, where: str) -> Any:
    """One JSON document, or a one-line ``ReportError`` naming the file (and line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None


def _run_folders(paths: Sequence[str | Path]) -> set[Path]:
    """Folders holding a metrics.json or an INCOMPLETE.json under the given paths."""
    folders: set[Path] = set()
    for p in map(Path, paths):
        if (p / "metrics.json").is_file() or (p / MARKER).is_file():
            folders.add(p)
        elif p.is_dir():
            folders.update(m.parent for name in ("metrics.json", MARKER) for m in p.rglob(name))
        else:
            raise ReportError(f"{p} is neither a run folder nor a folder holding run folders")
    return folders


def find_incomplete(paths: Sequence[str | Path]) -> list[tuple[Path, str]]:
    """Run folders still marked incomplete, with the recorded reason."""
    return [
        (f, (read_marker(f) or {}).get("reason", "?"))
        for f in sorted(_run_folders(paths))
        if (f / MARKER).is_file()
    ]


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Every complete run folder (metrics.json, no INCOMPLETE.json) under the given paths."""
    folders = _run_folders(paths)
    runs = sorted(
        f for f in folders if (f / "metrics.json").is_file() and not (f / MARKER).is_file()
    )
    if not runs:
        incomplete = len(folders) - len(runs)
        raise ReportError(
            f"no run folders (complete: with metrics.json, no INCOMPLETE.json) under {[str(p) for p in paths]}"
            + (f"; {incomplete} incomplete (see INCOMPLETE.json in each)" if incomplete else "")
        )
    return runs


def read_metrics(folder: str | Path) -> dict[str, Any]:
    """``metrics.json`` of a run folder, refused in one line unless it is this run format."""
    path = Path(folder) / "metrics.json"
    if not path.is_file():
        raise ReportError(f"run folder {folder} has no metrics.json")
    doc = _json(_text(path), str(path))
    schema.check_format(doc, path)
    return schema.validated(schema.Metrics, doc, path)


def iter_samples(folder: str | Path) -> Iterator[dict[str, Any]]:
    """The ``samples.jsonl`` records of a run folder, in order, each checked against the format.
    Call ``read_metrics`` first: it checks the folder's format."""
    path = Path(folder) / "samples.jsonl"
    if not path.is_file():
        raise ReportError(f"run folder {folder} has no samples.jsonl")
    for i, line in enumerate(_text(path).splitlines(), 1):
        if line.strip():
            yield schema.validated(schema.Sample, _json(line, f"{path}:{i}"), f"{path}:{i}")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ReportError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise ReportError(f"{path}: cannot be read ({err.strerror or err})") from None


def load_run(folder: Path) -> dict[str, Any]:
    """A run's metrics.json with its ``folder``, after checking samples.jsonl agrees with it."""
    metrics = read_metrics(folder)
    n_samples = sum(1 for _ in iter_samples(folder))
    if n_samples != metrics["counts"]["questions"]:
        raise ReportError(
            f"{folder}: samples.jsonl has {n_samples} lines but metrics.json counts "
            f"{metrics['counts']['questions']} questions"
        )
    return {"folder": str(folder), **metrics}


def load_runs(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """``load_run`` of every complete run under ``paths``. A run whose files are broken is left
    out with a one-line warning naming the file and line, so the good ones beside it are still
    tabulated; when none loads, the first run's error is raised."""
    runs, errors = [], []
    for folder in find_runs(paths):
        try:
            runs.append(load_run(folder))
        except ReportError as err:
            errors.append(err)
            log.warning("left out of the report: %s", err)
    if errors and not runs:
        raise errors[0]
    return runs


def setting(run: dict[str, Any]) -> str:
    """The run's distinguishing settings (set by ``report.tables.identify``; overrides for a
    lone run)."""
    return run["setting"] if "setting" in run else override_setting(run)


NOT_CONFIG = ("memory=", "dataset=", "hydra.", "progress=")  # overrides that are not a setting


def override_setting(run: dict[str, Any]) -> str:
    """Runs without config.yaml: the command-line overrides beyond memory and dataset."""
    return " ".join(sorted(o for o in run.get("overrides", []) if not o.startswith(NOT_CONFIG)))
