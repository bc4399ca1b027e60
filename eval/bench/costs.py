"""``memharness bench costs``: what a full run costs, per system x benchmark (issue 46 item 5).

For each benchmark below, ``dry_run=true`` (eval/run/estimate.py: stand-in backends, the memories'
own algorithms, nothing called) runs every system on a pilot in the benchmark's exact schema, then
the counts are scaled to the benchmark's published size: the build stage by the ratio of history
(tokens when the size is published in tokens, else units), every other stage by the ratio of
questions. Dollars use ``conf/llm/openai.yaml: prices`` for each paper model; hours assume
``--latency-s`` per chat request (embedding requests not counted) with 32 requests in flight.
``--write`` replaces the table in docs/scaling.md between its ``costs:`` markers.

The pilots: LongMemEval-S and LoCoMo are the test fixtures grown to the real history per episode
(``_rehearsal_data``; ``memharness synth`` when it exists), so answer contexts fill the budget as on
the real files; the seed-paper tables run their experiment's sweep on the test fixture, whose
histories are shorter than the real ones, so their answer-stage prompt tokens are a lower bound.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memharness.eval.bench import CONF, REPO
from memharness.eval.bench._rehearsal_data import fixture_locomo, make_data
from memharness.eval.bench._rehearsal_run import run_child
from omegaconf import OmegaConf

MODELS = ("openai:gpt-4o-mini", "openai:gpt-4o")  # CAM's and MemTree's models (the papers' readers)
IN_FLIGHT = 32
# per chat request on a served model: the Mem0 paper's LoCoMo table (shared reference, section 5)
# gives 0.47-0.80 s p50 for one gpt-4o-mini call over a short context; 1 s leaves room for longer ones
LATENCY_S = 1.0
FIXTURES = REPO / "tests" / "fixtures"
START, END = "<!-- costs:start -->", "<!-- costs:end -->"


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's pilot (data maker or experiment on a fixture) and its published size."""

    label: str
    pilot: Callable[[Path], list[str]]  # writes the pilot's data; returns its overrides
    questions: int  # published questions
    history: tuple[str, float]  # ("tokens" | "units", published total)
    source: str
    experiment: str | None = (
        None  # a seed table's experiment (its own memories); None = every system
    )


def _lme(folder: Path) -> list[str]:
    return make_data("auto", folder, questions=2, tokens=115_000, seed=0)["overrides"]


def _locomo(folder: Path) -> list[str]:
    return fixture_locomo(folder, conversations=2, tokens=26_000, seed=0)["overrides"]


def _fixture(*overrides: str) -> Callable[[Path], list[str]]:
    return lambda folder: list(overrides)


BENCHMARKS = {
    "longmemeval_s": Benchmark(
        "LongMemEval-S",
        _lme,
        500,
        ("tokens", 500 * 115_000),
        "500 questions, each its own ~115k-token haystack (docs/datasets.md)",
    ),
    "locomo": Benchmark(
        "LoCoMo",
        _locomo,
        1_986,
        ("tokens", 10 * 26_000),
        "10 conversations, 1,986 QA (shared reference); ~26k tokens each (Mem0 paper's full context)",
    ),
    "memtree_table1": Benchmark(
        "MemTree Table 1 (MSC)",
        _fixture(f"dataset.loader.path={FIXTURES / 'msc' / 'msc_self_instruct.jsonl'}"),
        500,
        ("units", 500 * 13.7),
        "500 sessions, 13.7 rounds each, one question each (MemTree App. A, Table A.1)",
        "memtree_table1",
    ),
    "memtree_table3": Benchmark(
        "MemTree Table 3 (QuALITY)",
        _fixture(f"dataset.loader.path={FIXTURES / 'quality' / 'QuALITY.v1.0.1.htmlstripped.dev'}"),
        2_086,
        ("tokens", 230 * 5_028.4),
        "230 documents of 5,028 tokens (MemTree Table A.1), the dev split's 2,086 questions (QuALITY)",
        "memtree_table3",
    ),
    "memtree_table4": Benchmark(
        "MemTree Table 4 (MultiHop-RAG)",
        _fixture(f"dataset.loader.path={FIXTURES / 'multihop'}"),
        2_556,
        ("tokens", 609 * 2_046.4),
        "609 articles of 2,046 tokens, 2,556 questions (MemTree Sec. 4, Table A.1)",
        "memtree_table4",
    ),
}


