"""Run-folder writes: atomic files, secrets redacted, the INCOMPLETE marker, and clear errors.

Every file of a run folder is written atomically (``memsys.fileio``): a crash, a full disk or a
kill never leaves a half-written ``metrics.json`` or ``samples.jsonl`` that looks complete.
``INCOMPLETE.json`` sits in the folder from the start of a run until every file is written; a run
that stops early (an error, an authentication failure, the deadline) keeps it, with the reason.
``memharness report`` lists such folders as incomplete.

No file of a run folder holds NaN (invalid JSON, which blanks the results browser): the writers
turn a NaN or infinite number into ``null``, and ``metrics.json`` counts them in
``outcome.nonfinite_nulled`` (samples.jsonl, memory_stats.json and metrics.json together).

A run holds its folder exclusively (``lock_folder``: an ``fcntl`` lock on ``LOCK`` inside it, taken
before Hydra writes ``.hydra/`` and released when the process ends, even when it is killed), so a
second run into the same ``hydra.run.dir`` is refused in one line instead of mixing its files in.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memharness.eval.record import schema
from memharness.memsys.services import files as fileio
from memharness.memsys.services.secrets import redact_text, secret_values
from memharness.memsys.services.types import ConfigError

MARKER = "INCOMPLETE.json"
LOCK = ".memharness.lock"
RUN_DIR_SETTING = "hydra.run.dir"
_held: dict[str, int] = {}  # resolved folder -> descriptor of its lock file, for the whole process


class OutputError(ConfigError):
    """A run-folder or table file could not be written; the message names the path and the setting."""


def output_error(
    err: OSError, setting: str = RUN_DIR_SETTING, folder: str | Path | None = None
) -> OutputError:
    """An OutputError for a failed write, naming the file, the cause and the setting to change."""
    path = err.filename or folder or "?"
    where = f"{setting}={str(folder)!r}" if folder is not None else setting
    return OutputError(
        f"cannot write {path} ({err.strerror or err}); results go to {where}: choose a writable "
        "folder with free space"
    )


def write_text(out_dir: Path, name: str, text: str) -> Path:
    """Atomically write ``out_dir/name`` (``fileio`` masks secrets in every text it writes)."""
    try:
        return fileio.write_text(out_dir / name, text)
    except OSError as err:
        raise output_error(err, folder=out_dir) from None


def write_json(out_dir: Path, name: str, obj: Any, **dump_args: Any) -> Path:
    """Secret *values* are masked (field names are not: a package called tiktoken is no token)."""
    return write_text(out_dir, name, fileio.json_text(obj, out_dir / name, **dump_args))


def write_jsonl(out_dir: Path, name: str, records: Iterable[dict[str, Any]]) -> Path:
    secrets = secret_values()
    where = out_dir / name
    lines = (redact_text(fileio.json_text(r, where, ensure_ascii=False), secrets) for r in records)
    try:
        return fileio.write_lines(out_dir / name, lines)
    except OSError as err:
        raise output_error(err, folder=out_dir) from None


def null_nonfinite(records: list[Any]) -> int:
    """Replace, in place, every NaN / infinite number in ``records`` by None; how many there were."""
    clean, count = fileio.finite_json(records)
    records[:] = clean
    return count


def write_samples(out_dir: Path, samples: list[dict[str, Any]]) -> Path:
    """``samples.jsonl``, each line checked against ``schema.Sample`` first."""
    for i, sample in enumerate(samples):
        schema.validated(schema.Sample, json.loads(fileio.json_text(sample)), f"sample {i}")
    return write_jsonl(out_dir, "samples.jsonl", samples)


def write_metrics(out_dir: Path, metrics: dict[str, Any]) -> Path:
    """``metrics.json``, checked against ``schema.Metrics`` first (as it will read back); its own
    NaN / infinite numbers are added to ``outcome.nonfinite_nulled`` as they become null."""
    clean, count = fileio.finite_json(metrics)
    if count and isinstance(clean.get("outcome"), dict):
        outcome = clean["outcome"]
        outcome["nonfinite_nulled"] = int(outcome.get("nonfinite_nulled") or 0) + count
    text = fileio.json_text(clean, out_dir / "metrics.json", indent=1, default=str)
    schema.validated(schema.Metrics, json.loads(text), out_dir / "metrics.json")
    return write_text(out_dir, "metrics.json", text)


STALE = ("memory", "metrics.json", "samples.jsonl", "memory_stats.json")  # what a run writes


def begin_run(out_dir: Path) -> None:
    """Create the run folder and mark it incomplete until ``end_run``. The outputs of an earlier run
    in the same folder are removed first, so none of them (a memory view of an episode this run
    does not have) can pass for this run's."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name in STALE:
            old = out_dir / name
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink(missing_ok=True)
    except OSError as err:
        raise output_error(err, folder=out_dir) from None
    mark_incomplete(out_dir, "running (or stopped without a reason: killed, out of memory)")


def mark_incomplete(out_dir: Path, reason: str, **details: Any) -> None:
    """Write or update the marker; never raises for an unwritable folder when only updating."""
    doc = {
        "reason": redact_text(reason),
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "pid": os.getpid(),
        **details,
    }
    try:
        fileio.write_text(out_dir / MARKER, json.dumps(doc, indent=1) + "\n")
    except OSError as err:
        raise output_error(err, folder=out_dir) from None


def end_run(out_dir: Path, metrics: dict[str, Any]) -> None:
    """Every file is written: drop the marker, unless the run stopped early (e.g. its deadline)."""
    incomplete = (metrics.get("outcome") or {}).get("incomplete")
    if incomplete:
        mark_incomplete(out_dir, incomplete)
    else:
        (out_dir / MARKER).unlink(missing_ok=True)


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of an incomplete run folder, or None."""
    path = Path(folder) / MARKER
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"reason": "marker unreadable"}


def redact_files(folder: Path, pattern: str = "*.yaml") -> None:
    """Mask secrets in files written by others (Hydra's .hydra/*.yaml, multirun.yaml), in place."""
    secrets = secret_values()
    for path in sorted(Path(folder).glob(pattern)):
        try:
            text = path.read_text(encoding="utf-8")
            clean = redact_text(text, secrets)
            if clean != text:
                fileio.write_text(path, clean)
        except OSError:
            continue


def lock_folder(folder: Path, setting: str = RUN_DIR_SETTING) -> None:
    """Take ``folder`` for this process (a no-op if it already holds it); a ``ConfigError`` naming
    the setting and the holder's pid if another live process holds it."""
    folder = Path(folder)
    key = str(folder.resolve())
    if key in _held:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise output_error(err, setting, folder) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise ConfigError(
            f"{setting}={str(folder)!r} is in use by another run (pid {holder}); wait for it to "
            f"finish or choose another folder with {setting}=<path>"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = fd
