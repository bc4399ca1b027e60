"""Memory snapshots: a built memory saved under a content address and loaded by a later run.

The address of an episode's memory is the sha256 of everything its construction depends on:

- the episode's content (id, every unit's id, text, source, position, timestamp and metadata) and
  the insert batches the runner cuts it into (``dataset.insert_batch_size``);
- the memory's class and its construction settings: the resolved ``memory.*`` config minus the
  settings the class declares in ``retrieval_settings`` (traversal, top_k, budgets... never change
  what is built), prompts included;
- the builder LLM's and the embedder's identities (their cache model ids) and the tokenizer;
- a hash of the memory's code: the source of its module and of every ``memharness.memsys`` /
  ``memharness.baselines`` module it uses (backends excluded), so a code change rebuilds.

A run whose address matches a saved snapshot loads it instead of building, with or without the call
cache: sweeping ``top_k``, budgets, traversal, answer or judge settings over one memory makes no
build call after the first run. Only episodes whose questions all come after the last insert are
snapshotted (``reusable``): in an online episode (MSC-E) questions are asked between inserts and a
retrieval may change what later inserts build on, so those are always built, and counted
(``interleaved``). A memory built with a failure (a build error, a degraded structure, the deadline
or the budget) is not saved: a later run tries again, as the call cache does with failed calls.

Layout: ``<snapshots.path>/<memory>/<dataset>/<episode>/<address[:20]>/`` holding the memory's own
save (hierarchy.json + embeddings.npy, or state.json + arrays.npz for a flat memory) and
``snapshot.json`` (the address's inputs, the build's intrinsic cost, who built it). A snapshot is
written into a temporary folder and renamed into place, so concurrent jobs never see half of one.
Snapshot folders are trusted like code: only load snapshots this harness wrote. A snapshot whose
vectors hold NaN or inf is not loaded (counted ``unreadable``): it is removed and the memory is built
and saved again.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import shutil
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from hydra.utils import get_class
from memharness.memsys.base import MemorySystem
from memharness.memsys.hierarchy.memory import HierarchicalMemory
from memharness.memsys.services import files as fileio
from memharness.memsys.types import FORGET_KEY, Episode
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("memharness")
FORMAT = 1
_CODE_SCOPE = ("memharness.memsys", "memharness.baselines")
_NOT_CODE = ("memharness.memsys.services.backends",)


def retrieval_settings(cls: type) -> set[str]:
    """The settings ``cls`` and its bases declare as retrieval-only (``retrieval_settings``)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        names.update(klass.__dict__.get("retrieval_settings", ()))
    return names


def construction_settings(params: dict[str, Any], cls: type) -> dict[str, Any]:
    """``params`` without the retrieval-only settings (a dotted name drops a key inside a mapping)."""
    out = json.loads(json.dumps(params, default=str))
    for name in sorted(retrieval_settings(cls)):
        *parents, leaf = name.split(".")
        node = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return out


def code_hash(cls: type) -> str:
    """sha256 over the source of ``cls``'s modules and the harness modules they use (backends excluded)."""
    seen: set[str] = set()
    stack = [k.__module__ for k in cls.__mro__]
    while stack:
        name = stack.pop()
        if (
            name in seen
            or not name.startswith(_CODE_SCOPE)
            or name.startswith(_NOT_CODE)
            or name not in sys.modules
        ):
            continue
        seen.add(name)
        for value in vars(sys.modules[name]).values():
            dep = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
            if isinstance(dep, str):
                stack.append(dep)
    digest = hashlib.sha256()
    for name in sorted(seen):
        path = getattr(sys.modules[name], "__file__", None)
        digest.update(name.encode())
        if path and Path(path).is_file():
            digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def episode_checksum(episode: Episode, batch_size: int | None) -> str:
    """sha256 of the episode's units and the insert batches they are cut into."""
    digest = hashlib.sha256(json.dumps([episode.id, batch_size]).encode())
    for u in episode.units:
        digest.update(
            json.dumps(
                [u.id, u.text, u.source_id, u.position, u.timestamp, u.metadata],
                sort_keys=True,
                ensure_ascii=False,
                default=str,
            ).encode()
        )
    return digest.hexdigest()


def snapshot_kind(cls: type) -> str | None:
    """How ``cls`` is saved: "hierarchical" (save/load), "flat" (state/load_state) or None (it cannot be)."""
    if issubclass(cls, HierarchicalMemory):
        return "hierarchical"
    if issubclass(cls, MemorySystem) and cls.state is not MemorySystem.state:
        return "flat"
    return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(name))[:80] or "_"


