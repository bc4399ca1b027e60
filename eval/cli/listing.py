"""``memharness ls [GROUP]``: what there is to run, read from the installed configs and registries.

    memharness ls               # every group: memory systems, datasets, experiments, ..., metrics
    memharness ls memory        # one config group (a folder of conf/: memory, dataset, judge/official, ...)
    memharness ls metrics       # the metric registry: name, which way is better, kind, what it is

A config group's entries are its YAML files (``memory=<name>``), each with the first sentence of
the file's opening comment; the configs are read from the installed package (``memharness.conf``),
not from the working directory. The metrics come from ``eval/metrics/registry.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.resources import files
from importlib.resources.abc import Traversable

from memharness.eval.metrics.registry import METRICS

# Shown first, in this order; every other group follows alphabetically.
MAIN_GROUPS = ("memory", "dataset", "experiment")
# Parts of experiments, composed by conf/config.yaml's defaults, never chosen on their own.
HIDDEN_GROUPS = ("per_memory", "per_dataset")
METRICS_GROUP = "metrics"
# How a group is chosen on the command line, where it is not ``<group>=<name>``.
OVERRIDES = {
    "judge/official": "judge/official@judge.official=<name>",
    "judge/prompts": "memharness rejudge RUNS --judges <name>,...",
}
DESCRIPTION_CHARS = 100
ABBREVIATIONS = {"al", "sec", "app", "fig", "figs", "e.g", "i.e", "eq", "vs", "cf", "no", "tab"}


def config_groups(root: Traversable | None = None) -> dict[str, Traversable]:
    """Every config group (a folder of conf/ holding YAML files; ``judge/official`` for nested
    ones) -> its folder, the main groups first."""
    root = root or files("memharness.conf")
    found: dict[str, Traversable] = {}

    def walk(folder: Traversable, prefix: str) -> None:
        for child in sorted(folder.iterdir(), key=lambda c: c.name):
            if not child.is_dir() or child.name.startswith(("_", ".")):
                continue
            name = f"{prefix}{child.name}"
            if name in HIDDEN_GROUPS:
                continue
            if any(f.name.endswith(".yaml") for f in child.iterdir() if f.is_file()):
                found[name] = child
            walk(child, f"{name}/")

    walk(root, "")
    order = [g for g in MAIN_GROUPS if g in found] + sorted(set(found) - set(MAIN_GROUPS))
    return {g: found[g] for g in order}


def first_sentence(yaml_text: str) -> str:
    """The first sentence of a YAML file's opening comment (``# @package`` lines skipped): up to
    the first ``.``, ``:`` or ``;`` outside brackets that is not an abbreviation (et al., Sec.)."""
    lines = []
    for line in yaml_text.splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if not text.startswith("@package"):
            lines.append(text)
    text = " ".join(lines)
    depth, end = 0, len(text)
    for i, char in enumerate(text):
        depth += (char in "([") - (char in ")]")
        followed = i + 1 == len(text) or text[i + 1] == " "
        if depth == 0 and char in ".:;" and followed:
            word = text[:i].rsplit(" ", 1)[-1].lower()
            if char != "." or word not in ABBREVIATIONS:
                end = i
                break
    sentence = text[:end]
    if len(sentence) > DESCRIPTION_CHARS:
        sentence = sentence[: DESCRIPTION_CHARS - 1].rstrip() + "…"
    return sentence


def group_entries(folder: Traversable) -> list[tuple[str, str]]:
    """(name, description) of every YAML file in a config group, sorted by name."""
    yamls = [f for f in folder.iterdir() if f.is_file() and f.name.endswith(".yaml")]
    return [
        (f.name.removesuffix(".yaml"), first_sentence(f.read_text(encoding="utf-8")))
        for f in sorted(yamls, key=lambda f: f.name)
    ]


def metric_rows() -> list[tuple[str, str, str, str]]:
    """(name, better, kind, doc) of every registered metric; a prefix metric is ``name<k>``."""
    better = {True: "higher", False: "lower", None: "-"}
    return [
        (f"{m.name}<k>" if m.prefix else m.name, better[m.higher_is_better], m.kind, m.doc)
        for m in METRICS
    ]


def table(rows: Sequence[Sequence[str]], indent: str = "  ") -> str:
    """Rows as left-aligned columns (the last column is not padded)."""
    if not rows:
        return f"{indent}(none)\n"
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    out = []
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)] + [row[-1]]
        out.append((indent + "  ".join(cells)).rstrip())
    return "\n".join(out) + "\n"


def render(group: str, groups: dict[str, Traversable]) -> str:
    """One group's listing, with its heading."""
    if group == METRICS_GROUP:
        return f"metrics (eval.metrics, report columns; better, kind):\n{table(metric_rows())}"
    override = OVERRIDES.get(group, f"{group}=<name>")
    return f"{group} ({override}):\n{table(group_entries(groups[group]))}"


def main(argv: Sequence[str] | None = None) -> int:
    groups = config_groups()
    names = [*groups, METRICS_GROUP]
    parser = argparse.ArgumentParser(
        prog="memharness ls", description="What there is to run: config groups and metrics."
    )
    parser.add_argument("group", nargs="?", help=f"one of: {', '.join(names)} (default: all)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.group is not None and args.group not in names:
        sys.stderr.write(
            f"memharness ls: unknown group {args.group!r} (one of: {', '.join(names)})\n"
        )
        return 2
    chosen = [args.group] if args.group else names
    sys.stdout.write("\n".join(render(g, groups) for g in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
