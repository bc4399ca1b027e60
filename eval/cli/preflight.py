"""A Hydra callback that checks a run before Hydra creates its folder or writes ``.hydra/``.

Configured in ``conf/config.yaml`` (``hydra.callbacks.preflight``). Before a single run it checks
every setting (``eval.validate``; the run's one validation: ``run_command`` takes its verdict) and
that the run folder can be created and written; before a multirun, that the sweep folder can be
written (each job's settings are checked by ``run_command``). A key pasted where a variable *name*
is expected (``*.api_key_env=<the key>``) stops the command here, so it never reaches Hydra's own
files. Any problem is printed as ``error: <one line>`` and the command exits with status 2.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from memharness.eval.cli.run_command import key_env_overrides, note_checked, print_error
from memharness.eval.record import folder as run_io
from memharness.eval.record import outcome
from memharness.memsys.services.secrets import (
    install_log_redaction,
    looks_like_key,
    register_secret_value,
)
from memharness.memsys.services.types import ConfigError
from omegaconf import DictConfig, OmegaConf, open_dict, read_write


class Preflight(Callback):
    """Checks settings and output folders before anything is written or loaded."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from memharness.eval.run.validate import config_problems

        problems = _key_problems(config)
        if not problems:
            HydraConfig.instance().set_config(config)  # so ${hydra:...} interpolations resolve
            task = OmegaConf.create(OmegaConf.to_container(config, resolve=False))
            with read_write(task), open_dict(task):
                del task["hydra"]
            try:
                problems = config_problems(task)  # the run's one validation (run_command takes it)
            except ConfigError as err:
                problems = str(err).splitlines()
            if not problems:
                note_checked(task)
        if not problems:
            problems = writable_problems(str(config.hydra.run.dir), "hydra.run.dir")
        if not problems:
            problems = _lock_problems(str(config.hydra.run.dir), "hydra.run.dir")
        _stop_on(problems)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        problems = _key_problems(config)
        if not problems:
            HydraConfig.instance().set_config(config)
            problems = writable_problems(str(config.hydra.sweep.dir), "hydra.sweep.dir")
        if not problems:
            problems = _lock_problems(str(config.hydra.sweep.dir), "hydra.sweep.dir")
        _stop_on(problems)


def _lock_problems(folder: str, setting: str) -> list[str]:
    """Take the folder for this process before Hydra writes into it; a problem line if another run has it."""
    try:
        run_io.lock_folder(Path(folder), setting)
    except ConfigError as err:
        return [str(err)]
    return []


def _key_problems(config: DictConfig) -> list[str]:
    """Overrides that put something other than a variable name into ``*.api_key_env`` (not echoed)."""
    install_log_redaction()
    problems = []
    for key, values in key_env_overrides(list(config.hydra.overrides.task)):
        bad = [v for v in values if v and v.lower() != "null" and looks_like_key(v)]
        for value in bad:
            register_secret_value(value)
        if bad:
            problems.append(
                f"{key}: expected the NAME of an environment variable that holds the key (such as "
                "OPENAI_API_KEY); the value given is not a variable name and may be the key itself, so "
                "it is not shown. Export the key in a variable and pass that variable's name"
            )
    return problems


def writable_problems(folder: str, setting: str) -> list[str]:
    """Create ``folder`` and write a probe file in it; a problem line naming the setting if that fails."""
    path = Path(folder)
    probe = path / f".write-probe-{uuid.uuid4().hex[:8]}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        blocker = next((p for p in [path, *path.parents] if p.exists() and not p.is_dir()), None)
        reason = f"{blocker} is a file, not a folder" if blocker else (err.strerror or str(err))
        return [
            f"{setting}={folder!r}: cannot create or write the output folder ({reason}); "
            f"choose a writable folder with {setting}=<path>"
        ]
    return []


def _stop_on(problems: list[str]) -> None:
    if problems:
        print_error("\n".join(problems))
        sys.exit(outcome.EXIT_USER_ERROR)
