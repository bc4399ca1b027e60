"""What every dataset loader returns, plus subsetting and checksums."""
from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from memharness.memsys.types import Episode, Question


class DatasetError(Exception):
    """A dataset is missing or malformed; the message names the file, field or setting."""


@dataclass
class Dataset:
    """Episodes plus the provenance a run folder records."""

    name: str
    episodes: list[Episode]
    files: dict[str, str] = field(default_factory=dict)  # file path -> sha256
    revision: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def num_questions(self) -> int:
        return sum(len(e.questions) for e in self.episodes)

    def checksum(self) -> str:
        """sha256 over the loaded content (units and questions), independent of file layout."""
        h = hashlib.sha256()
        for ep in self.episodes:
            h.update(ep.id.encode())
            for u in ep.units:
                h.update(u.id.encode())
                h.update(u.text.encode())
            for q in ep.questions:
                h.update(json.dumps([q.id, q.text, list(q.answers), q.position], ensure_ascii=False).encode())
        return h.hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def subset(dataset: Dataset, limit: int | None, seed: int = 0, stratify_by: str | None = None) -> Dataset:
    """Keep at most ``limit`` questions, stratified by a category label, deterministically.

    Questions are allocated round-robin over the strata (sorted by name) after a
    seeded shuffle within each stratum, so every category is represented while
    the limit allows. Episodes left without questions are dropped; units are kept
    (a question's memory scope does not shrink).
    """
    if limit is None or limit >= dataset.num_questions:
        return dataset
    if limit <= 0:
        raise DatasetError(f"dataset.limit must be positive, got {limit}")
    rng = random.Random(seed)
    strata: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for ei, ep in enumerate(dataset.episodes):
        for qi, q in enumerate(ep.questions):
            strata[q.categories.get(stratify_by, "") if stratify_by else ""].append((ei, qi))
    queues = []
    for name in sorted(strata):
        members = strata[name][:]
        rng.shuffle(members)
        queues.append(members)
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < limit:
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.add(queue.pop())
    episodes = []
    for ei, ep in enumerate(dataset.episodes):
        keep = [q for qi, q in enumerate(ep.questions) if (ei, qi) in chosen]
        if keep:
            episodes.append(replace(ep, questions=keep))
    return replace(dataset, episodes=episodes, metadata={**dataset.metadata, "limit": limit, "subset_seed": seed})


def check_integrity(dataset: Dataset) -> dict[str, list[str]]:
    """Report duplicate ids, empty texts and evidence pointing at unknown sources."""
    problems: dict[str, list[str]] = {"duplicate_ids": [], "empty_texts": [], "dangling_evidence": []}
    seen: set[str] = set()
    for ep in dataset.episodes:
        sources = {u.source_id for u in ep.units}
        for item in [*ep.units, *ep.questions]:
            if item.id in seen:
                problems["duplicate_ids"].append(item.id)
            seen.add(item.id)
            if not item.text.strip():
                problems["empty_texts"].append(item.id)
        for q in ep.questions:
            problems["dangling_evidence"].extend(
                f"{q.id}->{e.source_id}" for e in q.evidence if e.source_id not in sources)
    return problems


def iter_questions(dataset: Dataset) -> Iterable[tuple[Episode, Question]]:
    for ep in dataset.episodes:
        for q in ep.questions:
            yield ep, q
