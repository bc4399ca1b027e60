"""Dataset statistics in the shape of MemTree Table A.1, for every dataset available locally.

    memharness data-stats                       # looks in $MEMHARNESS_DATA or ./data
    memharness data-stats --path quality=/data/QuALITY.v1.0.1.htmlstripped.dev --json

Never downloads: the Hub is switched off for this command. A dataset passed with ``--path`` that
cannot be loaded is an ``error:`` line naming it, and the command exits 2 (after the others).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from memharness.data_prep.base import Dataset, DatasetError
from memharness.memsys.services.tokens import get_tokenizer

CONF = Path(__file__).resolve().parent.parent / "conf" / "dataset"
# name -> (what an episode is, what a unit is, which text the token count is over)
KINDS = {
    # per_question protocol: tokens per episode = the structural-memory paper's "Avg. # Tokens"
    "hotpotqa": ("Questions", "Passages per question", "Tokens per question", "episode"),
    "twowiki": ("Questions", "Passages per question", "Tokens per question", "episode"),
    "musique": ("Questions", "Passages per question", "Tokens per question", "episode"),
    "msc": ("Conversation sessions", "Rounds per session", "Tokens per round", "unit"),
    "msc_e": ("Conversation sessions", "Rounds per session", "Tokens per round", "unit"),
    "quality": ("Documents", "Chunks per document", "Tokens per document", "episode"),
    "multihop": ("Articles", "Chunks per article", "Tokens per article", "source"),
    "novelqa": ("Books", "Chunks per book", "Tokens per book", "episode"),
    "fables": (
        "Books",
        "Chunks per book",
        "Tokens per book",
        "episode",
    ),  # FABLES: mean 121,467 (cl100k)
    "locomo": ("Conversations", "Turns per conversation", "Tokens per conversation", "episode"),
    "longmemeval": (
        "Haystacks (questions)",
        "Turns per haystack",
        "Tokens per haystack",
        "episode",
    ),
    # CAM's long documents: ODSum's pool is one episode, grouped here by story / meeting
    "odsum_story": ("Stories", "Chunks per story", "Tokens per story", "source"),
    "odsum_meeting": ("Meetings", "Chunks per meeting", "Tokens per meeting", "source"),
    "qmsum": ("Meetings", "Units per meeting", "Tokens per meeting", "episode"),
    "narrativeqa": ("Stories", "Chunks per story", "Tokens per story", "episode"),
}


def mean_std(values: list[float]) -> dict[str, float]:
    """Mean and population standard deviation (0 for fewer than two values)."""
    if not values:
        return {"mean": 0.0, "std": 0.0}
    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
    }


def _token_groups(ds: Dataset, by: str) -> tuple[list[int], list[int]]:
    """Token counts per unit, episode or source document, and units per group."""
    tok = get_tokenizer("cl100k_base")
    tokens: dict[str, int] = defaultdict(int)
    units: Counter[str] = Counter()
    for ep in ds.episodes:
        for u in ep.units:
            key = {"unit": u.id, "episode": ep.id, "source": u.source_id}[by]
            tokens[key] += tok.count(u.text)
            units[ep.id if by != "source" else key] += 1
    return list(tokens.values()), list(units.values())


def dataset_stats(ds: Dataset) -> dict[str, Any]:
    """The Table A.1 statistics of one loaded dataset."""
    label_ep, label_units, label_tokens, by = KINDS.get(
        ds.name, ("Episodes", "Units per episode", "Tokens per unit", "unit")
    )
    tokens, units = _token_groups(ds, by)
    categories: dict[str, Counter[str]] = defaultdict(Counter)
    for ep in ds.episodes:
        for q in ep.questions:
            for key, value in q.categories.items():
                categories[key][value] += 1
    groups = len(units) if by == "source" else len(ds.episodes)
    return {
        "dataset": ds.name,
        label_ep: groups,
        label_units: mean_std(units),
        label_tokens: mean_std(tokens),
        "Queries per episode": mean_std([len(e.questions) for e in ds.episodes]),
        "Total queries": ds.num_questions,
        "categories": {k: dict(sorted(v.items())) for k, v in sorted(categories.items())},
    }


def format_stats(stats: dict[str, Any]) -> str:
    lines = [f"== {stats['dataset']}"]
    for key, value in stats.items():
        if key in ("dataset", "categories"):
            continue
        text = (
            f"{value['mean']:.1f} ± {value['std']:.1f}" if isinstance(value, dict) else str(value)
        )
        lines.append(f"  {key:<24} {text}")
    for key, counts in stats["categories"].items():
        for value, n in counts.items():
            lines.append(f"  - {key}={value:<17} {n}")
    return "\n".join(lines)


def load_local(name: str, data_dir: str, path: str | None) -> Dataset:
    """Instantiate the dataset's configured loader with the Hub off."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(CONF / f"{name}.yaml").loader
    cfg.data_dir = data_dir
    cfg.path = path
    before = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        return instantiate(cfg)
    except Exception as err:  # Hydra wraps the loader's own error
        cause = err.__cause__ or err
        if isinstance(cause, DatasetError):
            raise cause from None
        raise
    finally:
        if before is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memharness data-stats", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--data-dir", default=os.environ.get("MEMHARNESS_DATA", str(Path.cwd() / "data"))
    )
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a local file or folder for one dataset (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    malformed = [p for p in args.path if "=" not in p]
    if malformed:
        parser.error(f"--path takes NAME=PATH, got {malformed[0]!r}")
    paths = dict(p.split("=", 1) for p in args.path)
    unknown = set(paths) - set(KINDS)
    if unknown:
        parser.error(f"unknown dataset(s) {sorted(unknown)}; choose from {sorted(KINDS)}")
    report, broken = {}, []
    for name in KINDS:
        try:
            report[name] = dataset_stats(load_local(name, args.data_dir, paths.get(name)))
        except Exception as err:  # noqa: BLE001 - a loader's error is reported, never a traceback
            cause = err if isinstance(err, DatasetError) else err.__cause__ or err
            line = " ".join(str(cause).split()) or type(cause).__name__
            if name in paths:  # a file the user named is broken: the command fails
                broken.append(f"error: --path {name}={paths[name]}: {line}")
            elif not isinstance(cause, DatasetError):
                broken.append(f"error: {name}: {type(cause).__name__}: {line}")
            report[name] = {"dataset": name, "unavailable": line.split(". ")[0]}
    for name, stats in report.items():
        if args.json:
            continue
        print(
            format_stats(stats)
            if "unavailable" not in stats
            else f"== {name}: not available locally ({stats['unavailable']})"
        )
    if args.json:
        print(json.dumps(report, indent=2))
    for line in broken:
        print(line, file=sys.stderr)
    return 2 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