def prices() -> dict[str, dict[str, float]]:
    """USD per million tokens by model id, as ``conf/llm/openai.yaml`` configures them."""
    return OmegaConf.to_container(OmegaConf.load(CONF / "llm" / "openai.yaml").prices)


def dollars(prompt: float, completion: float, price: dict[str, float]) -> float:
    return (prompt * price["prompt"] + completion * price["completion"]) / 1e6


def hours(calls: float, latency_s: float = LATENCY_S, in_flight: int = IN_FLIGHT) -> float:
    """Wall hours of ``calls`` requests at ``latency_s`` each, ``in_flight`` at a time."""
    return calls * latency_s / in_flight / 3600


def pilot_size(overrides: list[str]) -> dict[str, int]:
    """Questions, units and unit tokens of the pilot data, loaded as a run loads it."""
    from hydra import compose, initialize_config_dir
    from memharness.eval.run.runner import load_dataset
    from memharness.memsys.services.tokens import get_tokenizer

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        # data_dir and cache.path default to ${hydra:runtime.cwd}, unset outside a Hydra run
        fixed = [f"data_dir={REPO / 'data'}", f"cache.path={REPO / '.cache' / 'calls.sqlite'}"]
        cfg = compose("config", overrides=[*fixed, *overrides])
    dataset = load_dataset(cfg)
    tok = get_tokenizer(cfg.get("tokenizer", "cl100k_base"))
    units = [u for e in dataset.episodes for u in e.units]
    return {
        "questions": sum(len(e.questions) for e in dataset.episodes),
        "units": len(units),
        "tokens": sum(tok.count(u.text) for u in units),
    }


def scale(estimate: dict[str, Any], pilot: dict[str, int], bench: Benchmark) -> dict[str, float]:
    """The estimate's counts at the benchmark's size: build by history, the rest by questions."""
    kind, total = bench.history
    by_history = total / max(1, pilot[kind])
    by_questions = bench.questions / max(1, pilot["questions"])
    out = {"calls": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "embed_requests": 0.0}
    for stage, used in estimate["stages"].items():
        factor = by_history if stage == "build" else by_questions
        for key in out:
            out[key] += used.get(key, 0) * factor
    return out


def runnable_systems() -> list[str]:
    """Every memory system whose dependencies are here (a product needs its venv)."""
    from memharness.eval.bench.rehearsal import memory_systems, why_not_runnable

    return [s for s in memory_systems() if why_not_runnable(s) is None]


