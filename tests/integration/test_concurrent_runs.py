"""Episodes in flight together against a local OpenAI-compatible stub server (the fault server with
latency): results identical to a sequential run, honest time accounting, kill and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _servers import REPO, fault_server, stats
from memharness.eval.metrics.registry import untimed
from records import untimed_samples

pytestmark = [pytest.mark.slow, pytest.mark.doubles]  # whole run.py subprocesses against a server

SECRET = "sk-memharness-test-0123456789abcdef"


def cmd(url: str, out: Path, cache: Path, *overrides: str, memory: str = "memtree") -> list[str]:
    return [
        sys.executable,
        "run.py",
        "llm=openai",
        f"llm.backend.base_url={url}",
        f"memory={memory}",
        "dataset=sample",
        f"hydra.run.dir={out}",
        f"cache.path={cache}",
        "progress=false",
        "llm.backend.model=stub-model",
        "llm.backend.api_key_env=MEMHARNESS_TEST_KEY",
        "llm.backend.structured=guided_choice",
        "embedder=openai",
        f"embedder.backend.base_url={url}",
        "embedder.backend.model=stub-embed",
        "embedder.backend.api_key_env=MEMHARNESS_TEST_KEY",
        "eval.max_failed_fraction=1",
        *overrides,
    ]


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "MEMHARNESS_TEST_KEY": SECRET}


def run(command: list[str], log: Path) -> dict:
    with open(log, "wb") as f:
        proc = subprocess.run(
            command, cwd=REPO, env=env(), stdout=f, stderr=subprocess.STDOUT, timeout=600
        )
    assert proc.returncode == 0, log.read_text()[-3000:]
    return json.loads((Path(command[6].split("=", 1)[1]) / "metrics.json").read_text())


def test_concurrent_episodes_give_byte_identical_samples_and_equal_metrics(tmp_path):
    with fault_server(tmp_path, latency_ms=40) as url:
        # separate cache folders: neither run finds the other's calls or memory snapshots
        seq = run(
            cmd(url, tmp_path / "seq", tmp_path / "a" / "c.sqlite", "run.episodes_in_flight=1"),
            tmp_path / "s.log",
        )
        con = run(  # run.episodes_in_flight at its default: derived from llm.max_in_flight
            cmd(url, tmp_path / "con", tmp_path / "b" / "c.sqlite", "llm.max_in_flight=16"),
            tmp_path / "c.log",
        )
    assert seq["data"]["episodes"] > 1 and seq["counts"]["scored"] > 0
    assert (seq["time"]["episodes_in_flight"], con["time"]["episodes_in_flight"]) == (1, 16)
    # identical but for the measured latencies (clock readings, not results)
    assert untimed_samples(tmp_path / "seq" / "samples.jsonl") == untimed_samples(
        tmp_path / "con" / "samples.jsonl"
    )
    assert untimed(con["metrics"]) == untimed(seq["metrics"]) and con["counts"] == seq["counts"]
    assert (
        con["snapshots"]["built_saved"]
        == seq["snapshots"]["built_saved"]
        == seq["data"]["episodes"]
    )
    for stage, used in seq[
        "intrinsic"
    ].items():  # the same calls, tokens and texts, whatever the schedule
        timed = ("call_s", "embed_s")  # latencies: measured, not results
        assert {k: v for k, v in con["intrinsic"][stage].items() if k not in timed} == {
            k: v for k, v in used.items() if k not in timed
        }, stage
    for m in (
        seq,
        con,
    ):  # honest time: no-call-in-flight time + busy time never exceed the wall time
        t = m["time"]
        assert (
            0 < t["backend_busy_s"] <= t["total_s"]
            and t["harness_s"] <= t["total_s"] - t["backend_busy_s"] + 1e-6
        )
        assert t["concurrency"] > 0 and t["peak_in_flight"] >= 1
    # sequential MemTree embeds and aggregates one request at a time; concurrent episodes overlap them
    assert con["time"]["concurrency"] > seq["time"]["concurrency"]
    stats_seq = json.loads((tmp_path / "seq" / "memory_stats.json").read_text())
    stats_con = json.loads((tmp_path / "con" / "memory_stats.json").read_text())
    for (
        episode,
        s,
    ) in stats_seq.items():  # each episode's own ledger, unmixed by the others in flight
        assert (
            stats_con[episode]["calls"]["build"]["intrinsic"]["calls"]
            == s["calls"]["build"]["intrinsic"]["calls"]
        )
        assert [b["llm_requests"] for b in stats_con[episode]["insert_batches"]] == [
            b["llm_requests"] for b in s["insert_batches"]
        ]


def _cached_chats(cache: Path) -> int:
    import sqlite3

    with sqlite3.connect(cache) as conn:
        return conn.execute("SELECT COUNT(*) FROM chat").fetchone()[0]


def test_killed_concurrent_run_resumes_without_repeating_a_completed_call(tmp_path):
    opts = ("run.episodes_in_flight=4", "llm.max_in_flight=4", "snapshots.enabled=false")
    with fault_server(tmp_path, latency_ms=150) as url:
        reference = run(
            cmd(url, tmp_path / "ref", tmp_path / "ref.sqlite", *opts), tmp_path / "ref.log"
        )
        total = stats(url)["chat_requests"]
    with fault_server(tmp_path, latency_ms=150) as url:
        command = cmd(url, tmp_path / "resumed", tmp_path / "c.sqlite", *opts)
        with open(tmp_path / "killed.log", "wb") as log:
            proc = subprocess.Popen(
                command,
                cwd=REPO,
                env=env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 240
            while stats(url)["chat_requests"] < 10:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    "run ended before it could be killed"
                )
                time.sleep(0.05)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        time.sleep(0.5)  # requests in flight at the kill reach the server's counters
        before = stats(url)["chat_requests"]
        cached = _cached_chats(tmp_path / "c.sqlite")
        assert 0 < cached and before < total
        resumed = run(command, tmp_path / "resumed.log")
        asked_again = stats(url)["chat_requests"] - before
    # every call the killed run completed came from the cache; only the rest was asked
    assert asked_again == total - cached
    assert resumed["calls"]["total"]["cache_hits"] == cached
    assert resumed["counts"] == reference["counts"]
    assert untimed(resumed["metrics"]) == untimed(reference["metrics"])
