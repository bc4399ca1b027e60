"""``make rehearse`` / ``memharness bench rehearsal``: every memory system at LongMemEval-S size
(issue 46 item 4), each a run of the real runner in its own child process (call cache off), so the
wall, CPU (user+sys) and peak RSS printed are that system's alone.

Per system: wall against the backend bound (requests x latency / in-flight), harness CPU per unit,
per question and per backend request (target <= 5 ms), peak RSS (target <= 8 GB), disk (run folder,
snapshots, call cache), calls and tokens against ``dry_run=true`` on the same data and settings
(target within 15%). Then growth: build time and peak RSS per unit of one haystack at each of
``--growth-tokens`` (128K, 1M, 10M) for full context, MemoryStream, MemTree, structural memory, CAM
online and mem0, with the log-log exponent fitted (target <= 1.1); a system that rebuilds its memory
globally (``online = False``) prints its dry-run estimate instead of starting.

Backend: ``--llm``/``--embedder`` name the Hydra groups (default the in-process rehearsal backend
of issue 46 item 1 when it exists, else ``scripted``/``hashing``; latency 0), or ``--server``: the
test backend over HTTP on 127.0.0.1 adding ``--latency-ms`` a request, ``--in-flight`` at once
(``memharness test-backend`` when it exists, else the fault server); the bound uses both. Data: ``--data``
(``auto`` = ``memharness synth`` when it exists, else the grown LongMemEval fixture).
A quick look: ``memharness bench rehearsal --questions 2 --tokens 4000 --systems memtree,full_context
--no-growth``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from hydra.utils import get_class
from memharness.eval.bench import CONF, misses, print_figures
from memharness.eval.bench._rehearsal_data import make_data
from memharness.eval.bench._rehearsal_run import (
    GROWTH_TARGET,
    TARGETS,
    Child,
    fit_exponent,
    folder_bytes,
    read_run,
    run_child,
    served_backend,
    startup_usage,
    system_figures,
)
from memharness.memsys.products.venv import venv_problem
from omegaconf import OmegaConf

GROWTH_SYSTEMS = ("full_context", "memorystream", "memtree", "structmem", "cam", "mem0")
GROWTH_TOKENS = (128_000, 1_000_000, 10_000_000)
# CAM "online" in the growth section means the paper's online batch update: without a batch size the
# runner hands the whole haystack over as one insert batch, and CAM's similarity of the new chunks to
# every chunk (eq. 2) is then units x units float64 matrices (21 GB at 10M tokens: killed by the OOM
# killer on a 24 GB machine; memory exponent 2.1 from 128K to 1M); a session's worth at a time keeps
# them batch x units
GROWTH_OVERRIDES = {"cam": ["dataset.insert_batch_size=64"]}
# settings every rehearsal run shares: no judge calibration pass or lenient re-judge (they add judge
# calls that say nothing about the memory), no progress lines
COMMON = ["eval.judge.calibration_max=0", "eval.judge_audit.lenient=false", "progress=false"]


def _groups_exist(llm: str, embedder: str) -> bool:
    return (CONF / "llm" / f"{llm}.yaml").exists() and (
        CONF / "embedder" / f"{embedder}.yaml"
    ).exists()


def default_backend() -> tuple[str, str]:
    """``rehearsal``/``rehearsal`` once issue 46 item 1 has landed, else ``scripted``/``hashing``."""
    return (
        ("rehearsal", "rehearsal")
        if _groups_exist("rehearsal", "rehearsal")
        else ("scripted", "hashing")
    )


def memory_systems() -> list[str]:
    """Every ``conf/memory/*.yaml``, sorted."""
    return sorted(p.stem for p in (CONF / "memory").glob("*.yaml"))


def memory_config(name: str) -> Any:
    """``conf/memory/<name>.yaml`` merged over the files its ``defaults`` list names (same group)."""
    own = OmegaConf.load(CONF / "memory" / f"{name}.yaml")
    bases = [d for d in own.get("defaults", []) if isinstance(d, str) and d != "_self_"]
    own.pop("defaults", None)
    return OmegaConf.merge(*[memory_config(b) for b in bases], own)


def why_not_runnable(name: str) -> str | None:
    """Why ``memory=name`` cannot run here (a product without its venv), or None."""
    cfg = memory_config(name)
    product = cfg.get("product")
    return venv_problem(str(product), cfg.get("python")) if product else None


def rebuilds_globally(name: str) -> bool:
    """Whether the system's class rebuilds from every unit after inserts (``online = False``)."""
    cfg = memory_config(name)
    if cfg.get("construction") is not None:  # CAM: online unless construction=offline
        return cfg.construction != "online"
    return not getattr(get_class(str(cfg._target_)), "online", True)


def run_system(
    name: str,
    data: dict[str, Any],
    backend: list[str],
    work: Path,
    estimate: bool = True,
    startup: Child | None = None,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One system: the real run in a child, then its dry run in another; the figures of both.
    ``extra``: Hydra overrides for this system's runs only."""
    folder = work / name
    cache = folder / "cache" / "calls.sqlite"
    overrides = [f"memory={name}", *data["overrides"], *backend, *COMMON, *extra]
    overrides.append(f"cache.path={cache}")
    run_dir = folder / "run"
    child = run_child(
        ["run", *overrides, "cache.enabled=false", f"hydra.run.dir={run_dir}"], folder / "run.log"
    )
    if not (run_dir / "metrics.json").exists():
        tail = (folder / "run.log").read_text(encoding="utf-8", errors="replace")[-300:]
        return {"error": f"run exited {child.returncode} without metrics.json: ...{tail}"}
    est = None
    if estimate:
        dry_dir = folder / "dry"
        # the run's own embedder (in-process: free; served: called for embeddings only), so the
        # tree and graph shapes the call counts follow are the run's (eval/run/estimate.py)
        dry = [
            *overrides,
            "dry_run=true",
            "estimate.embedder=configured",
            f"hydra.run.dir={dry_dir}",
        ]
        run_child(["run", *dry], folder / "dry.log")
        if (dry_dir / "estimate.json").exists():
            est = json.loads((dry_dir / "estimate.json").read_text(encoding="utf-8"))
    disk = {
        "run": folder_bytes(run_dir),
        "snapshots": folder_bytes(cache.parent / "snapshots"),
        "call_cache": folder_bytes(cache.parent) - folder_bytes(cache.parent / "snapshots"),
    }
    run = read_run(run_dir)
    run["units"] = data.get("units") or run["units"]  # the data maker's count, else the memory's
    figures = system_figures(run, child, est, disk, data.get("latency_s", 0.0), startup)
    figures["failed"] = run["failed"]
    return figures


def print_system(name: str, figures: dict[str, Any]) -> None:
    print(f"-- {name}", flush=True)
    if "error" in figures or "skipped" in figures:
        print(f"  {figures.get('error') or figures['skipped']}")
        return
    shown = {k: ("n/a" if v is None else v) for k, v in figures.items()}
    print_figures(shown, TARGETS, 30)


def growth(
    systems: list[str],
    sizes: list[int],
    args: argparse.Namespace,
    backend: list[str],
    work: Path,
    startup: Child,
) -> dict[str, Any]:
    """Build time and peak RSS above the startup's per unit of one haystack at each size; the fitted
    exponents (of build seconds and of RSS above the startup's, against units)."""
    out: dict[str, Any] = {}
    for name in systems:
        problem = why_not_runnable(name)
        if problem:
            print(f"-- growth {name}: not run ({problem})")
            out[name] = {"skipped": problem}
            continue
        points = []
        pilot = None  # a global rebuilder's dry run at the smallest size, scaled by tokens
        for tokens in sorted(sizes):
            tag = f"{name}-{tokens}"
            data = make_data(args.data, work / "data" / f"g{tokens}", 1, tokens, args.seed)
            data["latency_s"] = args.latency_ms / 1000
            if rebuilds_globally(name):
                pilot = pilot or (
                    tokens,
                    _estimate_only(name, data, backend, work / "growth" / tag),
                )
                est = _scaled_estimate(pilot, tokens)
                print(
                    f"-- growth {name} @ {tokens:,} tokens: rebuilds globally, not started; {est}"
                )
                points.append({"tokens": tokens, "estimate": est})
                continue
            extra = tuple(GROWTH_OVERRIDES.get(name, ()))
            fig = run_system(name, data, backend, work / "growth" / tag, False, startup, extra)
            if "error" in fig:
                print(f"-- growth {name} @ {tokens:,}: {fig['error']}")
                break
            points.append(
                {
                    "tokens": tokens,
                    "units": fig["units"],
                    "build_s": fig["build_s"],
                    "peak_rss_gb": fig["peak_rss_gb"],
                    "rss_above_startup_gb": fig["rss_above_startup_gb"],
                }
            )
            p = points[-1]
            print(
                f"-- growth {name} @ {tokens:,} tokens: {p['units']:,} units, build {p['build_s']:.2f} s "
                f"({1e3 * p['build_s'] / max(1, p['units']):.3f} ms/unit), peak RSS {p['peak_rss_gb']:.3f} GB, "
                f"{1e6 * p['rss_above_startup_gb'] / max(1, p['units']):.1f} KB/unit above the startup's",
                flush=True,
            )
        out[name] = {"points": points, **_exponents(name, points)}
    return out


def _exponents(name: str, points: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [p for p in points if "units" in p]
    if len(measured) < 2:
        return {}
    units = [p["units"] for p in measured]
    figures: dict[str, Any] = {}
    for key, field in (("build_exponent", "build_s"), ("memory_exponent", "rss_above_startup_gb")):
        try:
            figures[key] = fit_exponent(units, [p[field] for p in measured])
        except ValueError:  # a zero at some size (RSS no higher than the startup's): no log
            figures[key] = f"n/a ({field} not above 0 at two sizes)"
    print_figures(
        {f"{name}_{k}": v for k, v in figures.items()},
        {f"{name}_{k}": GROWTH_TARGET for k in figures},
        30,
    )
    return figures


def _scaled_estimate(pilot: tuple[int, dict[str, float] | None], tokens: int) -> str:
    """The pilot's dry-run totals at ``tokens``, scaled by the ratio of tokens (said so)."""
    at, total = pilot
    if total is None:
        return "its dry run failed (see the log)"
    k = tokens / at
    return (
        f"dry run at {at:,} tokens x {k:,.1f}: {total['calls'] * k:,.0f} LLM calls, "
        f"{total['prompt_tokens'] * k:,.0f} prompt tokens"
    )


def _estimate_only(
    name: str, data: dict[str, Any], backend: list[str], folder: Path
) -> dict[str, float] | None:
    overrides = [f"memory={name}", *data["overrides"], *backend, *COMMON]
    run_child(
        ["run", *overrides, "dry_run=true", f"hydra.run.dir={folder}"],
        folder.parent / f"{folder.name}.log",
    )
    path = folder / "estimate.json"
    return json.loads(path.read_text(encoding="utf-8"))["total"] if path.exists() else None


def parse(argv: list[str] | None) -> argparse.Namespace:
    llm, embedder = default_backend()
    p = argparse.ArgumentParser(
        prog="memharness bench rehearsal", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--questions", type=int, default=20, help="LongMemEval-S-shaped questions (default 20)"
    )
    p.add_argument(
        "--tokens", type=int, default=115_000, help="tokens per haystack (default 115,000)"
    )
    p.add_argument("--systems", default="", help="comma-separated memory= names (default: all)")
    p.add_argument("--llm", default=llm, help=f"llm= group (default {llm})")
    p.add_argument("--embedder", default=embedder, help=f"embedder= group (default {embedder})")
    p.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="backend latency per request: the (served or in-process) rehearsal backend waits it; so does the bound",
    )
    p.add_argument(
        "--server",
        action="store_true",
        help="serve the backend over HTTP on 127.0.0.1 with --latency-ms (test-backend, else the fault server)",
    )
    p.add_argument(
        "--in-flight",
        type=int,
        default=32,
        help="llm.max_in_flight, and the backend's capacity (requests served at once)",
    )
    p.add_argument("--data", default="auto", choices=("auto", "synth", "fixture"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--growth-tokens", default=",".join(map(str, GROWTH_TOKENS)))
    p.add_argument("--growth-systems", default=",".join(GROWTH_SYSTEMS))
    p.add_argument("--no-growth", action="store_true", help="skip the growth section")
    p.add_argument(
        "--keep", type=Path, default=None, help="keep the work folder here (default: a temp dir)"
    )
    p.add_argument(
        "--set", action="append", default=[], help="an extra Hydra override for every run"
    )
    args = p.parse_args(argv)
    if args.questions < 1 or args.tokens < 1:
        p.error("--questions and --tokens must be positive")
    return args


def _has_latency(llm: str) -> bool:
    """Whether ``conf/llm/<llm>.yaml``'s backend takes a latency (``base_ms``: the rehearsal's)."""
    path = CONF / "llm" / f"{llm}.yaml"
    return path.exists() and "base_ms" in (OmegaConf.load(path).get("backend") or {})


def backend_overrides(args: argparse.Namespace, url: str | None = None) -> list[str]:
    """The runs' backend: the in-process groups, or (``--server``) the served test backend at
    ``url`` for chat and embeddings, ``--in-flight`` requests at once."""
    if url is None:
        local = [f"llm={args.llm}", f"embedder={args.embedder}"]
        if _has_latency(args.llm):  # the in-process rehearsal backend waits as a server would
            local += [f"llm.backend.base_ms={args.latency_ms:g}"]
            local += [
                f"llm.backend.capacity={args.in_flight}",
                f"llm.max_in_flight={args.in_flight}",
            ]
        return [*local, *args.set]
    served = ["llm=openai", f"llm.backend.base_url={url}", "llm.backend.api_key_env=null"]
    served += ["llm.backend.model=rehearsal", "llm.backend.structured=guided_choice"]
    served += ["llm.backend.check_connection=false", "embedder=openai"]
    served += [f"embedder.backend.base_url={url}", "embedder.backend.api_key_env=null"]
    return [*served, f"llm.max_in_flight={args.in_flight}", *args.set]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    systems = [s for s in args.systems.split(",") if s] or memory_systems()
    unknown = sorted(set(systems) - set(memory_systems()))
    if unknown:
        raise SystemExit(
            f"no memory system {', '.join(unknown)}; expected some of: {', '.join(memory_systems())}"
        )
    with contextlib.ExitStack() as stack:
        work = args.keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="mh-rehearsal-"))
        )
        work.mkdir(parents=True, exist_ok=True)
        url = (
            stack.enter_context(
                served_backend(args.latency_ms, work / "server.log", args.in_flight)
            )
            if args.server
            else None
        )
        backend = backend_overrides(args, url)
        data = make_data(args.data, work / "data" / "main", args.questions, args.tokens, args.seed)
        data["latency_s"] = args.latency_ms / 1000
        print(
            f"rehearsal: {args.questions} questions x ~{args.tokens:,} tokens ({data['maker']} data, "
            f"{data.get('units', '?')} units), {' '.join(backend)}, latency {args.latency_ms} ms",
            flush=True,
        )
        startup = startup_usage(work / "startup", [*backend, *COMMON])
        print(
            f"startup (a one-question run; subtracted from CPU and RSS): {startup.cpu_s:.2f} s CPU, "
            f"{startup.peak_rss_bytes / 1e9:.3f} GB RSS",
            flush=True,
        )
        rows: dict[str, Any] = {}
        for name in systems:
            problem = why_not_runnable(name)
            rows[name] = (
                {"skipped": f"not run: {problem}"}
                if problem
                else run_system(name, data, backend, work, True, startup)
            )
            print_system(name, rows[name])
        print_table(rows)
        figures: dict[str, Any] = {"systems": rows}
        if not args.no_growth:
            sizes = [int(t) for t in args.growth_tokens.split(",") if t]
            grow = [s for s in args.growth_systems.split(",") if s]
            figures["growth"] = growth(grow, sizes, args, backend, work, startup)
    return figures


def print_table(rows: dict[str, Any]) -> None:
    """One line per system: the figures with targets, MISS beside a miss."""
    cols = [("wall s", 8), ("bound s", 8), ("ms/req", 7), ("ms/q", 8), ("RSS GB", 7)]
    cols += [("calls", 7), ("est", 7), ("gap", 6)]
    head = f"{'system':16s} " + " ".join(f"{c:>{w}s}" for c, w in cols)
    print("\n" + head)
    for name, f in rows.items():
        if "error" in f or "skipped" in f:
            print(f"{name:16s} {(f.get('error') or f['skipped'])[:100]}")
            continue
        flags = [k for k, t in TARGETS.items() if f.get(k) is not None and misses(f[k], t)]
        print(
            f"{name:16s} {f['wall_s']:8.1f} {f['backend_bound_s']:8.1f} {_num(f['cpu_ms_per_request'], 7, 2)} "
            f"{_num(f['cpu_ms_per_question'], 8, 0)} {f['peak_rss_gb']:7.2f} {f['calls']:7d} "
            f"{_num(f.get('estimated_calls'), 7, 0)} {_num(f.get('estimate_gap_calls'), 6, 2)}"
            + (f"  MISS {','.join(flags)}" if flags else "")
        )


def _num(value: float | None, width: int, digits: int) -> str:
    return f"{'n/a':>{width}s}" if value is None else f"{value:{width}.{digits}f}"


if __name__ == "__main__":
    main()
