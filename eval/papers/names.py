"""The names a published cell may use, and a check that every file uses only those.

Systems are the ``name`` of a ``conf/memory/*.yaml`` (a row's ``memory`` keys must be keys of that
file), or a system another issue is adding (``PENDING_SYSTEMS``: checked by name only until its
config lands). Datasets likewise (``conf/dataset/*.yaml``, ``PENDING_DATASETS``). Category labels
are those the loaders write (``CATEGORY_LABELS``; tests/unit/eval/test_published.py checks the registry against
the loaders on their fixtures). Metric keys: ``eval.metrics.registry`` for ``metrics``; the
top-level keys of ``MemorySystem.stats()`` / ``HierarchicalMemory.stats()`` for ``memory_stats``;
the sections of metrics.json for ``run``; plus the derived names of ``paper_runs``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from memharness.eval.metrics import registry
from memharness.eval.metrics.aggregate import position_bucket
from memharness.eval.papers.runs import DERIVED_MEMORY_STATS, DERIVED_RUN
from memharness.eval.papers.store import Cell, Paper, Table
from memharness.memsys.services.meter import STAGES

PENDING_SYSTEMS = {
    "raptor": "issue 8",
    "cam": "issue 9",
    "graphrag": "issue 10",
    "structmem": "issue 11",
}
PENDING_DATASETS = {
    "quality_mc": "issue 11 (QuALITY in multiple-choice mode)",
}
CATEGORY_LABELS: dict[str, dict[str, tuple[str, ...]]] = {
    "type": {
        "multihop": ("inference", "comparison", "temporal", "null")
    },  # data_prep/multihop.py TYPES
    "difficulty": {
        "quality": ("easy", "hard"),
        "quality_mc": ("easy", "hard"),
    },  # data_prep/quality.py
    "complexity": {
        "novelqa": ("sh", "mh", "dtl")
    },  # NovelQA "Complexity": single-hop, multi-hop, detail
    "aspect": {"novelqa": ("times", "meaning", "span", "setting", "relation", "character", "plot")},
    "category": {
        "locomo": ("multi-hop", "temporal", "open-domain", "single-hop", "adversarial")
    },  # data_prep/locomo.py CATEGORY_MAPS["official"]
    "locomo_category": {"locomo": ("1", "2", "3", "4", "5")},
    "evidence_position": {},  # msc_e: filled from conf/eval position_buckets
}
MEMORY_STATS_KEYS = (
    "units",
    "rebuilds",
    "structure",
    "depth_profile",
    "levels",
    "coherence",
    "revenue",
    "ss_theta",
    "traversal",
    "insertion",
    "insertions",
    "config",
    "memories",
)
RUN_KEYS = ("data", "time", "calls", "counts", "seed")


def conf_dir() -> Path:
    import memharness.conf

    return Path(memharness.conf.__file__).resolve().parent


@cache
def group_configs(group: str) -> dict[str, dict[str, Any]]:
    """``conf/<group>/*.yaml`` by their ``name`` field, each merged over the same-group configs its
    defaults list names (``cam_fm`` over ``cam``; ``_self_`` last)."""
    folder = conf_dir() / group

    def read(stem: str) -> dict[str, Any]:
        raw = yaml.safe_load((folder / f"{stem}.yaml").read_text()) or {}
        merged: dict[str, Any] = {}
        for base in raw.pop("defaults", None) or []:
            if isinstance(base, str) and base != "_self_" and (folder / f"{base}.yaml").is_file():
                merged.update(read(base))
        return {**merged, **raw}

    out = {}
    for path in sorted(folder.glob("*.yaml")):
        raw = read(path.stem)
        out[str(raw.get("name", path.stem))] = raw
    return out


def position_labels() -> tuple[str, ...]:
    """The evidence-position bucket labels the aggregation writes with the default eval config."""
    edges = yaml.safe_load((conf_dir() / "eval" / "default.yaml").read_text())["position_buckets"]
    return tuple(position_bucket(lo, edges) for lo in edges[:-1]) + (
        position_bucket(edges[-1], edges),
    )


def category_labels(key: str, dataset: str) -> tuple[str, ...] | None:
    if key == "evidence_position":
        return position_labels() if dataset == "msc_e" else None
    return CATEGORY_LABELS.get(key, {}).get(dataset)


def _has_path(config: dict[str, Any], dotted: str) -> bool:
    node: Any = config
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def metric_problem(cell: Cell) -> str | None:
    if cell.metric is None:
        return None
    if cell.source == "metrics":
        return (
            None
            if registry.lookup(cell.metric) is not None
            else f"metric {cell.metric!r} is not a metric key"
        )
    if cell.source == "memory_stats":
        top = cell.metric.split("[]")[0].split(".")[0]
        ok = cell.metric in DERIVED_MEMORY_STATS or top in MEMORY_STATS_KEYS
        return None if ok else f"memory_stats key {cell.metric!r} is not one the memories write"
    prefix, _, stage = cell.metric.partition(".")
    if f"{prefix}." in DERIVED_RUN:
        return (
            None
            if stage in STAGES
            else f"{cell.metric!r}: unknown stage {stage!r} (stages: {STAGES})"
        )
    return (
        None
        if prefix in RUN_KEYS
        else f"metrics.json section {prefix!r} is not one the runner writes"
    )


def _protocol_problems(
    paths: dict[str, Any], systems: set[str], datasets: set[str], where: str
) -> list[str]:
    memories, data = group_configs("memory"), group_configs("dataset")
    problems = []
    for path in paths:
        group, _, rest = path.partition(".")
        pool = {
            "memory": [memories[s] for s in systems if s in memories],
            "dataset": [data[d] for d in datasets if d in data],
        }.get(group)
        if pool is None:
            problems.append(f"{where}: protocol {path!r} is not a memory.* or dataset.* setting")
        elif pool and not any(_has_path(cfg, rest) for cfg in pool):
            problems.append(
                f"{where}: protocol {path!r} is in none of the configs of {sorted(systems or datasets)}"
            )
    return problems


def table_problems(table: Table) -> list[str]:
    """Names in one table that the harness does not know."""
    memories, data = group_configs("memory"), group_configs("dataset")
    where = f"table {table.id}"
    problems = []
    if (
        table.experiment is not None
        and not (conf_dir() / "experiment" / f"{table.experiment}.yaml").is_file()
    ):
        problems.append(
            f"{where}: experiment {table.experiment!r} is not a file of conf/experiment"
        )
    for row in table.rows:
        if row.system is None:
            continue
        if row.system not in memories and row.system not in PENDING_SYSTEMS:
            problems.append(
                f"{where} row {row.id}: system {row.system!r} is not a memory ({sorted(memories)})"
            )
        elif row.system in memories:
            problems += [
                f"{where} row {row.id}: memory.{k} is not a key of conf/memory for {row.system}"
                for k in row.memory
                if k not in memories[row.system]
            ]
        problems += _protocol_problems(row.protocol, {row.system}, set(), f"{where} row {row.id}")
    systems = {r.system for r in table.rows if r.system}
    datasets = {d for c in table.columns for d in c.datasets}
    problems += _protocol_problems(table.protocol, systems, datasets, where)
    for cell in table.cells.values():
        at = f"{where} cell {cell.row}/{cell.column}"
        for d in cell.datasets:
            if d not in data and d not in PENDING_DATASETS:
                problems.append(f"{at}: dataset {d!r} is not a dataset ({sorted(data)})")
        if cell.category is not None:
            key, label = cell.category
            for d in cell.datasets:
                labels = category_labels(key, d)
                if labels is None or label not in labels:
                    problems.append(f"{at}: {d} has no category {key}={label} (labels: {labels})")
        problem = metric_problem(cell)
        if problem:
            problems.append(f"{at}: {problem}")
    return problems


def harness_problems(paper: Paper) -> list[str]:
    return [f"{paper.path.name}: {p}" for t in paper.tables for p in table_problems(t)]
