"""What the ``memharness`` command does around one run: secrets, errors as one line, exit codes.

The Hydra task function (``eval.cli``) calls ``run_command`` once per run (once per job of a
multirun); ``exit_status`` is the worst exit code of them all (``eval.failures`` lists the codes).
A user's mistake never shows a traceback: it is printed as ``error: <one line>`` on stderr, with
the setting or file to change, and every secret is masked.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from memharness.data_prep.base import DatasetError
from memharness.eval.record import folder as run_io
from memharness.eval.record import outcome
from memharness.memsys.services.secrets import (
    install_log_redaction,
    looks_like_key,
    redact_text,
    register_secret_value,
)
from memharness.memsys.services.types import ConfigError, RunAborted
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("memharness")
_exit_codes: list[int] = []
_checked: set[str] = set()  # the configs the preflight validated (as YAML), each taken by its run


def print_error(message: str) -> None:
    """One ``error:`` line per line of the message, secrets masked."""
    for line in redact_text(str(message)).splitlines() or [""]:
        print(f"error: {line}", file=sys.stderr, flush=True)


def guard_argv(argv: list[str]) -> None:
    """Before Hydra parses anything: a key pasted into an ``*api_key_env=`` override is registered as a
    secret (masked in every log line and file) and every log record is redacted from now on."""
    install_log_redaction()
    for _key, values in key_env_overrides(argv):
        for value in values:
            if value and value.lower() != "null" and looks_like_key(value):
                register_secret_value(value)


def key_env_overrides(overrides: list[str]) -> list[tuple[str, list[str]]]:
    """(key, values) of the ``...api_key_env=...`` overrides (a sweep's values split on commas)."""
    out = []
    for item in overrides:
        key, sep, value = str(item).partition("=")
        if sep and key.lstrip("+~").endswith("api_key_env"):
            out.append((key.lstrip("+~"), [v.strip().strip("'\"") for v in value.split(",")]))
    return out


def note_checked(cfg: DictConfig) -> None:
    """The preflight validated this run's config: ``run_command`` takes its verdict."""
    _checked.add(OmegaConf.to_yaml(cfg))


def config_problems_once(cfg: DictConfig) -> list[str]:
    """The config's problems, validated once per run: by the preflight before Hydra wrote anything
    (a single run), else here (each job of a multirun, or a caller without the preflight)."""
    from memharness.eval.run.validate import config_problems

    seen = OmegaConf.to_yaml(cfg)
    if seen in _checked:
        _checked.discard(seen)
        return []
    try:
        return config_problems(cfg)  # also registers the key variables, so redaction masks them
    except ConfigError as err:
        return str(err).splitlines()


def run_command(
    cfg: DictConfig, out_dir: Path, overrides: list[str], sweep_dir: Path | None = None
) -> float | None:
    """Run one evaluation; print errors as single lines; record the exit code; return judge accuracy."""
    from memharness.eval.run.loggers import log_run
    from memharness.eval.run.runner import run

    install_log_redaction()
    problems = config_problems_once(cfg)
    run_io.redact_files(out_dir / ".hydra")
    if sweep_dir is not None:
        run_io.redact_files(sweep_dir)
    if problems:
        if sweep_dir is not None:  # a sweep point: the summary lists it as refused, with the reason
            try:
                run_io.mark_incomplete(out_dir, f"refused: {problems[0]}", refused=problems)
            except ConfigError:
                pass  # unwritable: the error line below still says why
        return refuse("\n".join(problems))
    if cfg.get("dry_run", False):
        return _dry_run(cfg, out_dir, overrides)
    try:
        metrics = run(cfg, out_dir, overrides=overrides, checked=True)
        log_run(OmegaConf.to_container(cfg, resolve=True), metrics, out_dir)
    except (ConfigError, DatasetError) as err:
        return _fail(outcome.EXIT_USER_ERROR, str(err), out_dir)
    except RunAborted as err:
        return _fail(
            outcome.EXIT_ABORTED,
            f"{err}\nthe run stopped; {out_dir} is marked incomplete",
            out_dir,
        )
    except KeyboardInterrupt:
        _mark(out_dir, "interrupted (Ctrl-C)")
        raise
    except BaseException as err:  # a bug: keep the traceback, but say which folder is incomplete
        _mark(out_dir, f"crashed: {type(err).__name__}: {err}")
        raise
    return _report(cfg, metrics, out_dir)


def _dry_run(cfg: DictConfig, out_dir: Path, overrides: list[str]) -> None:
    """``dry_run=true``: write ``estimate.json`` (no backend call, no run files)."""
    from memharness.eval.run.estimate import dry_run

    try:
        est = dry_run(cfg, out_dir, overrides, checked=True)
    except (ConfigError, DatasetError) as err:
        return _fail(outcome.EXIT_USER_ERROR, str(err), out_dir)
    t = est["total"]
    log.info(
        "dry run (%s): %.0f LLM calls, %.0f prompt + %.0f completion tokens, %.0f embedding requests, "
        "$%.4f estimated -> %s",
        est["label"],
        t["calls"],
        t["prompt_tokens"],
        t["completion_tokens"],
        t["embed_requests"],
        t["cost_usd"],
        out_dir / "estimate.json",
    )
    _exit_codes.append(outcome.EXIT_OK)
    return None


def _report(cfg: DictConfig, metrics: dict[str, Any], out_dir: Path) -> float | None:
    counts, result = metrics["counts"], metrics["outcome"]
    for line in outcome.stage_warnings(metrics):
        log.warning(line)
    judge = metrics["metrics"].get("judge", {}).get("mean")
    log.info(
        "%s on %s: judge=%s scored=%d/%d failed=%d judge_unparsed=%d -> %s",
        cfg.memory.name,
        cfg.dataset.name,
        "n/a" if judge is None else f"{judge:.3f}",
        counts["scored"],
        counts["questions"],
        result["failed"],
        counts["judge_unparsed"],
        out_dir,
    )
    if headline := official_headline(metrics):
        log.info(headline)
    if result["exit_code"]:
        print_error("\n".join(result["problems"]) + f"\nthe run's files are in {out_dir}")
    _exit_codes.append(result["exit_code"])
    return judge


def official_headline(metrics: dict[str, Any]) -> str | None:
    """The benchmark's own aggregate, as its paper reports it (MemoryAgentBench, BEAM, MemBench);
    None else."""
    beam = (metrics.get("official_judge") or {}).get("beam") or {}
    if beam.get("overall") is not None:
        return (
            f"BEAM official score {beam['overall']:.3f} (mean over {len(beam['per_ability'])} "
            f"abilities of {sum(beam['n'].values())} judged questions; event ordering by tau_norm)"
        )
    mab = metrics["metrics"].get("mab_accuracy")
    if mab and mab.get("mean") is not None:
        return (
            f"MemoryAgentBench accuracy (mab_accuracy) {mab['mean']:.3f} over {mab['n']} questions"
        )
    mem = metrics["metrics"].get("membench_accuracy")
    if mem and mem.get("mean") is not None:
        return f"MemBench accuracy (membench_accuracy) {mem['mean']:.3f} over {mem['n']} questions"
    return None


def refuse(message: str) -> None:
    """A mistake found before the run starts (nothing was written): one error line, exit status 2."""
    print_error(message)
    _exit_codes.append(outcome.EXIT_USER_ERROR)
    return None


def _fail(code: int, message: str, out_dir: Path) -> None:
    print_error(message)
    _mark(out_dir, message.splitlines()[0])
    _exit_codes.append(code)
    return None


def _mark(out_dir: Path, reason: str) -> None:
    """Update the INCOMPLETE marker of a run that had started (a folder without one is left alone)."""
    if (out_dir / run_io.MARKER).is_file():
        try:
            run_io.mark_incomplete(out_dir, reason)
        except ConfigError:
            pass  # the folder became unwritable: the marker keeps its earlier reason


def exit_status() -> int:
    """The worst exit code of the runs of this process (0 when all went well)."""
    return max(_exit_codes, default=0)
