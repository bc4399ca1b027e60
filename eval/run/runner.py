"""Evaluate one memory system on one dataset: build, retrieve, answer, judge, write.

The runner never scores a failure as an answer: a retrieval error, an answer
call that failed after its retries, an unparsed judge reply are each recorded
on the sample (``samples.jsonl``) and counted (``metrics.json``).
"""

from __future__ import annotations

import logging
import time
from functools import partial
from pathlib import Path
from typing import Any

from hydra.utils import get_class, instantiate
from memharness.data_prep import forgetting
from memharness.data_prep.base import Dataset, DatasetError, check_integrity, subset
from memharness.eval.judge import audit as judge_audit
from memharness.eval.judge import forgetting as forget_judge
from memharness.eval.judge import loop as judge_loop
from memharness.eval.judge import official as official_judge
from memharness.eval.judge.judges import Judges, build_judges
from memharness.eval.metrics import aggregate, ingestion
from memharness.eval.metrics.scorers import ScoreContext
from memharness.eval.record import folder as run_io
from memharness.eval.record import outputs
from memharness.eval.run import (
    closed_book,
    episodes,
    evidence,
    failures,
    rebuild_warning,
    scoring,
    timing,
)
from memharness.eval.run.snapshots import Snapshots
from memharness.eval.run.validate import validate_config
from memharness.memsys.base import RUN_FOLDER, MemorySystem
from memharness.memsys.services.cpu import cpu_pool
from memharness.memsys.services.factory import Services, build_services
from memharness.memsys.services.meter import current_scope
from memharness.memsys.services.pool import switch_interval
from memharness.memsys.services.progress import Progress
from memharness.memsys.services.secrets import redact
from memharness.memsys.services.types import ConfigError
from memharness.memsys.types import Episode, Question, RetrievedItem
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("memharness")


def load_dataset(cfg: DictConfig) -> Dataset:
    """Instantiate the loader and take the configured subset.

    Loaders run the integrity check themselves (``dataset.loader.integrity: warn | raise``)
    and record its counts in ``dataset.metadata["integrity"]``, which reaches metrics.json.
    """
    try:
        dataset = instantiate(cfg.dataset.loader)
    except Exception as err:
        cause = err.__cause__ or err
        if isinstance(cause, (DatasetError, ConfigError)):
            raise cause from None
        raise
    dataset = forgetting.apply(dataset, cfg.dataset.get("forget"))  # docs/forgetting.md
    if "integrity" not in dataset.metadata:
        dataset.metadata["integrity"] = {
            k: len(v) for k, v in check_integrity(dataset).items() if v
        }
    return subset(
        dataset,
        cfg.dataset.get("limit"),
        int(cfg.dataset.get("seed", cfg.seed)),
        cfg.dataset.get("stratify_by"),
    )


def build_memory(cfg: DictConfig, services: Services) -> MemorySystem:
    params = OmegaConf.to_container(cfg.memory, resolve=True)
    params.pop("name", None)
    return instantiate(
        params,
        llm=services.llm,
        embedder=services.embedder,
        tokenizer=services.tokenizer,
        _convert_="all",
    )


def is_oracle(cfg: DictConfig) -> bool:
    """Whether the configured memory is an oracle (``MemorySystem.oracle``): reports never rank it."""
    target = cfg.memory.get("_target_")
    return bool(target) and bool(getattr(get_class(str(target)), "oracle", False))


def sample_record(episode: Episode, question: Question) -> dict[str, Any]:
    return {
        "episode_id": episode.id,
        "question_id": question.id,
        "question": question.text,
        "references": list(question.answers),
        "options": list(question.options) if question.options else None,
        "gold_option": question.gold_option,
        "categories": dict(question.categories),
        "position": question.position,
        "evidence_position": question.evidence_position,
        "evidence_sources": [e.source_id for e in question.evidence],
        "status": "pending",
        "scores": {},
        "memory": {},
        **({"asked_at": question.asked_at} if question.asked_at else {}),
    }


