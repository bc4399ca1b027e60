"""The ``memharness`` command: compose the config, build, answer, score, write the run folder.

    memharness memory=memtree dataset=multihop          # or, in a checkout: python run.py ...
    memharness -m memory=full_context,memorystream,memtree dataset=sample

The configs ship inside the package (``memharness.conf``), so the command works from any folder;
run folders, the call cache and downloads go under the current folder unless configured.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from memharness.eval.cli.sweeps import already_done, register_resolvers
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("memharness")
register_resolvers()


@hydra.main(version_base="1.3", config_path="pkg://memharness.conf", config_name="config")
def hydra_main(cfg: DictConfig) -> float | None:
    """One run (one job of a multirun): see ``eval.command.run_command``."""
    from memharness.eval.cli.run_command import refuse, run_command
    from memharness.eval.record.folder import lock_folder
    from memharness.memsys.services.types import ConfigError

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    try:
        lock_folder(out_dir)  # a single run took it in the preflight; a sweep job takes it here
    except ConfigError as err:
        return refuse(str(err))
    # an experiment that declares sweeper params is a sweep even when its file forgot sweep_only
    sweeps = bool((hc.sweeper.get("params") or {}) if "sweeper" in hc else {})
    if (cfg.get("sweep_only") or sweeps) and hc.mode != RunMode.MULTIRUN:
        chosen = hc.runtime.choices.get("experiment")
        return refuse(
            f"experiment={chosen} is a sweep; run it with -m (python run.py -m experiment={chosen})"
        )
    if cfg.get("skip_done") and already_done(out_dir, OmegaConf.to_container(cfg, resolve=True)):
        log.info("skip_done: %s already holds a finished run with this config; skipped", out_dir)
        return None
    sweep_dir = Path(hc.sweep.dir) if hc.mode == RunMode.MULTIRUN else None
    return run_command(cfg, out_dir, list(hc.overrides.task), sweep_dir)


def main() -> None:
    """The ``memharness`` command: exit status 0 ok, 2 a user mistake, 3 aborted, 4 too many failures."""
    from memharness.eval.cli import hydra_errors
    from memharness.eval.cli.run_command import exit_status, guard_argv, print_error
    from memharness.eval.record.outcome import EXIT_USER_ERROR

    guard_argv(sys.argv[1:])
    hydra_errors.install(sys.argv[1:], print_error, EXIT_USER_ERROR)
    hydra_main()
    sys.exit(exit_status())


if __name__ == "__main__":
    main()
