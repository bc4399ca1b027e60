"""What a finished run writes: samples.jsonl, memory_stats.json and metrics.json, with the
time accounting (where the wall time went) that metrics.json carries."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from memharness.data_prep.base import Dataset
from memharness.eval.record import folder as run_io
from memharness.eval.record import outcome, schema
from memharness.eval.record.provenance import environment
from memharness.memsys.services import files as fileio
from memharness.memsys.services.factory import Services
from memharness.memsys.services.secrets import redact
from omegaconf import DictConfig


def config_yaml(resolved: dict[str, Any]) -> str:
    """The text of a run's config.yaml: the resolved, redacted config written as OmegaConf writes
    it, dumped straight from the plain dict (building a config object only to dump it again cost
    more than the rest of a warm run's bookkeeping)."""
    from omegaconf._utils import get_omega_conf_dumper

    return yaml.dump(
        resolved,
        default_flow_style=False,
        allow_unicode=True,
        sort_keys=False,
        Dumper=get_omega_conf_dumper(),
    )


def time_accounting(wall_s: float, calls: dict[str, Any], services: Services) -> dict[str, Any]:
    """Where the run's time went. ``harness_s`` is the wall time with no backend call in flight,
    building the backends (``startup_s``) and loading weights on first use (``model_load_s``) left
    out; ``concurrency`` is backend seconds per second with at least one call in flight
    (``backend_busy_s``), i.e. how many calls were in flight on average."""
    meter = services.meter
    busy, backend_s = meter.busy_s(), calls["total"]["backend_s"]
    # embedded backends load their weights on the first call that the cache cannot serve
    load_s = sum(
        float(getattr(getattr(facade, "backend", None), "load_s", 0.0) or 0.0)
        for facade in (services.llm, services.embedder)
    )
    return {
        "total_s": wall_s,
        **{f"{s}_s": calls[s]["wall_s"] for s in ("build", "retrieve", "answer", "judge")},
        "backend_s": backend_s,
        "backend_busy_s": busy,
        "startup_s": services.startup_s,
        "model_load_s": load_s,  # 0 when every call was served by the cache: no weights loaded
        "harness_s": max(0.0, wall_s - busy - services.startup_s - load_s),
        "concurrency": backend_s / busy if busy > 0 else 0.0,
        "peak_in_flight": meter.peak_in_flight,
    }


SUBSET_KEYS = ("limit", "subset_seed", "stratify_by", "strata", "question_ids")


def question_ids_sha256(samples: list[dict]) -> str:
    """Checksum of the sorted question ids: runs with equal checksums answered the same questions."""
    return hashlib.sha256(
        "\n".join(sorted(str(s["question_id"]) for s in samples)).encode()
    ).hexdigest()


def product_section(memory_stats: dict[str, dict]) -> dict[str, Any]:
    """``product`` for metrics.json: what a memory product's worker said of itself (name, pinned
    versions, clock; ``memsys/products``), from the first episode that started it; {} otherwise."""
    for stats in memory_stats.values():
        product = stats.get("product") if isinstance(stats, dict) else None
        if isinstance(product, dict) and product.get("version"):
            return {"product": product}
    return {}


def write_outputs(
    out_dir: Path,
    cfg: DictConfig,
    dataset: Dataset,
    samples: list[dict],
    memory_stats: dict,
    services: Services,
    wall_s: float,
    summarize: Callable[[list[dict]], dict[str, Any]],
    oracle: bool = False,
    overrides: list[str] | None = None,
    sections: dict[str, Any] | None = None,
    in_flight: int = 1,
) -> dict[str, Any]:
    """Write samples.jsonl, memory_stats.json and metrics.json. ``summarize(samples)`` gives the
    run's counts, means and breakdowns (``runner.summarize_run``), called once non-finite scores
    are null; ``sections`` (the judges, the judge reliability audit) go in as they are;
    ``in_flight`` is ``run.episodes_in_flight`` as the runner resolved it."""
    # NaN / inf become null before anything is summarised or written (null = not computable)
    nulled = run_io.null_nonfinite(samples)
    run_io.write_samples(out_dir, samples)
    memory_stats, stats_nulled = fileio.finite_json(memory_stats)
    run_io.write_json(out_dir, "memory_stats.json", memory_stats, indent=1, default=float)
    calls = services.meter.to_json()
    metrics = {
        "format": schema.FORMAT,
        "memory": cfg.memory.name,
        **({"oracle": True} if oracle else {}),
        "dataset": cfg.dataset.name,
        "seed": int(cfg.seed),
        "overrides": redact(list(overrides or [])),
        "llm": services.llm.model_id,
        "embedder": services.embedder.model_id,
        **product_section(memory_stats),
        **summarize(samples),
        **(sections or {}),
        "data": {
            "name": dataset.name,
            "revision": dataset.revision,
            "files": dataset.files,
            "checksum": dataset.checksum(),
            "episodes": len(dataset.episodes),
            "questions": dataset.num_questions,
            "question_ids_sha256": question_ids_sha256(samples),
            "metadata": {k: v for k, v in dataset.metadata.items() if k not in SUBSET_KEYS},
            "subset": {k: dataset.metadata[k] for k in SUBSET_KEYS if k in dataset.metadata},
        },
        "time": {
            **time_accounting(wall_s, calls, services),
            "episodes_in_flight": in_flight,  # run.episodes_in_flight, resolved
        },
        "calls": calls,  # the spend ledger: what this run sent to a backend
        "intrinsic": services.meter.intrinsic_json(),  # the method's cost, cached or not (tables show this)
        "env": environment(),
    }
    metrics["outcome"] = outcome.outcome(metrics, cfg, services)
    metrics["outcome"]["nonfinite_nulled"] = nulled + stats_nulled
    run_io.write_metrics(out_dir, metrics)
    return metrics
