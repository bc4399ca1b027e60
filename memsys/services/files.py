"""Atomic, redacted file writes: a reader (or a crash) never sees a half-written file, and no
configured key reaches a file.

Every text write of the harness (run folder, memory views, snapshots, tables, browser, logs) goes
through ``atomic_write``, which masks secrets (``secrets.redact_text``) in whatever text the caller
produced, even a key a server echoed back inside a reply. Binary writes (NumPy arrays) are
written as given.

Each write goes to a hidden temporary file in the same folder (a name unique to the call, so two
threads writing one path never share it), is flushed to disk, then renamed over the target
(``os.replace`` is atomic on POSIX). If anything fails (disk full, read-only folder) the temporary
file is removed and the ``OSError`` names the target path.

JSON is always valid JSON: ``json_text`` (used by ``write_json`` and by the run folder's writers)
writes a NaN or infinite number as ``null`` and says how many it replaced (``finite_json``), and
refuses (``allow_nan=False``) anything that still is not finite. A browser's ``JSON.parse`` rejects
the ``NaN`` Python would otherwise write, which blanks every page that reads the file.

``load_npy`` / ``load_npz`` read NumPy files one at a time: CPython 3.11's AST parser, which
``np.load`` uses for the array header, can fail with "AST constructor recursion depth mismatch"
when two threads parse at once.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import secrets
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from memharness.memsys.services.secrets import redact_text

_NUMPY_READ = threading.Lock()
log = logging.getLogger(__name__)


def finite_json(obj: Any) -> tuple[Any, int]:
    """``obj`` with every NaN / infinite float (NumPy's too) replaced by None, and how many were."""
    count = 0

    def clean(value: Any) -> Any:
        nonlocal count
        if isinstance(value, float | np.floating):
            if math.isfinite(value):
                return value
            count += 1
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        if isinstance(value, np.ndarray):
            return clean(value.tolist())
        return value

    return clean(obj), count


def json_text(obj: Any, where: str | Path = "", **dump_args: Any) -> str:
    """``json.dumps`` that never writes NaN: non-finite numbers become null, with a warning."""
    clean, count = finite_json(obj)
    if count:
        log.warning("%s: %d NaN or infinite number(s) written as null", where or "JSON", count)
    return json.dumps(clean, allow_nan=False, **dump_args)


def atomic_write(path: str | Path, write: Callable[[Any], None], mode: str = "w") -> Path:
    """Call ``write(file)`` on a temporary file, then move it to ``path``; text is redacted."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            if "b" in mode:
                write(f)
            else:
                buf = io.StringIO()
                write(buf)
                f.write(redact_text(buf.getvalue()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda f: f.write(text))


def write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda f: f.write(data), mode="wb")


def write_json(path: str | Path, obj: Any, **dump_args: Any) -> Path:
    """Atomically write ``obj`` as JSON (never NaN: see ``json_text``)."""
    return write_text(path, json_text(obj, path, **dump_args))


def write_lines(path: str | Path, lines: Iterable[str]) -> Path:
    """Write each string followed by a newline (e.g. JSON Lines)."""

    def write(f: TextIO) -> None:
        for line in lines:
            f.write(line + "\n")

    return atomic_write(path, write)


def load_npy(path: str | Path) -> np.ndarray:
    """``np.load`` of one ``.npy`` file, serialised across threads (see the module note)."""
    with _NUMPY_READ:
        return np.load(path)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, read whole under the same lock."""
    with _NUMPY_READ, np.load(path) as data:
        return {k: data[k] for k in data.files}
