"""Run the benchmark modules in ``eval/bench/`` (all, or those named: ``python -m
memharness.eval.bench backends scaling``; ``make bench BENCH="backends scaling"``) and write the
figures to results/bench/figures.json. The on-demand benches (``bench.ON_DEMAND``: rehearsal,
costs) run only when named, and only they take flags: ``memharness bench rehearsal --questions 2``.
Every module runs under the runner's process settings
(``run.switch_interval_s`` of conf/config.yaml), so its figures are those of a run."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

from memharness.eval import bench
from memharness.memsys.services import files as fileio
from memharness.memsys.services.files import json_text
from memharness.memsys.services.pool import switch_interval
from omegaconf import OmegaConf


def main(argv: list[str]) -> None:
    known = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")
    )
    cut = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names, flags = argv[:cut], argv[cut:]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"no benchmark module {', '.join(unknown)}; expected some of: {', '.join(known)}")
    if flags and (len(names) != 1 or names[0] not in bench.ON_DEMAND):
        sys.exit(
            f"flags {' '.join(flags)} are for one on-demand bench: {', '.join(bench.ON_DEMAND)}"
        )
    modules = names or [n for n in known if n not in bench.ON_DEMAND]
    figures = {}
    interval = OmegaConf.load(bench.CONF / "config.yaml").run.get("switch_interval_s")
    print(f"GIL switch interval: {interval} s (run.switch_interval_s)", flush=True)
    with switch_interval(interval):
        for name in modules:
            print(f"== bench {name}", flush=True)
            start = time.perf_counter()
            module = importlib.import_module(f"memharness.eval.bench.{name}")
            figures[name] = module.main(flags) if name in bench.ON_DEMAND else module.main()
            print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    out = Path("results/bench")
    out.mkdir(parents=True, exist_ok=True)
    fileio.write_text(out / "figures.json", json_text(figures, indent=1, default=str))
    print(f"figures: {out / 'figures.json'}")


if __name__ == "__main__":
    main(sys.argv[1:])
