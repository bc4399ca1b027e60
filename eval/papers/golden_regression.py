"""Golden-number regression: paper tables regenerated offline from a committed call cache.

``eval/papers/golden/calls.sqlite`` holds every reply of the embedded models (SmolLM2-135M Q4_1 through
llama.cpp, all-MiniLM-L6-v2) that ``experiment=memtree_table4`` needs for MemTree and MemoryStream
on the MultiHop-RAG fixture (``tests/fixtures/multihop``: one episode, three questions). The check
replays both runs with ``llm=replay embedder=replay`` (no model is loaded; a request the cache does
not hold fails and is counted), builds MemTree Tables 4, 5 and A.2 with ``eval.paper_report``, and
compares every cell (reproduced value, CI, n, status, flags) and each run's scores with
``eval/papers/golden/expected.json``. Any change that moves a number, a prompt (new cache keys: misses) or
a flag fails the check, so it is seen in review.

    memharness golden              # check (make golden); exit 1 on any difference
    memharness golden --update     # replay and rewrite expected.json: review its diff
    memharness golden --record
        # re-record calls.sqlite with the real embedded models,
                                                  # then rewrite expected.json (minutes; after a prompt change)

Cache keys are sha256 hashes of the model id and the full request (messages, max_tokens,
temperature, seed, stop, choices, json_output) or of the model id and the text (embeddings), so a
replay hits exactly when the harness sends the same requests as the recording; llama.cpp decodes
greedily with a fixed seed, so re-recording on the same package versions gives the same replies.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from memharness.eval.metrics import registry
from memharness.eval.papers.names import conf_dir
from memharness.eval.papers.report import build_report
from memharness.eval.record.read import read_metrics

GOLDEN = Path(__file__).resolve().parent / "golden"
CACHE, EXPECTED = GOLDEN / "calls.sqlite", GOLDEN / "expected.json"
FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "multihop"
EXPERIMENT, MEMORIES = "memtree_table4", ("memtree", "memorystream")
# Shrinks the recording to minutes on a shared 2-core machine (each is flagged in the report, and the
# flags are part of what is compared): one chunk per article, prompts cut to 1,024 tokens (the model
# id says ctx1024), short aggregations, a 512-token context, 2 of the fixture's 3 questions.
SMALL = (
    "dataset.loader.chunk_size=2048",
    "llm.backend.n_ctx=1024",
    "dataset.budget_tokens=512",
    "dataset.limit=2",
)
PER_MEMORY = {"memtree": ("memory.aggregate_max_tokens=48",)}
MODEL_ID = "llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf:ctx1024"
TABLES = (("memtree_2024", "4"), ("memtree_2024", "5"), ("memtree_2024", "A.2"))
CELL_KEYS = ("status", "reproduced", "ci_low", "ci_high", "n", "flags")
DIGITS = 6  # numbers are compared rounded to this many decimals (float noise, not a tolerance on results)


class GoldenError(Exception):
    """The golden inputs are missing or a replay was not served from the cache."""


def compose_run(memory: str, cache: Path, data_dir: Path, replay: bool):
    """The experiment's config for one memory, on the fixture, with replay or the real embedded models."""
    if not (FIXTURE / "corpus.json").is_file():
        raise GoldenError(
            f"the MultiHop-RAG fixture {FIXTURE} is missing: run the golden check from a checkout"
        )
    # one llama.cpp thread: on a shared machine more threads than free cores slow decoding badly;
    # the thread count is not part of the model id, so it does not change a cache key
    models = (
        ["llm=replay", f"llm.backend.model_id={MODEL_ID}", "embedder=replay"]
        if replay
        else ["llm=local_tiny", "llm.backend.n_threads=1", *SMALL[1:2], "embedder=local"]
    )
    overrides = [
        f"experiment={EXPERIMENT}",
        f"memory={memory}",
        f"dataset.loader.path={FIXTURE}",
        *models,
        SMALL[0],
        *SMALL[2:],
        *PER_MEMORY.get(memory, ()),
        f"cache.path={cache}",
        f"data_dir={data_dir}",
        "progress=false",
        "seed=0",
    ]
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return compose(config_name="config", overrides=overrides)


def run_all(cache: Path, work: Path, replay: bool) -> Path:
    """Run every memory of the golden set into ``work/runs``; returns that folder."""
    from memharness.eval.run.runner import run

    runs = work / "runs"
    for memory in MEMORIES:
        cfg = compose_run(memory, cache, work / "data", replay)
        run(
            cfg,
            runs / f"{memory}-multihop" / "golden",
            overrides=[f"experiment={EXPERIMENT}", f"memory={memory}"],
        )
    return runs


def _round(value: Any) -> Any:
    return round(value, DIGITS) if isinstance(value, float) else value


