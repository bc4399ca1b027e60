"""Sweeps as units: one folder per ``-m`` sweep, one sub-folder per setting, a summary when it ends.

- ``hydra.sweep.dir`` is ``results/sweeps/<time>`` and each job's folder is
  ``<memory>-<dataset>/<setting>``, where the setting is the job's own overrides (memory and dataset
  left out), so a re-launched sweep writes the same setting to the same folder.
- ``skip_done=true`` (with ``hydra.sweep.dir`` pointing at the earlier sweep) skips every setting
  whose folder already holds a finished run made with the same resolved config.
- ``SweepSummary`` (a Hydra callback) writes ``summary.md/.csv/.tex/.png`` into the sweep folder
  when the sweep ends.
- Experiment files that only make sense as sweeps set ``sweep_only: true``; running one without
  ``-m`` is refused with a message saying so.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("memharness")
_LEFT_OUT = ("memory", "dataset", "progress", "skip_done")
_NOT_SETTINGS = (
    "progress",
    "skip_done",
    "run",
    "snapshots",
    "budget",
)  # never make a finished run a different one
_MAX = 120


def setting_dirname(override_dirname: str) -> str:
    """A folder name for one setting: its overrides, '/' made safe, long ones shortened with a hash."""
    parts = [
        p
        for p in override_dirname.split(",")
        if p and p.split("=", 1)[0].lstrip("+~") not in _LEFT_OUT
    ]
    name = ",".join(parts).replace("/", "_").replace(" ", "") or "defaults"
    if len(name) > _MAX:
        name = name[: _MAX - 13] + "~" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return name


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("mh_setting"):
        OmegaConf.register_new_resolver("mh_setting", setting_dirname)


def already_done(out_dir: Path, resolved: dict[str, Any]) -> bool:
    """True when ``out_dir`` holds a finished run (metrics.json) whose saved config equals ``resolved``."""
    from memharness.eval.run.runner import config_snapshot

    metrics, saved = out_dir / "metrics.json", out_dir / "config.yaml"
    from memharness.eval.record.folder import MARKER

    if not metrics.is_file() or not saved.is_file() or (out_dir / MARKER).exists():
        return False
    from memharness.eval.record.read import read_metrics
    from memharness.eval.record.schema import RunFormatError

    try:
        read_metrics(out_dir)
    except RunFormatError:
        return False  # written in another run format: run it again

    def setting(c: dict[str, Any]) -> dict[str, Any]:
        return {
            k: v for k, v in c.items() if k not in _NOT_SETTINGS
        }  # display, scheduling, reuse, spending limit

    return setting(OmegaConf.to_container(OmegaConf.load(saved))) == setting(
        config_snapshot(resolved)
    )


class SweepSummary(Callback):
    """Write the sweep's summary table and plot into the sweep folder when a multirun ends."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from memharness.eval.report.comparison import ReportError, build_report

        folder = Path(config.hydra.sweep.dir)
        try:
            written = build_report([folder], folder, "summary", latest_only=False)
        except (
            ReportError,
            OSError,
            ValueError,
        ) as err:  # a failed summary must not fail the sweep
            log.warning("no sweep summary for %s: %s", folder, err)
            return
        log.info("sweep summary: %s", ", ".join(str(p) for p in written.values()))
