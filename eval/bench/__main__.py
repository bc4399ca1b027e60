"""Run every benchmark module in ``eval/bench/`` and write the figures to results/bench/."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

from memharness.eval import bench
from memharness.memsys.services import files as fileio
from memharness.memsys.services.files import json_text


def main(names: list[str]) -> None:
    modules = names or sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_")
    )
    figures = {}
    for name in modules:
        print(f"== bench {name}", flush=True)
        start = time.perf_counter()
        figures[name] = importlib.import_module(f"memharness.eval.bench.{name}").main()
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    out = Path("results/bench")
    out.mkdir(parents=True, exist_ok=True)
    fileio.write_text(out / "figures.json", json_text(figures, indent=1, default=str))
    print(f"figures: {out / 'figures.json'}")


if __name__ == "__main__":
    main(sys.argv[1:])
