"""The rehearsal's measurements: one run of the real runner in a child process, its own resource
usage (``os.wait4``: the child's peak RSS and user+sys CPU, not the parent's), the disk it left, and
the arithmetic of the figures (backend bound, per-unit ratios, estimate gap, growth exponent)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memharness.eval.bench import REPO
from memharness.eval.bench._rehearsal_data import CLI, cli_has


@dataclass(frozen=True)
class Child:
    """What one child process used: wall seconds, user+sys CPU seconds, peak RSS bytes, exit code."""

    wall_s: float
    cpu_s: float
    peak_rss_bytes: int
    returncode: int


def run_child(args: list[str], log: Path, code: str = CLI) -> Child:
    """``memharness ARGS`` (or python ``code``) in a child process, output to ``log``; waits with
    ``os.wait4`` so the usage is that child's alone (and of the processes it waited for: a product's
    worker)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with log.open("w", encoding="utf-8") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args], cwd=REPO, stdout=out, stderr=out, env=env
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen from waiting
    return Child(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_bytes=usage.ru_maxrss * 1024,  # Linux reports kilobytes
        returncode=proc.returncode,
    )


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (0 when it does not exist)."""
    if path.is_file():
        return path.stat().st_size
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def backend_bound_s(requests: float, latency_s: float, in_flight: int) -> float:
    """The shortest wall a backend of ``latency_s`` per request and ``in_flight`` slots allows:
    requests x latency / in-flight (issue 28's throughput bound)."""
    if in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, got {in_flight}")
    return requests * latency_s / in_flight


def per(value: float, count: float) -> float | None:
    """``value / count``, or None when there is nothing to divide by (printed as n/a, never 0)."""
    return value / count if count else None


def relative_gap(estimate: float, actual: float) -> float | None:
    """|estimate - actual| / actual; None when the actual count is 0 (no ratio to speak of)."""
    if not actual:
        return None if estimate else 0.0
    return abs(estimate - actual) / actual


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of log y on log x: 1 = linear growth, 2 = quadratic."""
    pairs = [(math.log(x), math.log(y)) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
    if len(pairs) < 2 or len({p[0] for p in pairs}) < 2:
        raise ValueError(f"need two points at different positive sizes, got xs={xs}, ys={ys}")
    mx = sum(p[0] for p in pairs) / len(pairs)
    my = sum(p[1] for p in pairs) / len(pairs)
    sxx = sum((p[0] - mx) ** 2 for p in pairs)
    return sum((p[0] - mx) * (p[1] - my) for p in pairs) / sxx


def read_run(folder: Path) -> dict[str, Any]:
    """The figures a finished run folder holds: calls, requests, tokens, build time, in-flight."""
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    total = metrics["intrinsic"]["total"]
    config = (folder / "config.yaml").read_text(encoding="utf-8")
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(config)
    return {
        "calls": total["calls"],
        "embed_requests": total["embed_requests"],
        "prompt_tokens": total["prompt_tokens"],
        "completion_tokens": total["completion_tokens"],
        "build_s": metrics["time"]["build_s"],
        "in_flight": int(cfg.llm.max_in_flight),
        "questions": metrics["data"]["questions"],
        "units": _stats_units(folder),
        "failed": metrics["outcome"]["failed"],
        "exit_code": metrics["outcome"]["exit_code"],
    }


def startup_usage(work: Path, backend: list[str]) -> Child:
    """The fixed cost every run pays (imports, Hydra, the tokenizer, loading, writing the folder):
    a whole run of ``memory=full_context`` on one question over a ~200-token haystack with the same
    backend, subtracted from each run's CPU and RSS to leave the harness's work on the data."""
    from memharness.eval.bench._rehearsal_data import fixture_longmemeval

    data = fixture_longmemeval(work / "data", questions=1, tokens=200, seed=0)
    args = ["run", "memory=full_context", *data["overrides"], *backend, "cache.enabled=false"]
    args += ["snapshots.enabled=false", "progress=false", f"hydra.run.dir={work / 'run'}"]
    return run_child(args, work / "run.log")


def _stats_units(folder: Path) -> int:
    """Units inserted, from ``memory_stats.json`` where the memory records them (else 0)."""
    path = folder / "memory_stats.json"
    if not path.exists():
        return 0
    stats = json.loads(path.read_text(encoding="utf-8"))
    return sum(s.get("units", 0) for s in stats.values() if isinstance(s.get("units"), int))


def system_figures(
    run: dict[str, Any],
    child: Child,
    estimate: dict[str, Any] | None,
    disk: dict[str, int],
    latency_s: float,
    startup: Child | None = None,
) -> dict[str, Any]:
    """One system's rehearsal figures from its run, its child's usage, its dry-run estimate;
    ``startup``'s CPU is subtracted from the harness CPU figures (never below 0)."""
    requests = run["calls"] + run["embed_requests"]
    cpu = max(0.0, child.cpu_s - (startup.cpu_s if startup else 0.0))
    bound = backend_bound_s(requests, latency_s, run["in_flight"])
    units = (estimate or {}).get("sizes", {}).get("full", {}).get("units") or run.get("units", 0)
    est_total = (estimate or {}).get("total", {})
    figures: dict[str, Any] = {
        "wall_s": child.wall_s,
        "build_s": run["build_s"],
        "backend_bound_s": bound,
        "bound_over_wall": per(bound, child.wall_s),
        "cpu_s": child.cpu_s,
        "startup_cpu_s": startup.cpu_s if startup else 0.0,
        "cpu_ms_per_unit": _ms(per(cpu, units)),
        "cpu_ms_per_question": _ms(per(cpu, run["questions"])),
        "cpu_ms_per_request": _ms(per(cpu, requests)),
        "peak_rss_gb": child.peak_rss_bytes / 1e9,
        "rss_above_startup_gb": max(
            0, child.peak_rss_bytes - (startup.peak_rss_bytes if startup else 0)
        )
        / 1e9,
        **{f"disk_{k}_mb": v / 1e6 for k, v in disk.items()},
        "calls": run["calls"],
        "embed_requests": run["embed_requests"],
        "prompt_tokens": run["prompt_tokens"],
        "completion_tokens": run["completion_tokens"],
        "units": units,
    }
    if estimate is not None:
        for key in ("calls", "prompt_tokens", "completion_tokens"):
            figures[f"estimated_{key}"] = est_total.get(key, 0)
            figures[f"estimate_gap_{key}"] = relative_gap(est_total.get(key, 0), run[key])
    return figures


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


TARGETS = {
    "cpu_ms_per_request": "<= 5",
    "peak_rss_gb": "<= 8",
    "estimate_gap_calls": "<= 0.15",
}
GROWTH_TARGET = "<= 1.1"


@contextlib.contextmanager
def served_backend(latency_ms: float, log: Path, capacity: int = 32) -> Iterator[str]:
    """An OpenAI-compatible test backend on 127.0.0.1 in its own process, adding ``latency_ms`` a
    request and serving ``capacity`` at once: ``memharness test-backend`` (issue 46 item 1) when it
    exists, else the fault server (no capacity limit). Yields its ``/v1`` URL; stopped on exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    flags = ["--port", str(port), "--latency-ms", str(latency_ms)]
    if cli_has("test-backend"):
        cmd = [sys.executable, "-c", CLI, "test-backend", *flags, "--capacity", str(capacity)]
    else:
        cmd = [sys.executable, "-m", "memharness.memsys.testing.fault_server", *flags]
    url = f"http://127.0.0.1:{port}/v1"
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + 30
            while not _answers(f"{url}/models"):
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(
                        f"the test backend did not start: {' '.join(cmd)} (log {log})"
                    )
                time.sleep(0.1)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False