def insert_batch_size(cfg: DictConfig) -> int | None:
    """``dataset.insert_batch_size``: units per insert batch; null = the dataset's own batches."""
    size = cfg.dataset.get("insert_batch_size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
        raise ConfigError(
            f"dataset.insert_batch_size must be a positive integer or null, got {size!r}"
        )
    return size


def split_batches(units: list, size: int | None) -> list[list]:
    """One insert event cut into consecutive batches of at most ``size`` units (None: kept whole)."""
    return [units] if size is None else [units[i : i + size] for i in range(0, len(units), size)]


def insert_batch(
    memory: MemorySystem, batch: list, integrate: bool, meter: Any, records: list[dict]
) -> None:
    """Insert one batch and record its size, wall time and LLM requests. With ``integrate`` (a batch
    size is set) the batch is brought fully in before the next: offline systems rebuild."""
    ledger = (
        current_scope() or meter
    )  # this episode's own counts (other episodes may be building too)
    before, start = ledger.stages["build"], time.perf_counter()
    requests = before.calls + before.cache_hits
    memory.insert(batch)
    if integrate:
        memory.ensure_built()
    after = ledger.stages["build"]
    records.append(
        {
            "units": len(batch),
            "seconds": time.perf_counter() - start,
            "llm_requests": after.calls + after.cache_hits - requests,
        }
    )


def run_episode(
    episode: Episode,
    cfg: DictConfig,
    services: Services,
    out_dir: Path,
    snapshots: Snapshots | None = None,
) -> tuple[list, dict]:
    """Stream the episode's inserts and questions; return (pending samples, memory stats).

    With ``snapshots``, a memory whose construction was saved before is loaded instead of built,
    and a freshly built one is saved before its first question (``eval.snapshots``)."""
    loaded = snapshots.load(episode) if snapshots is not None else None
    memory, source = loaded if loaded is not None else (build_memory(cfg, services), None)
    try:
        return _run_built(episode, cfg, services, out_dir, snapshots, memory, source, loaded)
    finally:
        memory.close()  # a product's worker and endpoint live as long as the episode


def _run_built(
    episode: Episode,
    cfg: DictConfig,
    services: Services,
    out_dir: Path,
    snapshots: Snapshots | None,
    memory: MemorySystem,
    source: dict | None,
    loaded: Any,
) -> tuple[list, dict]:
    """``run_episode``'s body: the episode's events on a built (or loaded) memory."""
    meter, budget = services.meter, int(cfg.dataset.budget_tokens)
    to_save = snapshots is not None and loaded is None and snapshots.reusable(episode) is None
    pending, build_error, batches = [], None, list(source["insert_batches"]) if source else []
    # the build's own compute seconds (a loaded memory: those of the build that saved it)
    build_s = {"compute_s": float((source or {}).get("build_compute_s") or 0.0)}
    size = insert_batch_size(cfg)
    for kind, payload in episode.events():
        if kind == "insert":
            for batch in split_batches(payload, size) if source is None else ():
                if build_error is None:
                    build_error = timing.guarded(
                        partial(insert_batch, memory, batch, size is not None, meter, batches),
                        meter,
                        "build",
                        episode.id,
                        build_s,
                    )
            continue
        record = sample_record(episode, payload)
        items: list[RetrievedItem] = []
        if build_error is None:
            build_error = timing.guarded(memory.ensure_built, meter, "build", episode.id, build_s)
        if to_save:  # every insert is in: the memory as built, before any question can change it
            source, to_save = (
                snapshots.save(episode, memory, batches, timing.build_cost(build_s), build_error),
                False,
            )
        if (
            build_error is not None
        ):  # the memory could not be built: every later question fails, counted
            record.update(status="build_failed", error=build_error)
        else:
            with meter.stage("retrieve"), timing.stage_time(current_scope(), "retrieve") as took:
                try:
                    items = memory.retrieve_question(payload, budget)
                except Exception as err:  # recorded and counted, never dropped
                    failures.log_step_failure(log, f"retrieval failed for {payload.id}", err)
                    record.update(status="retrieve_failed", error=f"{type(err).__name__}: {err}")
            timing.keep(record, "retrieve", took)
            # answered from a degraded memory: flagged
            record["memory"].update(failures.degradation_fields(memory))
        record["retrieved"] = [i.to_json() for i in items]
        record["context_tokens"] = sum(i.tokens or services.tokenizer.count(i.text) for i in items)
        if (
            record["status"] == "pending" and memory.answers_itself
        ):  # answer_all then skips this sample
            scoring.answer_by_memory(memory, payload, items, record, cfg, meter)
        pending.append((payload, items, record))
    stats = {
        **memory.stats(),
        "insert_batches": batches,
        "build_compute_s": build_s["compute_s"],  # build wall time not spent on a backend
        "size": timing.memory_size(memory, services.tokenizer),
        **({"build_error": build_error} if build_error else {}),
        "snapshot": _snapshot_record(source, snapshots, episode),
    }
    if hasattr(memory, "save"):
        try:
            memory.save(out_dir / "memory" / episode.id)
        except OSError as err:
            raise run_io.output_error(err, folder=out_dir) from None
    return pending, stats


def _snapshot_record(
    source: dict | None, snapshots: Snapshots | None, episode: Episode
) -> dict[str, Any]:
    """Whether the episode's memory was built or loaded, and from where (memory_stats.json)."""
    if source is not None:
        return {k: v for k, v in source.items() if k != "insert_batches"}
    why = snapshots.reusable(episode) if snapshots is not None else "disabled"
    return {"action": "built", "saved": False, "why": why or "no question"}


def evaluate_episode(
    episode: Episode,
    cfg: DictConfig,
    services: Services,
    out_dir: Path,
    judges: Judges,
    snapshots: Snapshots | None = None,
) -> tuple[list, dict]:
    """One episode from first insert to verdict: build (or load), retrieve, answer, judge. Its answers
    and verdicts go out as soon as its questions are retrieved, beside other episodes' builds."""
    pending, stats = run_episode(episode, cfg, services, out_dir, snapshots)
    ctx = ScoreContext(cfg, services, judges, units=evidence.unit_index(episode))
    evidence.SCORER.score(pending, ctx)
    scoring.answer_all(pending, cfg, services)
    scoring.score_answers(pending, cfg)
    if cfg.eval.judge.enabled:
        judge_loop.SCORER.score(pending, ctx)
        official_judge.SCORER.score(pending, ctx)  # judge.official, if any
        forget_judge.SCORER.score(pending, ctx)  # questions about deleted / corrected facts
    return pending, stats


def summarize_run(
    samples: list[dict], cfg: DictConfig, memory_stats: dict | None = None
) -> dict[str, Any]:
    metrics = list(cfg.eval.metrics) + ["mc_accuracy", "f1_p", "f1_n", "context_tokens"]
    # evidence, judge_lenient, judge2...; closed book's own score is summarised by closed_book
    scored = {m for s in samples for m, sc in s["scores"].items() if sc["kind"] != closed_book.KIND}
    metrics += sorted(scored - set(metrics))
    boot = cfg.eval.bootstrap
    args = (int(boot.resamples), float(boot.confidence), int(cfg.seed))
    main, apart = aggregate.split_apart(samples)  # e.g. LoCoMo category 5: never in the means

    def means(group: list[dict]) -> dict[str, Any]:
        return {
            **aggregate.summarize_all(group, metrics, *args),
            **closed_book.summarize(group, metrics, *args),
        }

    return {
        "counts": aggregate.failure_counts(samples),
        "metrics": {**means(main), **ingestion.summarize_episodes(memory_stats or {}, *args)},
        "breakdowns": aggregate.breakdowns(
            samples, metrics, list(cfg.eval.position_buckets), *args
        ),
        **(
            {"metrics_apart": {k: {"n": len(g), **means(g)} for k, g in apart.items()}}
            if apart
            else {}
        ),
    }


def config_snapshot(resolved: dict[str, Any]) -> dict[str, Any]:
    """The resolved config as the run folder records it (secrets redacted)."""
    return redact(resolved)


def run(
    cfg: DictConfig,
    out_dir: Path,
    overrides: list[str] | None = None,
    make_backend: Any = None,
    pick: Any = None,
    checked: bool = False,
) -> dict[str, Any]:
    """Run one evaluation and write config.yaml, samples.jsonl, metrics.json, memory_stats.json.

    ``overrides`` (the command line's) are recorded so reports can tell runs of a sweep apart. A dry
    run (``eval/run/estimate.py``) passes stand-in backends (``make_backend``) and a pilot (``pick``).
    ``checked``: the command line validated ``cfg`` already (once per run, eval/cli/run_command.py)."""
    started = time.time()
    if not checked:
        validate_config(cfg)  # every setting, before any model or file is loaded
    run_io.begin_run(out_dir)  # INCOMPLETE.json until every file is written
    resolved = config_snapshot(OmegaConf.to_container(cfg, resolve=True))
    run_io.write_text(out_dir, "config.yaml", outputs.config_yaml(resolved))
    dataset = load_dataset(cfg)
    if (problem := getattr(get_class(str(cfg.memory._target_)), "dataset_problem", None)) and (
        line := problem(dataset)
    ):
        raise ConfigError(line)  # before any model is loaded
    if pick is not None:
        dataset = pick(dataset)
    if warning := rebuild_warning.ingest_warning(cfg, dataset):  # BEAM 10M on a rebuilding memory
        log.warning(warning)
    services = build_services(cfg, make_backend=make_backend, run_dir=out_dir)
    progress = Progress(
        services.meter,
        len(dataset.episodes),
        float(cfg.get("progress_interval_s", 10)),
        bar=bool(cfg.get("progress", True)),
    ).start()
    judges = None
    folder = RUN_FOLDER.set(Path(out_dir))  # memories' working files (product stores) go under it
    run_control = cfg.get("run", {})
    with (
        switch_interval(run_control.get("switch_interval_s")),
        cpu_pool(run_control.get("cpu_workers")),
    ):
        try:
            # no judging, no judge backend to load (the closed-book pass then scores by exact match)
            judges = (
                build_judges(cfg, services)
                if cfg.eval.judge.enabled
                else Judges(primary=services.llm)
            )
            snapshots = Snapshots(cfg, services, dataset.name, out_dir)
            pending, memory_stats = episodes.run_episodes(
                dataset.episodes,
                cfg,
                services,
                partial(
                    evaluate_episode,
                    cfg=cfg,
                    services=services,
                    out_dir=out_dir,
                    judges=judges,
                    snapshots=snapshots,
                ),
                progress.episode_done,
            )
            ctx = ScoreContext(cfg, services, judges)  # the run-level scorers
            if cfg.eval.get("closed_book", {}).get("enabled", False):
                progress.set_stage("closed_book")
                closed_book.SCORER.score(pending, ctx)
            if cfg.eval.judge.enabled:
                progress.set_stage("audit")
                judge_audit.SCORER.score(pending, ctx)
            reliability = ctx.sections.get("judge_reliability")
        finally:
            progress.close()
            if judges is not None:
                judges.close()
            services.close()
            RUN_FOLDER.reset(folder)
    samples = [record for _, _, record in pending]
    failures.finalize(samples)
    sections = {
        **(judges.describe() if cfg.eval.judge.enabled else {"judge": None}),
        "judge_reliability": reliability,
        "snapshots": snapshots.summary(),
        "official_judge": official_judge.summary(samples, cfg, judges),
    }
    metrics = outputs.write_outputs(
        out_dir,
        cfg,
        dataset,
        samples,
        memory_stats,
        services,
        time.time() - started,
        summarize=partial(summarize_run, cfg=cfg, memory_stats=memory_stats),
        oracle=is_oracle(cfg),
        overrides=overrides or [],
        sections=sections,
        in_flight=episodes.episodes_in_flight(cfg),
    )
    run_io.end_run(out_dir, metrics)
    return metrics
