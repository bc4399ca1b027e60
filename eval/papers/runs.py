"""Run folders as the paper report reads them: metrics.json, config.yaml and memory_stats.json only.

A value is read from one of three sources (a published cell's ``source``):

- ``metrics``: ``metrics.json`` ``metrics[<metric>]`` or, for a cell with a category,
  ``breakdowns[<key>][<label>][<metric>]`` -- mean, bootstrap CI and n as the run computed them;
- ``memory_stats``: a dotted path in each episode's entry of ``memory_stats.json``, averaged over
  episodes (``structure.nodes``); ``<list>[].<field>`` pools the items of a per-episode list
  (``insertions[].llm_calls``: mean, sd and a bootstrap CI over insertions); ``depth_mode`` is the
  depth holding the most nodes (from ``depth_profile``);
- ``run``: a dotted path in ``metrics.json`` (``time.build_s``, ``data.questions``);
  ``llm_requests.<stage>`` = LLM requests of a stage whether the backend or the cache answered
  them (``calls`` + ``cache_hits``), so a warm rerun counts what a cold one does;
  ``llm_requests_per_unit.<stage>`` divides that by the units inserted (``memory_stats`` ``units``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from memharness.eval.metrics.lexical import bootstrap_ci
from memharness.eval.record.read import ReportError, read_metrics

DERIVED_MEMORY_STATS = ("depth_mode",)
DERIVED_RUN = ("llm_requests.", "llm_requests_per_unit.")


class PaperReportError(Exception):
    """No usable run folder, or a run folder missing a file the report needs."""


class Missing(Exception):
    """A value the run folder does not hold; the message says what is missing (shown in the cell)."""


@dataclass(frozen=True)
class Value:
    mean: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    sd: float | None = None

    def scaled(self, factor: float) -> Value:
        if factor == 1.0:
            return self
        mul = lambda x: None if x is None else x * factor
        return replace(
            self,
            mean=self.mean * factor,
            ci_low=mul(self.ci_low),
            ci_high=mul(self.ci_high),
            sd=mul(self.sd),
        )


_ABSENT = object()


def dig(obj: Any, path: str) -> Any:
    """``obj["a"]["b"]`` for ``"a.b"``; the sentinel ``_ABSENT`` when a key is missing."""
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return _ABSENT
        obj = obj[key]
    return obj


@dataclass
class Run:
    folder: Path
    metrics: dict[str, Any]
    config: dict[str, Any]
    _stats: dict[str, Any] | None = None

    @property
    def memory(self) -> str:
        return str(self.metrics.get("memory"))

    @property
    def dataset(self) -> str:
        return str(self.metrics.get("dataset"))

    @property
    def llm(self) -> str | None:
        return self.metrics.get("llm")

    @property
    def embedder(self) -> str | None:
        return self.metrics.get("embedder")

    @property
    def judge(self) -> str | None:
        """The judge's model id (metrics.json ``judge``); None when no judge ran."""
        return self.metrics.get("judge")

    @property
    def stamp(self) -> str:
        return self.folder.name

    def setting(self, path: str) -> Any:
        """A config.yaml value by dotted path (``_ABSENT`` when the run's config has no such key)."""
        return dig(self.config, path)

    def stats(self) -> dict[str, Any]:
        if self._stats is None:
            path = self.folder / "memory_stats.json"
            if not path.is_file():
                raise Missing("no memory_stats.json in the run folder")
            self._stats = json.loads(path.read_text())
        return self._stats


def find_runs(paths: Sequence[str | Path]) -> list[Path]:
    """Every folder holding a metrics.json under the given paths (a run folder, a sweep, a parent)."""
    found: set[Path] = set()
    for p in map(Path, paths):
        if (p / "metrics.json").is_file():
            found.add(p)
        elif p.is_dir():
            found.update(m.parent for m in p.rglob("metrics.json"))
        else:
            raise PaperReportError(f"{p} is neither a run folder nor a folder holding run folders")
    if not found:
        raise PaperReportError(
            f"no run folders (with metrics.json) under {[str(p) for p in paths]}"
        )
    return sorted(found)