def served_from_cache(metrics: dict[str, Any]) -> list[str]:
    """Problems if the run made a backend call or counted a failure (a replay miss is one)."""
    total = metrics["calls"]["total"]
    problems = [
        f"{key}={total[key]}"
        for key in ("calls", "failures", "embed_calls", "embed_failures")
        if total.get(key)
    ]
    return (
        [f"{metrics['memory']}: {', '.join(problems)} (expected 0: every reply from the cache)"]
        if problems
        else []
    )


def _timed(metric: str) -> bool:
    """Latency and ingestion metrics: measured seconds and ledger sums, not scores the papers
    report (the ledger's counts are pinned under ``intrinsic``)."""
    entry = registry.lookup(metric)
    return entry is not None and entry.section in ("latency", "ingestion")


def observe(runs: Path, work: Path) -> dict[str, Any]:
    """The numbers the golden file pins: each run's scores and every cell of the selected tables."""
    observed: dict[str, Any] = {"runs": {}, "cells": {}}
    for folder in sorted(runs.glob("*/golden")):
        metrics = read_metrics(folder)
        intrinsic = metrics["intrinsic"]["total"]
        observed["runs"][metrics["memory"]] = {
            "counts": metrics["counts"],
            "metrics": {
                k: {f: _round(v.get(f)) for f in ("mean", "ci_low", "ci_high", "n")}
                for k, v in sorted(metrics["metrics"].items())
                if isinstance(v, dict) and not _timed(k)
            },
            "intrinsic": {
                k: intrinsic[k]
                for k in ("calls", "prompt_tokens", "completion_tokens", "embed_texts")
            },
            "not_from_cache": served_from_cache(metrics),
        }
    for paper, table in TABLES:
        written = build_report(
            [runs], work / "report" / table, paper, table, name="golden", plot=False
        )
        for rec in json.loads(Path(written["json"]).read_text()):
            key = f"{rec['paper']}:{rec['table']}:{rec['row']}:{rec['column']}"
            observed["cells"][key] = {k: _round(rec[k]) for k in CELL_KEYS}
    return observed


def differences(expected: dict[str, Any], observed: dict[str, Any]) -> list[str]:
    """Every path whose value differs, is missing or is new, as 'path: expected -> observed'."""
    out: list[str] = []

    def walk(path: str, a: Any, b: Any) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(
                    f"{path}.{key}" if path else key,
                    a.get(key, "<missing>"),
                    b.get(key, "<missing>"),
                )
        elif a != b:
            out.append(f"{path}: {a!r} -> {b!r}")

    walk("", expected, observed)
    return out


def replay(work: Path) -> dict[str, Any]:
    """Replay the golden runs from a copy of the committed cache (the copy takes SQLite's side files)."""
    if not CACHE.is_file():
        raise GoldenError(f"{CACHE} is missing: record it with memharness golden --record")
    cache = work / "calls.sqlite"
    shutil.copyfile(CACHE, cache)
    return observe(run_all(cache, work, replay=True), work)


def record(work: Path) -> None:
    """Run the golden set with the real embedded models into a fresh cache, then store it compacted.
    The recording keeps its own folder: snapshots are saved beside the cache, and a replay that found
    the recording's snapshots would load the built memories instead of building them (no build calls)."""
    fresh = work / "recording" / "record.sqlite"
    fresh.parent.mkdir(parents=True, exist_ok=True)
    run_all(fresh, work / "recording", replay=False)
    conn = sqlite3.connect(fresh)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    CACHE.unlink(missing_ok=True)
    conn.execute("VACUUM INTO ?", (str(CACHE),))
    conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true", help="rewrite expected.json from a replay")
    mode.add_argument(
        "--record",
        action="store_true",
        help="re-record calls.sqlite with the embedded models, then rewrite expected.json",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memharness-golden-") as tmp:
        work = Path(tmp)
        if args.record:
            record(work)
        observed = replay(work)
    misses = [p for r in observed["runs"].values() for p in r["not_from_cache"]]
    if args.update or args.record:
        if misses:
            print(
                "not written: the replay was not served from the cache\n" + "\n".join(misses),
                file=sys.stderr,
            )
            return 1
        EXPECTED.write_text(
            json.dumps(observed, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        )
        print(
            f"wrote {EXPECTED} ({len(observed['cells'])} cells); review its diff before committing"
        )
        return 0
    diffs = differences(json.loads(EXPECTED.read_text()), observed)
    if misses:  # a request the recording never made: a prompt or a request parameter changed
        print(
            "golden regression: replies missing from the cache (re-record with --record):\n  "
            + "\n  ".join(misses),
            file=sys.stderr,
        )
    if diffs or misses:
        print(
            f"golden regression: {len(diffs)} number(s) changed against {EXPECTED}:",
            file=sys.stderr,
        )
        print("\n".join(f"  {d}" for d in diffs), file=sys.stderr)
        print(
            "if the change is intended: memharness golden --update "
            "(or --record after a "
            "prompt change) and commit the new expected.json",
            file=sys.stderr,
        )
        return 1
    print(
        f"golden regression: {len(observed['cells'])} cells and {len(observed['runs'])} runs as expected, "
        "every reply from the cache"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
