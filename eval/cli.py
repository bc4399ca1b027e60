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
from omegaconf import DictConfig, OmegaConf

from memharness.eval.sweeps import already_done, register_resolvers

log = logging.getLogger("memharness")
register_resolvers()


@hydra.main(version_base="1.3", config_path="pkg://memharness.conf", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from memharness.data_prep.base import DatasetError
    from memharness.eval.loggers import log_run
    from memharness.eval.runner import run
    from memharness.memsys.backends.secrets import install_log_redaction
    from memharness.memsys.backends.types import ConfigError

    install_log_redaction()
    hydra_cfg = HydraConfig.get()
    out_dir = Path(hydra_cfg.runtime.output_dir)
    if cfg.get("sweep_only") and hydra_cfg.mode != RunMode.MULTIRUN:
        chosen = hydra_cfg.runtime.choices.get("experiment")
        print(f"error: experiment={chosen} is a sweep; run it with -m (python run.py -m experiment={chosen})",
              file=sys.stderr)
        sys.exit(2)
    if cfg.get("skip_done") and already_done(out_dir, OmegaConf.to_container(cfg, resolve=True)):
        log.info("skip_done: %s already holds a finished run with this config; skipped", out_dir)
        return None
    try:
        metrics = run(cfg, out_dir, overrides=list(HydraConfig.get().overrides.task))
        log_run(OmegaConf.to_container(cfg, resolve=True), metrics, out_dir)
    except (ConfigError, DatasetError) as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    judge = metrics["metrics"].get("judge", {}).get("mean")
    counts = metrics["counts"]
    log.info("%s on %s: judge=%s scored=%d/%d failed=%d judge_unparsed=%d -> %s", cfg.memory.name,
             cfg.dataset.name, "n/a" if judge is None else f"{judge:.3f}", counts["scored"], counts["questions"],
             counts["answer_failed"] + counts["retrieve_failed"] + counts["build_failed"], counts["judge_unparsed"], out_dir)
    return judge


if __name__ == "__main__":
    main()