class Snapshots:
    """Find, load and save the snapshots of one run's memories (``snapshots.*``)."""

    def __init__(
        self,
        cfg: DictConfig,
        services: Any,
        dataset_name: str,
        run_dir: Path | None = None,
        save: bool = True,
    ) -> None:
        section = cfg.get("snapshots") or {}
        self.enabled = bool(section.get("enabled", True))
        self.root = snapshot_root(cfg)
        self.save_enabled = save
        self.services, self.run_dir, self.dataset_name = services, run_dir, dataset_name
        self.memory_cfg = OmegaConf.to_container(cfg.memory, resolve=True)
        self.memory_name = str(self.memory_cfg.get("name", "memory"))
        self.cls = get_class(self.memory_cfg["_target_"])
        self.kind = snapshot_kind(self.cls)
        params = {k: v for k, v in self.memory_cfg.items() if k != "name"}
        self.params = {k: v for k, v in params.items() if k != "_target_"}
        self.batch_size = cfg.dataset.get("insert_batch_size")
        self.base_identity = {
            "format": FORMAT,
            "memory": self.memory_cfg["_target_"],
            "construction": construction_settings(params, self.cls),
            "llm": services.llm.model_id,
            "embedder": services.embedder.model_id,
            "tokenizer": str(cfg.get("tokenizer", "cl100k_base")),
            "code": code_hash(self.cls) if self.kind else None,
        }
        self.counts: Counter[str] = Counter()

    # ------------------------------------------------------------------ addresses
    def reusable(self, episode: Episode) -> str | None:
        """None when the episode's memory can be snapshotted, else why not (counted by the caller)."""
        if not self.enabled:
            return "disabled"
        if self.kind is None:
            return "unsupported"  # a flat memory without state()/load_state()
        if episode.is_online:
            return "interleaved"
        if any(FORGET_KEY in u.metadata for u in episode.units):
            return "forgetting"  # a loaded memory is given every unit of the episode back
        return None

    def identity(self, episode: Episode) -> dict[str, Any]:
        return {
            **self.base_identity,
            "dataset": self.dataset_name,
            "episode": episode.id,
            "episode_sha256": episode_checksum(episode, self.batch_size),
        }

    def folder(self, episode: Episode) -> tuple[Path, str]:
        key = hashlib.sha256(
            json.dumps(self.identity(episode), sort_keys=True).encode()
        ).hexdigest()
        return (
            self.root
            / _safe(self.memory_name)
            / _safe(self.dataset_name)
            / _safe(episode.id)
            / key[:20]
        ), key

    def exists(self, episode: Episode) -> bool:
        return (
            self.reusable(episode) is None and (self.folder(episode)[0] / "snapshot.json").is_file()
        )

    # ------------------------------------------------------------------ load
    def load(self, episode: Episode) -> tuple[MemorySystem, dict[str, Any]] | None:
        """The episode's memory loaded from its snapshot (no LLM call), with the snapshot's record;
        None when there is none (or it cannot be read: then it is rebuilt, and a warning says why)."""
        why = self.reusable(episode)
        if why is not None:
            self.counts[why] += 1
            return None
        folder, key = self.folder(episode)
        meta_path = folder / "snapshot.json"
        if not meta_path.is_file():
            return None
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            _check_finite(folder)
            memory = self._restore(folder, episode)
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning(
                "snapshot %s could not be loaded (%s: %s); building the memory instead",
                folder,
                type(err).__name__,
                err,
            )
            self.counts["unreadable"] += 1
            if isinstance(err, NonFiniteSnapshot):  # never right: make room for the rebuilt one
                _discard(folder)
            return None
        self.services.meter.add_intrinsic("build", meta.get("build_intrinsic", {}))
        self.counts["loaded"] += 1
        return memory, {
            "action": "loaded",
            "path": str(folder),
            "key": key,
            "built_by": meta.get("built_by"),
            "insert_batches": meta.get("insert_batches", []),
            "build_compute_s": meta.get("build_intrinsic", {}).get("compute_s"),
        }

    def _restore(self, folder: Path, episode: Episode) -> MemorySystem:
        s = self.services
        if self.kind == "hierarchical":
            memory = self.cls.load(
                folder, llm=s.llm, embedder=s.embedder, tokenizer=s.tokenizer, **self.params
            )
        else:
            memory = self.cls(llm=s.llm, embedder=s.embedder, tokenizer=s.tokenizer, **self.params)
            state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
            arrays = folder / "arrays.npz"
            if arrays.is_file():
                state.update(fileio.load_npz(arrays))
            memory.load_state(state)
        memory.units = list(episode.units)
        memory._pending = False
        return memory

    # ------------------------------------------------------------------ save
    def save(
        self,
        episode: Episode,
        memory: MemorySystem,
        batches: list[dict],
        build_intrinsic: dict[str, Any],
        failed: str | None,
    ) -> dict[str, Any]:
        """Save the freshly built memory of a reusable episode (unless its build failed); the record
        says what was done."""
        folder, key = self.folder(episode)
        if failed or memory.degraded:
            self.counts["built_not_saved"] += 1
            return {
                "action": "built",
                "saved": False,
                "why": failed or f"degraded: {memory.degraded}",
            }
        if not self.save_enabled:
            self.counts["built"] += 1
            return {"action": "built", "saved": False, "why": "saving is off (dry run)"}
        meta = {
            "identity": self.identity(episode),
            "key": key,
            "kind": self.kind,
            "built_by": str(self.run_dir) if self.run_dir else None,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "insert_batches": batches,
            "build_intrinsic": build_intrinsic,
        }
        try:
            _write_atomically(folder, lambda tmp: self._write(tmp, memory, meta))
        except OSError as err:  # a snapshot is an optimisation: the run goes on without it
            log.warning("could not save the memory snapshot %s (%s)", folder, err.strerror or err)
            self.counts["built_not_saved"] += 1
            return {
                "action": "built",
                "saved": False,
                "why": f"write failed: {err.strerror or err}",
            }
        self.counts["built_saved"] += 1
        return {"action": "built", "saved": True, "path": str(folder), "key": key}

    def _write(self, tmp: Path, memory: MemorySystem, meta: dict[str, Any]) -> None:
        if self.kind == "hierarchical":
            memory.save(tmp, view=False)
        else:
            state = memory.state()
            arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
            fileio.write_json(
                tmp / "state.json",
                {k: v for k, v in state.items() if k not in arrays},
                ensure_ascii=False,
                default=_plain,
            )
            if arrays:
                fileio.atomic_write(tmp / "arrays.npz", lambda f: np.savez(f, **arrays), mode="wb")
        fileio.write_json(
            tmp / "snapshot.json", meta, indent=1, default=_plain
        )  # written last: the marker

    def summary(self) -> dict[str, Any]:
        """What metrics.json records: how many memories were loaded, built and saved, and why not."""
        return {
            "enabled": self.enabled,
            "path": str(self.root),
            **dict(sorted(self.counts.items())),
        }


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


