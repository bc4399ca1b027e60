"""``docs/run-format.md``: the run record's fields (``eval/record/schema.py``) and the metric keys
(``registry.py``). Regenerate with ``python -m memharness.eval.metrics.run_format > docs/run-format.md``;
a test keeps the two equal."""

from __future__ import annotations

import sys

from memharness.eval.metrics import registry
from memharness.eval.record import schema


def markdown() -> str:
    """The whole page: both records, then every metric key of the registry."""
    out = [schema.markdown().rstrip("\n")]
    out += ["", "## Metric keys (`eval/metrics/registry.py`)", ""]
    out += ["| key | better | kind | report section | meaning |", "|---|---|---|---|---|"]
    for m in registry.METRICS:
        better = {True: "higher", False: "lower", None: "-"}[m.higher_is_better]
        key = f"{m.name}<k>" if m.prefix else m.name
        out.append(f"| `{key}` | {better} | {m.kind} | {m.section} | {m.doc} |")
    out += [
        "",
        f"Any key with `{registry.NEEDS_MEMORY}` appended: the metric over the questions the "
        "model got wrong closed-book (when `eval.closed_book.enabled`).",
    ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