def load_run(folder: Path) -> Run:
    """metrics.json and config.yaml of one run (memory_stats.json is read when a cell needs it)."""
    for name in ("metrics.json", "config.yaml"):
        if not (folder / name).is_file():
            raise PaperReportError(f"run folder {folder} has no {name}")
    try:
        metrics = read_metrics(folder)
        config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise PaperReportError(
            f"run folder {folder}: unreadable metrics.json or config.yaml: {err}"
        ) from None
    except ReportError as err:  # another run format, or a record that is not one
        raise PaperReportError(str(err)) from None
    return Run(folder, metrics, config)


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    return [load_run(f) for f in find_runs(paths)]


# ---------------------------------------------------------------------------------- values
def metric_value(run: Run, metric: str, category: tuple[str, str] | None) -> Value:
    """Mean, CI and n of a metric, overall or within one category label."""
    if category is None:
        summary = (run.metrics.get("metrics") or {}).get(metric)
        where = ""
    else:
        key, label = category
        by_label = (run.metrics.get("breakdowns") or {}).get(key) or {}
        group = by_label.get(label)
        if group is None:
            raise Missing(
                f"no {key}={label} questions in the run (labels there: {sorted(by_label)})"
            )
        summary, where = group.get(metric), f" for {key}={label}"
    if not summary:
        off = metric == "judge" and run.setting("eval.judge.enabled") is False
        raise Missing(f"{metric} not measured{where}" + (" (judge disabled)" if off else ""))
    return Value(summary["mean"], summary.get("ci_low"), summary.get("ci_high"), summary.get("n"))


def _episodes(run: Run) -> list[dict[str, Any]]:
    return [v for v in run.stats().values() if isinstance(v, dict)]


def _depth_mode(episode: dict[str, Any]) -> float | None:
    profile = episode.get("depth_profile")
    if not isinstance(profile, dict) or not profile:
        return None
    counts = {int(d): v.get("nodes", 0) for d, v in profile.items()}
    return float(min(counts, key=lambda d: (-counts[d], d)))


def stats_value(run: Run, metric: str, seed: int = 0) -> Value:
    """A memory_stats.json quantity: averaged over episodes, or pooled over a per-episode list."""
    episodes = _episodes(run)
    if metric == "depth_mode":
        values = [v for v in map(_depth_mode, episodes) if v is not None]
    elif "[]." in metric:
        list_key, field = metric.split("[].", 1)
        values = [
            item[field]
            for ep in episodes
            for item in (ep.get(list_key) or [])
            if isinstance(item, dict) and isinstance(item.get(field), (int, float))
        ]
    else:
        values = [v for v in (dig(ep, metric) for ep in episodes) if isinstance(v, (int, float))]
    if not values:
        raise Missing(f"memory_stats.json has no {metric}")
    data = np.asarray(values, dtype=float)
    low = high = None
    if data.size > 1:
        low, high = bootstrap_ci(data, 1000, 0.95, seed)
    return Value(
        float(data.mean()), low, high, int(data.size), float(data.std()) if data.size > 1 else None
    )


def llm_requests(run: Run, stage: str) -> float:
    counts = dig(run.metrics, f"calls.{stage}")
    if not isinstance(counts, dict) or "calls" not in counts:
        raise Missing(f"metrics.json has no calls.{stage}")
    return float(counts["calls"]) + float(counts.get("cache_hits", 0))


def run_value(run: Run, metric: str) -> Value:
    """A metrics.json quantity by dotted path, or an LLM-request count of a stage."""
    if metric.startswith("llm_requests."):
        return Value(llm_requests(run, metric.split(".", 1)[1]))
    if metric.startswith("llm_requests_per_unit."):
        units = sum(ep.get("units", 0) for ep in _episodes(run))
        if not units:
            raise Missing("memory_stats.json counts no inserted units")
        return Value(llm_requests(run, metric.split(".", 1)[1]) / units)
    value = dig(run.metrics, metric)
    if value is _ABSENT or not isinstance(value, (int, float)) or isinstance(value, bool):
        raise Missing(f"metrics.json has no number at {metric}")
    return Value(float(value))


def value_for(
    run: Run, source: str, metric: str, category: tuple[str, str] | None, factor: float
) -> Value:
    """The run's value for a cell, converted to the paper's unit."""
    if source == "metrics":
        value = metric_value(run, metric, category)
    elif source == "memory_stats":
        value = stats_value(run, metric, int(run.metrics.get("seed", 0)))
    else:
        value = run_value(run, metric)
    return value.scaled(factor)
