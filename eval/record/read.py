"""Finding and loading run folders: what every report, browser and collector reads first."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memharness.eval.record.folder import MARKER, read_marker
from memharness.eval.report import tables


class ReportError(Exception):
    """No usable run folder, or a run folder missing a file the report needs."""


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


def load_run(folder: Path) -> dict[str, Any]:
    for name in ("metrics.json", "samples.jsonl"):
        if not (folder / name).is_file():
            raise ReportError(f"run folder {folder} has no {name}")
    metrics = json.loads((folder / "metrics.json").read_text())
    with open(folder / "samples.jsonl", encoding="utf-8") as f:
        n_samples = sum(1 for line in f if line.strip())
    if n_samples != metrics["counts"]["questions"]:
        raise ReportError(
            f"{folder}: samples.jsonl has {n_samples} lines but metrics.json counts "
            f"{metrics['counts']['questions']} questions"
        )
    return {"folder": str(folder), **metrics}


def setting(run: dict[str, Any]) -> str:
    """The run's distinguishing settings (set by ``tables.identify``; overrides for a lone run)."""
    return run["setting"] if "setting" in run else tables._override_setting(run)
