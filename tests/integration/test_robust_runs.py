"""The robustness table of issue 15, row by row, through ``run.py`` as a user runs it.

Each row asserts: the exit status (2 a user mistake, 3 aborted, 4 too many failures, 0 ok), the
``error:`` line naming the setting or file, no traceback anywhere (stdout, stderr, run folder),
no key anywhere (stdout, stderr, every file of the run folder including Hydra's .hydra files),
and the row's own counters, checked against the fault server's counts where one is used.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from memharness.eval.record.scores import detail, memory_flag, status, value
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from paths import ROOT

# each row is a whole run.py process (the same checks run in-process elsewhere)
pytestmark = [pytest.mark.slow, pytest.mark.doubles]

FIX = ROOT / "tests" / "fixtures"
SECRET = "memharness-secret-Value-0123456789"  # not key-shaped: only the configured-variable redaction masks it
PASTED_KEY = "Live-4f9XcQ2vLp8RzT6wBn3Kq"  # what a user pastes where a variable name belongs
FAKES = ["llm=fake", "embedder=fake", f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]"]


@dataclass
class Ctx:
    tmp: Path
    run_dir: Path
    url: str = ""
    server: FaultServer | None = None
    env: dict[str, str] = field(default_factory=dict)
    preexec: Callable[[], None] | None = None


@dataclass
class Row:
    name: str
    overrides: Callable[[Ctx], list[str]]
    code: int
    error: tuple[str, ...] = ()  # substrings of the first error: line
    server: dict[str, Any] | None = None
    check: Callable[[Ctx, dict | None], None] | None = None
    fakes: bool = True
    max_error_lines: int = 1


def _samples(ctx: Ctx) -> list[dict]:
    return [json.loads(line) for line in (ctx.run_dir / "samples.jsonl").read_text().splitlines()]


def _metrics(ctx: Ctx) -> dict:
    return json.loads((ctx.run_dir / "metrics.json").read_text())


def _no_run_folder(ctx: Ctx, _: Any) -> None:
    assert not ctx.run_dir.exists()  # refused before Hydra created the folder or wrote .hydra/


def _incomplete_without_outputs(ctx: Ctx, _: Any) -> None:
    assert (ctx.run_dir / "INCOMPLETE.json").is_file() and not (
        ctx.run_dir / "metrics.json"
    ).exists()


def _broken_copy(src: Path, breaker: Callable[[bytes], bytes]) -> Callable[[Ctx], Path]:
    def make(ctx: Ctx) -> Path:
        dst = ctx.tmp / "data" / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(breaker(src.read_bytes()))
        return dst

    return make


def _latin1_in_the_middle(data: bytes) -> bytes:
    cut = data.index(b"\n", len(data) // 2) + 1
    return data[:cut] + b"caf\xe9" + data[cut:]


QUALITY_BAD = _broken_copy(
    FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev", _latin1_in_the_middle
)
MSC_BAD = _broken_copy(FIX / "msc" / "msc_self_instruct.jsonl", _latin1_in_the_middle)
QUALITY_EMPTY = _broken_copy(FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev", lambda d: b"")
SAMPLE_CUT = _broken_copy(ROOT / "data_prep" / "sample_data.json", lambda d: d[: len(d) // 2])


def _file_row(name: str, make: Callable[[Ctx], Path], dataset: str, *error: str) -> Row:
    """A broken dataset file: the error line names it ("{file}") and what is wrong."""

    def overrides(ctx: Ctx) -> list[str]:
        return [f"dataset={dataset}", f"dataset.loader.path={make(ctx)}", "memory=full_context"]

    return Row(name, overrides, 2, ("{file}", *error), check=_incomplete_without_outputs)


def _read_only(ctx: Ctx) -> list[str]:
    ro = ctx.tmp / "results-ro"
    ro.mkdir()
    if os.geteuid() == 0:  # root ignores permissions: refuse writes there the way the kernel would
        hook = ctx.tmp / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(
            "import errno, os\n_mkdir = os.mkdir\nRO = os.environ['MEMHARNESS_TEST_RO']\n"
            "def mkdir(path, *a, **k):\n"
            "    if os.fspath(path).startswith(RO + os.sep):\n"
            "        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))\n"
            "    return _mkdir(path, *a, **k)\nos.mkdir = mkdir\n"
        )
        ctx.env.update(
            MEMHARNESS_TEST_RO=str(ro), PYTHONPATH=f"{hook}{os.pathsep}{ctx.env['PYTHONPATH']}"
        )
    else:
        ro.chmod(0o555)
    ctx.run_dir = ro / "run"
    return ["memory=full_context"]


def _disk_full(ctx: Ctx) -> list[str]:
    ctx.preexec = lambda: resource.setrlimit(
        resource.RLIMIT_FSIZE, (12_000, 12_000)
    )  # writes past 12 kB fail
    return ["memory=full_context", "cache.enabled=false"]


def _disk_full_check(ctx: Ctx, _: Any) -> None:
    names = {p.name for p in ctx.run_dir.iterdir()}
    assert (
        "samples.jsonl" not in names
        and "metrics.json" not in names
        and not any(".tmp" in n for n in names)
    )
    assert "INCOMPLETE.json" in names  # the folder does not look complete
    assert not [p for p in ctx.run_dir.rglob("*") if p.is_file() and p.stat().st_size == 0]


def _not_sqlite(ctx: Ctx) -> list[str]:
    path = ctx.tmp / "calls.sqlite"
    path.write_text("these are notes, not a database\n" * 50)
    ctx.env["MEMHARNESS_CACHE"] = str(path)
    return ["memory=full_context"]


def _cache_under_file(ctx: Ctx) -> list[str]:
    (ctx.tmp / "afile").write_text("x")
    return ["memory=full_context", f"cache.path={ctx.tmp / 'afile' / 'calls.sqlite'}"]


def _cache_is_folder(ctx: Ctx) -> list[str]:
    (ctx.tmp / "cachedir").mkdir()
    return ["memory=full_context", f"cache.path={ctx.tmp / 'cachedir'}"]


def _server(ctx: Ctx, *extra: str) -> list[str]:
    url = ctx.url
    return [
        "llm=openai",
        f"llm.backend.base_url={url}",
        "llm.backend.model=fault-model",
        "llm.backend.api_key_env=MEMHARNESS_TEST_KEY",
        "llm.backend.structured=guided_choice",
        "llm.backend.timeout_s=2",
        "llm.retry.base_delay_s=0.01",
        "embedder=openai",
        f"embedder.backend.base_url={url}",
        "embedder.backend.model=fault-embed",
        "embedder.backend.api_key_env=MEMHARNESS_TEST_KEY",
        "embedder.backend.base_delay_s=0.01",
        "eval.judge.calibration_max=0",
        "eval.judge_audit.lenient=false",  # no audit calls to count
        f"cache.path={ctx.tmp / 'calls.sqlite'}",
        *extra,
    ]


def _all_failed(ctx: Ctx, stats: dict) -> None:
    m, samples = _metrics(ctx), _samples(ctx)
    assert m["counts"]["answer_failed"] == m["counts"]["questions"] == len(samples) > 0
    assert m["outcome"]["exit_code"] == 4 and not (ctx.run_dir / "INCOMPLETE.json").exists()
    assert all(
        "/v1/chat/completions" in s["error"] for s in samples
    )  # the endpoint, not just .../v1
    assert m["calls"]["total"]["failures"] == stats["injected"]["500"]


def _echo_masked(ctx: Ctx, stats: dict) -> None:
    errors = [s["error"] for s in _samples(ctx) if s.get("error")]
    assert errors and all(
        "Bearer ***" in e for e in errors
    )  # the server did echo it; it was masked


def _embed_retried(ctx: Ctx, stats: dict) -> None:
    total = _metrics(ctx)["calls"]["total"]
    assert stats["injected_embed"] > 0
    assert total["embed_retries"] == stats["injected_embed"] and total["embed_failures"] == 0
    assert total["embed_calls"] == stats["embed_ok"]


def _embed_failed(ctx: Ctx, stats: dict) -> None:
    m, samples = _metrics(ctx), _samples(ctx)
    total = m["calls"]["total"]
    assert (
        total["embed_failures"] > 0 and total["embed_retries"] == total["embed_failures"]
    )  # 1 retry each
    assert total["embed_retries"] + total["embed_failures"] == stats["injected_embed"]
    failed = [s for s in samples if s["status"] in ("build_failed", "retrieve_failed")]
    assert failed and all("/v1/embeddings" in s["error"] for s in failed)


def _degraded(ctx: Ctx, stats: dict) -> None:
    m, samples = _metrics(ctx), _samples(ctx)
    mem = json.loads((ctx.run_dir / "memory_stats.json").read_text())
    c = m["counts"]
    aggregation_failed = sum(ep["degradation"].get("aggregation_failed", 0) for ep in mem.values())
    # with no retries each injected fault fails exactly one call: an aggregation, an answer or a verdict
    assert (
        aggregation_failed > 0
        and aggregation_failed + c["answer_failed"] + c["judge_failed"] == stats["injected_total"]
    )
    by_episode = {ep: bool(v["degradation"]) for ep, v in mem.items()}
    assert all(
        bool(memory_flag(s, "degraded")) == by_episode[s["episode_id"]] for s in samples
    )  # asked after every insert
    assert c["degraded"] == sum(bool(memory_flag(s, "degraded")) for s in samples) > 0


def _empty(ctx: Ctx, stats: dict) -> None:
    m, samples = _metrics(ctx), _samples(ctx)
    empty = [s for s in samples if s.get("answer_empty")]
    assert empty and m["counts"]["answer_empty"] == len(empty)
    assert all(
        s["prediction"] == ""
        and status(s, "judge") == "answer_empty"
        and value(s, "judge") == 0.0
        and value(s, "f1") == 0.0
        and value(s, "exact_match") == 0.0
        for s in empty
    )
    judged = [s for s in samples if s["status"] == "scored" and not s.get("answer_empty")]
    assert m["calls"]["judge"]["calls"] + m["calls"]["judge"]["failures"] == len(
        judged
    )  # empties never judged
    empty_verdicts = sum(detail(s, "judge", "reply") == "" for s in judged)
    assert stats["empty_answers"] == len(empty) + empty_verdicts


def _deadline(ctx: Ctx, stats: dict) -> None:
    m = _metrics(ctx)
    marker = json.loads((ctx.run_dir / "INCOMPLETE.json").read_text())
    assert "eval.deadline_s=4" in marker["reason"]
    assert m["counts"]["deadline_exceeded"] == m["counts"]["questions"] > 0
    assert m["outcome"]["exit_code"] == 3 and m["calls"]["total"]["deadline_skipped"] > 0


ROWS = [
    Row(
        "memtree top_k=-1",
        lambda c: ["memory.top_k=-1"],
        2,
        ("memory.top_k=-1", "an integer >= 1"),
        check=_no_run_folder,
    ),
    Row("top_k=0", lambda c: ["dataset.top_k=0"], 2, ("dataset.top_k=0",), check=_no_run_folder),
    Row(
        "budget_tokens=-5",
        lambda c: ["dataset.budget_tokens=-5"],
        2,
        ("dataset.budget_tokens=-5",),
        check=_no_run_folder,
    ),
    Row(
        "memorystream top_k=-1",
        lambda c: ["memory=memorystream", "memory.top_k=-1"],
        2,
        ("memory.top_k=-1",),
        check=_no_run_folder,
    ),
    Row(
        "base_threshold=5",
        lambda c: ["memory.base_threshold=5"],
        2,
        ("memory.base_threshold=5", "[0, 1)"),
    ),
    Row(
        "limit=abc",
        lambda c: ["dataset.limit=abc"],
        2,
        ("dataset.limit='abc'", "null or an integer >= 1"),
    ),
    Row(
        "base_threshold=abc",
        lambda c: ["memory.base_threshold=abc"],
        2,
        ("memory.base_threshold='abc'",),
    ),
    _file_row("quality non-UTF-8", QUALITY_BAD, "quality", "not valid UTF-8"),
    _file_row("msc non-UTF-8", MSC_BAD, "msc", "not valid UTF-8"),
    _file_row("quality empty", QUALITY_EMPTY, "quality", "empty"),
    _file_row("sample truncated", SAMPLE_CUT, "sample", "not valid JSON", "truncated"),
    Row(
        "results folder read-only",
        _read_only,
        2,
        ("hydra.run.dir", "Permission denied"),
        check=_no_run_folder,
    ),
    Row(
        "disk full",
        _disk_full,
        2,
        ("cannot write", "samples.jsonl", "hydra.run.dir"),
        check=_disk_full_check,
    ),
    Row(
        "cache under a regular file",
        _cache_under_file,
        2,
        ("cache.path=", "is a file, not a folder"),
        check=_incomplete_without_outputs,
    ),
    Row(
        "cache is a folder",
        _cache_is_folder,
        2,
        ("cache.path=", "is a folder"),
        check=_incomplete_without_outputs,
    ),
    Row(
        "cache not SQLite (MEMHARNESS_CACHE)",
        _not_sqlite,
        2,
        ("$MEMHARNESS_CACHE", "not a database"),
    ),
    Row(
        "api_key_env=<the key>",
        lambda c: ["llm=openai", f"llm.backend.api_key_env={PASTED_KEY}"],
        2,
        ("llm.backend.api_key_env", "NAME of an environment variable"),
        check=_no_run_folder,
    ),
    Row(
        "401 to every POST",
        lambda c: _server(c, "memory=full_context"),
        3,
        ("401", "/v1/chat/completions", "llm.backend.api_key_env"),
        server=dict(reject_posts=401, echo_auth=True),
        check=_incomplete_without_outputs,
        max_error_lines=2,
    ),
    Row(
        "every question failed",
        lambda c: _server(c, "memory=full_context", "llm.retry.max_retries=0"),
        4,
        ("no question was scored",),
        server=dict(rate_500=1.0),
        check=_all_failed,
        max_error_lines=2,
    ),
    Row(
        "server echoes the key",
        lambda c: _server(
            c, "memory=full_context", "llm.retry.max_retries=0", "eval.max_failed_fraction=1"
        ),
        0,
        server=dict(rate_500=0.4, echo_auth=True, seed=3),
        check=_echo_masked,
    ),
    Row(
        "embedding faults retried",
        lambda c: _server(c, "memory=memorystream"),
        0,
        server=dict(embed_rate_500=0.5, embed_transient=1, seed=2),
        check=_embed_retried,
    ),
    Row(
        "embedding faults fail",
        lambda c: _server(
            c, "memory=memorystream", "embedder.backend.max_retries=1", "eval.max_failed_fraction=1"
        ),
        0,
        server=dict(embed_rate_500=0.3, seed=5),
        check=_embed_failed,
    ),
    Row(
        "memtree aggregations fail",
        lambda c: _server(
            c,
            "memory=memtree",
            "memory.base_threshold=0.0",
            "llm.retry.max_retries=0",
            "eval.max_failed_fraction=1",
        ),
        0,
        server=dict(rate_500=0.25, seed=7),
        check=_degraded,
    ),
    Row(
        "empty answers",
        lambda c: _server(c, "memory=full_context", "eval.max_failed_fraction=1"),
        0,
        server=dict(empty_rate=0.5, seed=1),
        check=_empty,
    ),
    Row(
        "server never answers, deadline",
        lambda c: _server(c, "llm.backend.timeout_s=120", "eval.deadline_s=4"),
        3,
        ("eval.deadline_s=4",),
        server=dict(rate_hang=1.0, hang_s=600),
        check=_deadline,
        max_error_lines=3,
    ),
]
ROWS = [pytest.param(r, id=r.name) for r in ROWS]


def _texts(folder: Path) -> list[tuple[Path, str]]:
    return (
        [(p, p.read_text(errors="ignore")) for p in folder.rglob("*") if p.is_file()]
        if folder.exists()
        else []
    )


@pytest.mark.parametrize("row", ROWS)
def test_issue_table_row(row: Row, tmp_path: Path):
    ctx = Ctx(
        tmp=tmp_path,
        run_dir=tmp_path / "run",
        env={
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "MEMHARNESS_TEST_KEY": SECRET,
            "PYTHONPATH": str(ROOT / "tests"),
            "MEMHARNESS_DATA": str(tmp_path / "data"),
        },
    )
    ctx.env.pop("MEMHARNESS_CACHE", None)
    server = FaultServer(FaultConfig(**row.server)).start() if row.server else None
    try:
        ctx.url = server.url if server else ""
        overrides = row.overrides(ctx)
        base = [] if row.server or not row.fakes else FAKES
        if not any(o.startswith("cache.") for o in overrides) and "MEMHARNESS_CACHE" not in ctx.env:
            base = [*base, f"cache.path={tmp_path / 'calls.sqlite'}"]
        cmd = [
            sys.executable,
            "run.py",
            f"hydra.run.dir={ctx.run_dir}",
            "progress=false",
            *base,
            *overrides,
        ]
        started = time.monotonic()
        proc = subprocess.run(
            cmd,
            cwd=ROOT,
            env=ctx.env,
            capture_output=True,
            text=True,
            timeout=600,
            preexec_fn=ctx.preexec,
        )
        elapsed = time.monotonic() - started
        stats = server.stats() if server else None
    finally:
        if server:
            server.stop()
    output = proc.stdout + proc.stderr
    assert proc.returncode == row.code, output[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    if row.code:
        assert errors, output[-3000:]
        expected = [
            e.replace("{file}", str(next(iter(_data_files(tmp_path)), ""))) for e in row.error
        ]
        assert all(e in errors[0] for e in expected), errors
        assert len(errors) <= row.max_error_lines, errors
    assert "Traceback" not in output
    for path, text in [(Path("<output>"), output), *_texts(ctx.run_dir)]:
        assert SECRET not in text and PASTED_KEY not in text, path
        assert "Traceback" not in text, path
    if row.check:
        row.check(ctx, stats)
    if row.name == "server never answers, deadline":
        assert (
            elapsed < 90
        )  # default timeout 120 s x 7 attempts would take 14 min without the deadline


def _data_files(tmp_path: Path) -> list[Path]:
    return (
        sorted(p for p in (tmp_path / "data").glob("*") if p.is_file())
        if (tmp_path / "data").exists()
        else []
    )


def test_report_lists_incomplete_runs(tmp_path: Path):
    """eval.report tabulates complete runs and lists the incomplete ones with their reason."""
    done = tmp_path / "runs" / "full_context-sample" / "2026-01-01_00-00-00"
    cut = tmp_path / "runs" / "full_context-sample" / "2026-01-02_00-00-00"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "tests")}
    for folder, extra in ((done, []), (cut, ["eval.deadline_s=0.001"])):
        proc = subprocess.run(
            [
                sys.executable,
                "run.py",
                f"hydra.run.dir={folder}",
                "progress=false",
                *FAKES,
                "memory=full_context",
                "dataset.limit=2",
                f"cache.path={folder.parent / folder.name}.sqlite",
                *extra,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == (3 if extra else 0), proc.stderr[-2000:]
    assert (cut / "INCOMPLETE.json").is_file() and (cut / "metrics.json").is_file()
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "memharness.eval.report.comparison",
            str(tmp_path / "runs"),
            "--out",
            str(tmp_path / "tables"),
            "--name",
            "t",
            "--all",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert report.returncode == 0, report.stderr
    assert f"incomplete (not tabulated): {cut}: deadline eval.deadline_s=0.001" in report.stdout
    md = (tmp_path / "tables" / "t.md").read_text()
    scores = md.split("## Scores")[1].split("\n## ")[0]
    assert scores.count("| full_context |") == 1 and f"`{cut}`" in md
