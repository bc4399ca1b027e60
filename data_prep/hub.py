"""Shared source resolution for the dataset loaders: a local path, the data-dir cache, or the Hub.

Order of precedence: ``path`` from config, then a copy already cached under the
data directory, then the Hugging Face Hub (only when it answers within a short
timeout and neither ``HF_HUB_OFFLINE`` nor ``HF_DATASETS_OFFLINE`` is set).
With none available the loader fails at once with a message naming the
dataset id, the cache directory and the ``dataset.loader.path`` setting.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlparse

from memharness.data_prep.base import Dataset, DatasetError, check_integrity, sha256_file
from memharness.memsys.services import files as fileio
from memharness.memsys.settings import Check, PathExists, Range

# Setting types shared by the loaders' signatures (checked before a run starts).
LocalPath = (
    Annotated[str, PathExists()] | None
)  # a file or folder that must exist; null = cache or Hub
Integrity = Literal["warn", "raise"]
ChunkSize = Annotated[int, Range(1)]
SHA256_DIGITS = frozenset("0123456789abcdefABCDEF")


def is_sha256(value: Any) -> bool:
    """A sha256 pin: 64 hexadecimal digits, either case."""
    return isinstance(value, str) and len(value) == 64 and set(value) <= SHA256_DIGITS


Sha256 = Annotated[str, Check(is_sha256, "a sha256 of 64 hexadecimal digits")]


def pin(value: str | None) -> str | None:
    """A pin as ``hashlib`` writes digests (lower case); a malformed one is a one-line error."""
    if value is None or value == "":
        return None
    if not is_sha256(value):
        raise DatasetError(f"sha256 pin {value!r}: expected 64 hexadecimal digits")
    return value.lower()


log = logging.getLogger(__name__)

HUB_TIMEOUT_S = 3.0


def _switched_off(variables: Iterable[str]) -> str | None:
    for var in variables:
        if os.environ.get(var, "").strip().lower() in {"1", "true", "yes", "on"}:
            return f"{var} is set"
    return None


def unreachable(url: str) -> str | None:
    """Why ``url``'s host does not accept a connection within ``HUB_TIMEOUT_S`` (None: it does)."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    port = parsed.port or (80 if parsed.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=HUB_TIMEOUT_S):
            return None
    except OSError as err:
        return f"{host}:{port} is unreachable ({err.__class__.__name__})"


def hub_offline_reason() -> str | None:
    """Why the Hub cannot be used right now (None when it is reachable)."""
    return _switched_off(("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")) or unreachable(
        os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    )


def url_offline_reason(url: str) -> str | None:
    """Why a plain download of ``url`` cannot be tried now (None: try it); the switches
    ``MEMHARNESS_OFFLINE`` and ``HF_HUB_OFFLINE`` apply, as for the Hub loaders."""
    return _switched_off(("MEMHARNESS_OFFLINE", "HF_HUB_OFFLINE")) or unreachable(url)


def download_pinned(url: str, target: Path, pinned: str | None) -> Path:
    """Fetch ``url`` into ``target``; a file whose sha256 is not ``pinned`` is refused, not kept."""
    with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 (the configured URL)
        data = resp.read()
    sha = hashlib.sha256(data).hexdigest()
    pinned = pin(pinned)
    if pinned and sha != pinned:
        raise DatasetError(f"{url}: downloaded sha256 {sha} is not the pinned {pinned}; not kept")
    target.parent.mkdir(parents=True, exist_ok=True)
    # atomic: an interrupted write leaves no half-file for the next load to take as the cached copy
    return fileio.write_bytes(target, data)


def cache_dir(data_dir: str | Path | None, name: str) -> Path:
    """Where a dataset's downloads live: ``<data_dir>/<name>``."""
    base = Path(data_dir) if data_dir else Path.cwd() / "data"
    return base / name


def unavailable(name: str, hub_id: str, cache: Path, reason: str, how: str) -> DatasetError:
    """The fail-fast error for a dataset with no local copy and no usable Hub."""
    return DatasetError(
        f"dataset {name!r} (Hugging Face id {hub_id!r}) is not available: no local copy in the cache "
        f"directory {cache} and the Hub cannot be used ({reason}). {how} Then pass it with "
        f"`dataset.loader.path=<file or folder>` (or place it in {cache})."
    )


def local_path(path: str | Path | None, field: str = "dataset.loader.path") -> Path | None:
    """The configured local path, checked to exist; None when unset."""
    if path in (None, ""):
        return None
    p = Path(str(path)).expanduser()
    if not p.exists():
        raise DatasetError(f"{field}={str(path)!r} does not exist")
    return p


def hub_download(hub_id: str, filename: str, cache: Path, revision: str | None) -> tuple[Path, str]:
    """Download one raw file of a Hub dataset repo into ``cache``; return (path, commit sha)."""
    from huggingface_hub import HfApi, hf_hub_download

    sha = HfApi().dataset_info(hub_id, revision=revision or "main").sha
    path = hf_hub_download(
        hub_id, filename, repo_type="dataset", revision=sha, local_dir=str(cache)
    )
    (cache / "REVISION").write_text(f"{hub_id}@{sha}\n")
    return Path(path), str(sha)


