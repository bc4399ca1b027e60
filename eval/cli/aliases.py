"""The ``python -m`` paths from before eval/ was split into rooms, kept as aliases for one release.

``python -m memharness.eval.judge_report ...`` still runs, with a one-line note on stderr naming
the new path and the ``memharness`` subcommand. Delete this module (and its two-line install in
``eval/__init__.py``) in the release after 0.2.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

# old module -> (new module, memharness subcommand)
OLD_PATHS = {
    "memharness.eval.cli": ("memharness.eval.cli.hydra_main", "run"),
    "memharness.eval.judge_report": ("memharness.eval.report.judge_report", "judge-report"),
    "memharness.eval.judge_eval": ("memharness.eval.judge.labelled_set", "judge-eval"),
    "memharness.eval.browse": ("memharness.eval.report.browser", "browse"),
    "memharness.eval.paper_report": ("memharness.eval.papers.report", "papers"),
    "memharness.eval.published_check": ("memharness.eval.papers.check", "papers-check"),
    "memharness.eval.golden": ("memharness.eval.papers.golden_regression", "golden"),
    "memharness.eval.cache_merge": ("memharness.eval.cli.cache_merge", "cache-merge"),
    "memharness.eval.estimate": ("memharness.eval.run.estimate", "estimate"),
    "memharness.eval.memtree_figures": (
        "memharness.eval.report.memtree_figures",
        "memtree-figures",
    ),
    "memharness.eval.coupling": ("memharness.eval.report.coupling", "coupling"),
    "memharness.eval.online_batches": ("memharness.eval.report.online_batches", "online-batches"),
}


class OldPathFinder(importlib.abc.MetaPathFinder):
    """Finds an old module name by loading the file of its new module under the old name."""

    def find_spec(self, name, path, target=None):  # noqa: ANN001 (the finder protocol)
        if name not in OLD_PATHS:
            return None
        new, subcommand = OLD_PATHS[name]
        sys.stderr.write(
            f"note: {name} is now {new} (or: memharness {subcommand}); "
            "the old path is an alias until the next release\n"
        )
        return importlib.util.spec_from_file_location(name, importlib.util.find_spec(new).origin)


def install() -> None:
    if not any(isinstance(f, OldPathFinder) for f in sys.meta_path):
        sys.meta_path.append(OldPathFinder())