class NonFiniteSnapshot(ValueError):
    """A snapshot's vector table holds NaN or inf."""


def _discard(folder: Path) -> None:
    """Move a broken snapshot aside (atomically, so a job reading it sees it whole or not at all),
    then delete it; the run that rebuilds the memory saves it anew."""
    trash = folder.parent / f".broken-{folder.name}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(folder, trash)
    except OSError:
        return  # another job moved it first
    shutil.rmtree(trash, ignore_errors=True)


def _check_finite(folder: Path) -> None:
    """A ``ValueError`` if a saved vector table holds NaN or inf (written before replies were
    checked): the snapshot then counts as unreadable and the memory is built again."""
    for path in (folder / "embeddings.npy", folder / "arrays.npz"):
        if not path.is_file():
            continue
        arrays = fileio.load_npz(path) if path.suffix == ".npz" else {"": fileio.load_npy(path)}
        for name, array in arrays.items():
            if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
                raise NonFiniteSnapshot(f"{path.name}{':' + name if name else ''} holds NaN or inf")


def _write_atomically(folder: Path, write: Any) -> None:
    """Write into a temporary sibling folder, then rename it into place (the first writer wins)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".tmp-{folder.name}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        write(tmp)
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (
                folder / "snapshot.json"
            ).is_file():  # not another job's finished copy: a real error
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def snapshot_root(cfg: DictConfig) -> Path:
    """``snapshots.path``; null = a ``snapshots`` folder beside the call cache (``cache.path``)."""
    section = cfg.get("snapshots") or {}
    if section.get("path"):
        return Path(str(section.get("path")))
    return Path(str(cfg.cache.path)).parent / "snapshots"
