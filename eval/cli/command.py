"""The one ``memharness`` command: ``memharness SUBCOMMAND [ARGS]``.

    memharness run memory=memtree dataset=multihop      # the Hydra entry (= python run.py ...)
    memharness report results/runs --name sample        # tables and plots from run folders
    memharness ls memory                                # what there is: memory, dataset, metrics...
    memharness --help                                   # every subcommand

Each subcommand is a module with ``main(argv)``; its own ``--help`` lists its options. A first
argument that is not a subcommand (``memharness memory=memtree``, ``memharness -m ...``) is a run,
as before the subcommands existed.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# subcommand -> (module with main(argv), what it does)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("memharness.eval.cli.hydra_main", "one run or a -m sweep (Hydra overrides)"),
    "ls": ("memharness.eval.cli.listing", "memory systems, datasets, experiments, metrics"),
    "report": ("memharness.eval.report.comparison", "tables and plots from run folders"),
    "browse": ("memharness.eval.report.browser", "one HTML page to browse runs and answers"),
    "judge-report": (
        "memharness.eval.report.judge_report",
        "how far each run's judge can be trusted",
    ),
    "rescore": ("memharness.eval.cli.rescore", "a run-format-2 folder rebuilt as format 3"),
    "rejudge": (
        "memharness.eval.cli.rejudge",
        "recorded answers re-judged under other prompts / models",
    ),
    "judge-eval": ("memharness.eval.judge.labelled_set", "score a judge on the labelled set"),
    "papers": ("memharness.eval.papers.report", "the seed papers' tables, ours beside theirs"),
    "papers-check": ("memharness.eval.papers.check", "check the published numbers' files"),
    "golden": ("memharness.eval.papers.golden_regression", "golden regression of paper tables"),
    "cache-merge": ("memharness.eval.cli.cache_merge", "merge call caches into one"),
    "estimate": ("memharness.eval.run.estimate", "calls, tokens and cost a run would make"),
    "memtree-figures": ("memharness.eval.report.memtree_figures", "MemTree's figures"),
    "coupling": ("memharness.eval.report.coupling", "build / retrieval coupling figures"),
    "online-batches": ("memharness.eval.report.online_batches", "CAM online-batch figures"),
    "hierarchy": ("memharness.memsys.hierarchy.__main__", "build and view one hierarchy"),
    "data-stats": ("memharness.data_prep.stats", "statistics of a dataset"),
    "msc-e": ("memharness.data_prep.msc_e", "generate MSC-E"),
    "synth": (
        "memharness.data_prep.synth.cli",
        "generated files in the upstream schemas at real sizes (rehearsals)",
    ),
    "models": ("memharness.memsys.services.backends.embedded_models", "assemble the models"),
    "bench": ("memharness.eval.bench.__main__", "speed and memory benchmarks"),
    "test-backend": (
        "memharness.memsys.testing.rehearsal_server",
        "the rehearsal backend over HTTP (127.0.0.1)",
    ),
}


def usage() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, (_, what) in SUBCOMMANDS.items()]
    return (
        "usage: memharness SUBCOMMAND [ARGS]   (SUBCOMMAND --help for its options)\n\n"
        + "\n".join(lines)
        + "\n\nmemharness OVERRIDES... (no subcommand) is `memharness run OVERRIDES...`.\n"
        + "memharness run debug=default   a smoke run in seconds (conf/debug/default.yaml)\n"
        + "memharness ls [GROUP]          memory systems, datasets, experiments, metrics\n"
    )


def dispatch(argv: Sequence[str]) -> int:
    """Run one subcommand; returns its exit status."""
    argv = list(argv)
    if argv and argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0
    name = argv[0] if argv and argv[0] in SUBCOMMANDS else "run"
    rest = argv[1:] if argv and argv[0] == name else argv
    if name == "run":
        from memharness.eval.cli.hydra_main import main as run_main

        sys.argv = ["memharness run", *rest]
        run_main()  # exits with the run's status
        return 0
    module = importlib.import_module(SUBCOMMANDS[name][0])
    result = module.main(rest)
    return result if isinstance(result, int) else 0


def main() -> None:
    sys.exit(dispatch(sys.argv[1:]))


if __name__ == "__main__":
    main()