def hub_rows(
    hub_id: str, config: str | None, split: str, cache: Path, revision: str | None
) -> tuple[list[dict[str, Any]], dict[str, str], str]:
    """Rows of a Hub dataset via ``datasets.load_dataset``; return (rows, files->sha256, commit sha)."""
    import datasets
    from huggingface_hub import HfApi

    sha = str(HfApi().dataset_info(hub_id, revision=revision or "main").sha)
    ds = datasets.load_dataset(
        hub_id, config, split=split, revision=sha, cache_dir=str(cache / "hf")
    )
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "REVISION").write_text(f"{hub_id}@{sha}\n")
    files = {f["filename"]: sha256_file(f["filename"]) for f in ds.cache_files}
    return [dict(r) for r in ds], files, sha


def split_file(
    name: str,
    hub_id: str,
    split: str,
    path: LocalPath,
    data_dir: str | None,
    revision: str | None,
    suffixes: tuple[str, ...] | None = None,
) -> tuple[Path, str]:
    """(the file, its revision) of one Hub split kept as ``<split>.jsonl``: ``path`` (the file, or a
    folder holding ``<split>*`` with one of ``suffixes`` when given), else the data-dir cache, else
    the Hub (one line naming the missing file when the Hub cannot be reached)."""
    filename, cache = f"{split}.jsonl", cache_dir(data_dir, name)
    local, rev = local_path(path), "local"
    if local is not None and local.is_dir():
        found = sorted(p for p in local.glob(f"{split}*") if p.suffix in (suffixes or p.suffix))
        if not found:
            raise DatasetError(
                f"dataset.loader.path={str(local)!r}: no {split}* file in this folder"
            )
        local = found[0]
    if local is None and (cache / filename).is_file():
        local, rev = cache / filename, cached_revision(cache) or "cache"
    if local is None:
        if reason := hub_offline_reason():
            how = (
                f"Missing {cache / filename}: export split {split!r} of "
                f"https://huggingface.co/datasets/{hub_id} as JSON lines (or pass its parquet file)."
            )
            raise unavailable(name, hub_id, cache, reason, how)
        rows, _, sha = hub_rows(hub_id, None, split, cache, revision)
        write_jsonl(cache / filename, rows)
        local, rev = cache / filename, f"{hub_id}@{sha}"
    return local, rev


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Keep a Hub download as jsonl under the data directory so later runs work offline."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def cached_revision(cache: Path) -> str | None:
    """The ``repo@sha`` written next to an earlier download, if any."""
    marker = cache / "REVISION"
    return marker.read_text().strip() if marker.is_file() else None


def read_text(path: Path, what: str = "file") -> str:
    """A UTF-8 text file; errors name the file, line and column, never dump its content."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise DatasetError(f"{path}: cannot read the {what} ({err.strerror or err})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DatasetError(
            f"{path}:{_where(data, err.start)}: not valid UTF-8 "
            f"(byte 0x{data[err.start]:02x}); re-save the {what} as UTF-8"
        ) from None


def _where(data: bytes, offset: int) -> str:
    """'line:column' (1-based) of a byte offset."""
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"{line}:{column}"


def read_json(path: Path) -> Any:
    """Parse a JSON file; errors name the file and the position."""
    text = read_text(path)
    if not text.strip():
        raise DatasetError(f"{path}: the file is empty (expected JSON)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        truncated = "\n" not in text[err.pos :].rstrip()  # the error is on the last line
        raise DatasetError(
            f"{path}:{err.lineno}:{err.colno}: not valid JSON ({err.msg}"
            f"{'; the file may be truncated' if truncated else ''})"
        ) from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (1-based line number, object) for each non-blank line; errors name file and line."""
    lines = read_text(path).splitlines()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            last = "; the file may be truncated" if lineno == len(lines) else ""
            raise DatasetError(
                f"{path}:{lineno}:{err.colno}: not valid JSON ({err.msg}{last})"
            ) from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def need(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]`` checked for presence and type; the error names ``where`` and the field."""
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected an object, got {type(obj).__name__}")
    if key not in obj:
        raise DatasetError(
            f"{where}: missing field {key!r} (found keys {sorted(map(str, obj))[:20]})"
        )
    if obj[key] is None:
        raise DatasetError(f"{where}: field {key!r} is null")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else "|".join(k.__name__ for k in kind)
        raise DatasetError(f"{where}: field {key!r} should be {names}, got {type(value).__name__}")
    return value


def file_hashes(paths: Iterable[Path]) -> dict[str, str]:
    """sha256 of every file read, keyed by path."""
    return {str(p): sha256_file(p) for p in sorted(set(paths))}


def finish(dataset: Dataset, on_problems: str = "warn") -> Dataset:
    """Run the integrity check, record it in the metadata, and warn or raise on problems."""
    if on_problems not in {"warn", "raise"}:
        raise DatasetError(
            f"dataset.loader.integrity must be 'warn' or 'raise', got {on_problems!r}"
        )
    problems = {k: v for k, v in check_integrity(dataset).items() if v}
    dataset.metadata["integrity"] = {k: len(v) for k, v in problems.items()}
    if problems:
        detail = "; ".join(f"{k}: {len(v)} (e.g. {v[:3]})" for k, v in problems.items())
        message = f"dataset {dataset.name}: integrity problems: {detail}"
        if on_problems == "raise":
            raise DatasetError(message)
        log.warning(message)
    return dataset
