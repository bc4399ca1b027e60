"""What every dataset loader returns, plus subsetting and checksums."""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

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
                h.update(
                    json.dumps(
                        [q.id, q.text, list(q.answers), q.position], ensure_ascii=False
                    ).encode()
                )
        return h.hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def proportional_allocation(sizes: dict[str, int], limit: int) -> dict[str, int]:
    """How many questions each stratum gets so that each keeps its share of ``limit``.

    Largest-remainder rounding of ``limit * size / total``; every stratum gets at least one
    question when ``limit`` is at least the number of strata (taken from the strata furthest above
    their exact share), and none gets more than it holds. Ties break by stratum name, so the
    allocation is deterministic.
    """
    total = sum(sizes.values())
    names = sorted(sizes)
    exact = {s: limit * sizes[s] / total for s in names}
    alloc = {s: min(sizes[s], int(exact[s])) for s in names}
    if limit >= len(names):
        alloc = {s: max(1, a) for s, a in alloc.items()}
    while sum(alloc.values()) < limit:  # hand out the rest by largest remainder
        s = max(
            (s for s in names if alloc[s] < sizes[s]),
            key=lambda s: (exact[s] - alloc[s], -names.index(s)),
        )
        alloc[s] += 1
    while (
        sum(alloc.values()) > limit
    ):  # the minimum of one overshot: take from the most over-served
        floor = 1 if limit >= len(names) else 0
        s = max(
            (s for s in names if alloc[s] > floor),
            key=lambda s: (alloc[s] - exact[s], -names.index(s)),
        )
        alloc[s] -= 1
    return alloc


def _check_category(dataset: Dataset, name: str) -> None:
    """A stratifier no question carries would silently give an unstratified subset: refuse it."""
    labels = {k for ep in dataset.episodes for q in ep.questions for k in q.categories}
    if name in labels:
        return
    import difflib

    close = difflib.get_close_matches(name, sorted(labels), n=max(1, len(labels)), cutoff=0.0)
    raise DatasetError(
        f"dataset.stratify_by={name!r}: no question of this dataset has that category; "
        f"valid: {', '.join(close) or '(none: this dataset has no categories, use null)'}"
    )


def subset(
    dataset: Dataset, limit: int | None, seed: int = 0, stratify_by: str | None = None
) -> Dataset:
    """Keep at most ``limit`` questions, a proportional stratified sample, deterministically.

    Each stratum (value of the category label ``stratify_by``) keeps its share of the questions
    (``proportional_allocation``: at least one where the limit allows), so a subset's mean estimates
    the full set's mean; within a stratum the questions are a seeded random sample. Episodes left
    without questions are dropped; units are kept (a question's memory scope does not shrink). The
    metadata records the limit, the seed, the allocation and the kept question ids.
    """
    if limit is None or limit >= dataset.num_questions:
        return dataset
    if limit <= 0:
        raise DatasetError(f"dataset.limit must be positive, got {limit}")
    if stratify_by:
        _check_category(dataset, stratify_by)
    rng = random.Random(seed)
    strata: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for ei, ep in enumerate(dataset.episodes):
        for qi, q in enumerate(ep.questions):
            strata[str(q.categories.get(stratify_by, "")) if stratify_by else ""].append((ei, qi))
    alloc = proportional_allocation({name: len(members) for name, members in strata.items()}, limit)
    chosen: set[tuple[int, int]] = set()
    for name in sorted(strata):
        chosen.update(rng.sample(strata[name], alloc[name]))
    episodes, kept_ids = [], []
    for ei, ep in enumerate(dataset.episodes):
        keep = [q for qi, q in enumerate(ep.questions) if (ei, qi) in chosen]
        if keep:
            episodes.append(replace(ep, questions=keep))
            kept_ids += [q.id for q in keep]
    strata_counts = {
        name: {"total": len(strata[name]), "kept": alloc[name]} for name in sorted(strata)
    }
    return replace(
        dataset,
        episodes=episodes,
        metadata={
            **dataset.metadata,
            "limit": limit,
            "subset_seed": seed,
            "stratify_by": stratify_by,
            "strata": strata_counts,
            "question_ids": kept_ids,
        },
    )


def check_integrity(dataset: Dataset) -> dict[str, list[str]]:
    """Report duplicate ids, empty texts and evidence pointing at unknown sources; refuse (a
    one-line ``DatasetError``) a question id used twice: runs are compared question by question,
    by id, so a repeated id would silently merge two questions."""
    refuse_unusable(dataset)
    problems: dict[str, list[str]] = {
        "duplicate_ids": [],
        "empty_texts": [],
        "dangling_evidence": [],
    }
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
                f"{q.id}->{e.source_id}" for e in q.evidence if e.source_id not in sources
            )
    return problems


def refuse_unusable(dataset: Dataset) -> None:
    """A one-line ``DatasetError`` naming the dataset and its files when nothing could be scored
    from it: no question at all, an episode with questions but an empty memory, or a question id
    used twice."""
    files = ", ".join(sorted(dataset.files)) or "its files"
    if not dataset.num_questions:
        raise DatasetError(f"dataset {dataset.name}: no question to ask in {files}")
    empty = [ep.id for ep in dataset.episodes if ep.questions and not ep.units]
    if empty:
        raise DatasetError(
            f"dataset {dataset.name}: {len(empty)} episode(s) with questions but no text to "
            f"remember (e.g. {empty[0]!r}) in {files}"
        )
    refuse_duplicate_questions(dataset)


def refuse_duplicate_questions(dataset: Dataset) -> None:
    """A ``DatasetError`` naming the dataset, its files and the repeated question ids, if any."""
    where: dict[str, list[str]] = defaultdict(list)
    for ep in dataset.episodes:
        for q in ep.questions:
            where[q.id].append(ep.id)
    repeated = {qid: eps for qid, eps in where.items() if len(eps) > 1}
    if repeated:
        examples = ", ".join(
            f"{qid!r} x{len(eps)} (episode {eps[0]})" for qid, eps in list(repeated.items())[:3]
        )
        files = ", ".join(sorted(dataset.files)) or "its files"
        raise DatasetError(
            f"dataset {dataset.name}: {len(repeated)} question id(s) used more than once: "
            f"{examples}; every question needs its own id (a repeated question, or the same "
            f"id given twice, in {files})"
        )


def iter_questions(dataset: Dataset) -> Iterable[tuple[Episode, Question]]:
    for ep in dataset.episodes:
        for q in ep.questions:
            yield ep, q