def estimate_sweep(
    bench: Benchmark, overrides: list[str], systems: list[str], folder: Path
) -> dict:
    """``dry_run=true`` for every system (or the experiment's own); estimate.json by memory."""
    args = ["run", "-m", *overrides, "llm=openai", "dry_run=true", "progress=false"]
    if bench.experiment:
        args.insert(2, f"experiment={bench.experiment}")
    if systems:
        args.append(f"memory={','.join(systems)}")
    args.append(f"hydra.sweep.dir={folder}")
    child = run_child(args, folder.parent / f"{folder.name}.log")
    found = {}
    for path in sorted(folder.rglob("estimate.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        found[doc["memory"]] = doc
    if not found:
        raise RuntimeError(f"dry runs of {bench.label} wrote no estimate (exit {child.returncode})")
    return found


def rows_for(key: str, systems: list[str], work: Path) -> list[dict[str, Any]]:
    bench = BENCHMARKS[key]
    overrides = bench.pilot(work / key / "data")
    pilot = pilot_size(
        [*([f"experiment={bench.experiment}"] if bench.experiment else []), *overrides]
    )
    if bench.experiment and not systems:
        estimates = estimate_sweep(bench, overrides, [], work / key / "sweep")
    else:  # one child per system: one that fails is a row saying so, not the end of the sweep
        estimates = {}
        for name in systems or runnable_systems():
            try:
                estimates.update(estimate_sweep(bench, overrides, [name], work / key / name))
            except RuntimeError as err:
                print(f"   {bench.label} / {name}: {err}", flush=True)
                estimates[name] = None
    price = prices()
    rows = []
    for memory, est in estimates.items():
        if est is None:
            rows.append({"benchmark": bench.label, "system": memory, "failed": True, "method": ""})
            continue
        full = scale(est, pilot, bench)
        rows.append(
            {
                "benchmark": bench.label,
                "system": memory,
                **full,
                **{
                    f"usd_{m.split(':')[1]}": dollars(
                        full["prompt_tokens"], full["completion_tokens"], price[m]
                    )
                    for m in MODELS
                },
                "hours": hours(full["calls"]),
                "method": (
                    f"dry run on {pilot['questions']} questions / {pilot[bench.history[0]]:,} "
                    f"{bench.history[0]}, scaled to {bench.source}"
                ),
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    head = ["benchmark", "system", "LLM calls", "prompt tokens", "completion tokens"]
    head += [f"$ {m.split(':')[1]}" for m in MODELS] + ["hours @32"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.get("failed"):
            lines.append(f"| {r['benchmark']} | `{r['system']}` | dry run failed (see its log) |")
            continue
        cells = [r["benchmark"], f"`{r['system']}`", _n(r["calls"]), _n(r["prompt_tokens"])]
        cells += [_n(r["completion_tokens"])]
        cells += [f"{r['usd_' + m.split(':')[1]]:,.2f}" for m in MODELS] + [f"{r['hours']:,.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    methods = sorted({(r["benchmark"], r["method"]) for r in rows if r["method"]})
    notes = [f"- {b}: {m}" for b, m in methods]
    return "\n".join(lines) + "\n\nMethod per benchmark:\n" + "\n".join(notes) + "\n"


def _n(value: float) -> str:
    return f"{value:,.0f}"


def write_docs(table: str, path: Path) -> None:
    """Replace what lies between the ``costs:`` markers of ``path`` with ``table``."""
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path} has no {START} ... {END} markers to write the table between")
    path.write_text(pattern.sub(lambda _: f"{START}\n{table}{END}", text), encoding="utf-8")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="memharness bench costs", description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated keys")
    p.add_argument(
        "--systems", default="", help="memory= names (default: all, or the experiment's)"
    )
    p.add_argument("--write", action="store_true", help="write the table into docs/scaling.md")
    p.add_argument(
        "--keep", type=Path, default=None, help="keep the pilots, logs and estimates here"
    )
    args = p.parse_args(argv)
    keys = [k for k in args.benchmarks.split(",") if k]
    unknown = [k for k in keys if k not in BENCHMARKS]
    if unknown:
        raise SystemExit(
            f"no benchmark {', '.join(unknown)}; expected some of: {', '.join(BENCHMARKS)}"
        )
    systems = [s for s in args.systems.split(",") if s]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memharness-costs-") as tmp:
        for key in keys:
            rows += rows_for(key, systems, args.keep or Path(tmp))
            print(
                f"-- {BENCHMARKS[key].label}: {sum(r['benchmark'] == BENCHMARKS[key].label for r in rows)} systems",
                flush=True,
            )
    table = markdown(rows)
    print(table)
    if args.write:
        write_docs(table, REPO / "docs" / "scaling.md")
        print("written: docs/scaling.md")
    return {"rows": rows}
