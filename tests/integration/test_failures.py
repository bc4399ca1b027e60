"""Failures counted where they happen (in process, with seeded fakes): embedding retries, aborts on
401/403, the run deadline, degraded memories, empty answers, exit codes, the INCOMPLETE marker,
cache and output errors that name their setting, atomic writes."""

from __future__ import annotations

import json
import sqlite3

import pytest
from memharness.data_prep.base import subset
from memharness.data_prep.sample import load as load_sample
from memharness.eval.record import folder as run_io
from memharness.eval.record.scores import detail, memory_flag, status, value
from memharness.eval.run.runner import run
from memharness.memsys.services import files as fileio
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import (
    AuthenticationFailed,
    BackendError,
    CacheUnavailable,
    ChatRequest,
    ConfigError,
    DeadlineExceeded,
)
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat


def FlakyEmbed(fail: int, error: BackendError) -> HashingEmbedder:
    """Fails the first ``fail`` calls with ``error``, then embeds (4 dimensions)."""
    return HashingEmbedder(dim=4, fail_first=fail, failure=error, model_id="flaky-embed")


def Rejecting(status: int) -> ScriptedChat:
    """Every call fails with HTTP ``status``."""
    error = BackendError(f"HTTP {status} from http://x/v1/chat/completions", status=status)
    return ScriptedChat(fail_on="", failure=error, model_id="rejecting")


def test_embedding_retries_and_failures_are_counted_per_stage():
    meter = Meter()
    fast = RetryPolicy(max_retries=2, base_delay_s=0.0)
    ok = Embedder(
        FlakyEmbed(2, BackendError("HTTP 500", retryable=True, status=500)), meter=meter, retry=fast
    )
    with meter.stage("build"):
        assert ok.embed(["a", "b"]).shape == (2, 4)
    assert (meter.stages["build"].embed_retries, meter.stages["build"].embed_failures) == (2, 0)
    assert meter.stages["build"].embed_calls == 1
    bad = Embedder(
        FlakyEmbed(9, BackendError("HTTP 500", retryable=True, status=500)), meter=meter, retry=fast
    )
    with meter.stage("retrieve"), pytest.raises(BackendError):
        bad.embed(["c"])
    assert (meter.stages["retrieve"].embed_retries, meter.stages["retrieve"].embed_failures) == (
        2,
        1,
    )


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_aborts_the_run_past_any_except_exception(status):
    llm = LLM(Rejecting(status), progress=False, retry=RetryPolicy(max_retries=5, base_delay_s=0))
    with pytest.raises(AuthenticationFailed, match=f"HTTP {status}"):
        try:
            llm.complete([ChatRequest.user("a"), ChatRequest.user("b")])
        except Exception:  # what a memory's own error handling would do
            pytest.fail("an authentication failure must not be catchable as an ordinary error")
    assert llm.backend.calls <= 2  # never retried
    embedder = Embedder(
        FlakyEmbed(1, BackendError("HTTP 401", status=401)), retry=RetryPolicy(max_retries=5)
    )
    with pytest.raises(AuthenticationFailed):
        embedder.embed(["x"])


def test_after_the_deadline_no_call_is_made():
    backend = Rejecting(500)
    llm = LLM(backend, progress=False, deadline=Deadline(0.0))
    out = llm.complete([ChatRequest.user("a")])[0]
    assert not out.ok and out.error.startswith(
        "DeadlineExceeded: run deadline eval.deadline_s=0 s reached"
    )
    assert backend.calls == 0 and llm.meter.totals().deadline_skipped == 1
    with pytest.raises(DeadlineExceeded):
        Embedder(FlakyEmbed(0, BackendError("x")), deadline=Deadline(0.0)).embed(["x"])


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_questions_from_a_degraded_memory_are_flagged_and_counted(make_cfg, tmp_path):
    cfg = make_cfg(
        "memory=full_context",
        "memory._target_=fakes.DegradingMemory",
        "+memory.degrade_on=greyhound",
    )
    metrics = run(cfg, tmp_path / "r")
    samples = _samples(tmp_path / "r")
    flagged = [s for s in samples if memory_flag(s, "degraded")]
    assert {s["episode_id"] for s in flagged} == {"dlg-garden"} and all(
        memory_flag(s, "degraded") == {"summary_failed": 1} for s in flagged
    )
    assert metrics["counts"]["degraded"] == len(flagged) == 3 and metrics["counts"][
        "scored"
    ] == len(samples)
    stats = json.loads((tmp_path / "r" / "memory_stats.json").read_text())
    assert (
        stats["dlg-garden"]["degradation"] == {"summary_failed": 1}
        and stats["news"]["degradation"] == {}
    )


def test_empty_answers_are_wrong_counted_and_never_judged(make_cfg, tmp_path):
    asked = (
        subset(load_sample(), 4, 0, "type").episodes[0].questions[0].text
    )  # one of the 4 questions
    cfg = make_cfg("memory=full_context", "dataset.limit=4", "eval.judge.calibration_max=0")
    cfg.llm.backend.script = [[f"Question: {asked}", "   "], ["| Predicted: ", "1"]]
    metrics = run(cfg, tmp_path / "r")
    samples = _samples(tmp_path / "r")
    empty = [s for s in samples if s.get("answer_empty")]
    assert (
        len(empty) == 1
        and empty[0]["prediction"] == ""
        and status(empty[0], "judge") == "answer_empty"
    )
    assert value(empty[0], "judge") == 0.0 and value(empty[0], "f1") == 0.0
    assert value(empty[0], "rouge_l_recall") == 0.0 and detail(empty[0], "judge", "reply") is None
    assert metrics["counts"]["answer_empty"] == 1
    assert metrics["calls"]["judge"]["calls"] == len(samples) - 1  # the empty one was not sent
    assert metrics["metrics"]["judge"]["n"] == len(samples)  # ... and counts as wrong, not dropped


def test_exit_codes_and_the_incomplete_marker(make_cfg, tmp_path):
    judged = 'llm.backend.script=[["You are grading answers","1"]]'  # a judge that gives verdicts
    ok = run(make_cfg("memory=full_context", "dataset.limit=2", judged), tmp_path / "ok")
    assert ok["outcome"]["exit_code"] == 0 and not (tmp_path / "ok" / run_io.MARKER).exists()
    failed = run(
        make_cfg(
            "memory=full_context", "llm.backend.fail_on=Search results", "cache.enabled=false"
        ),
        tmp_path / "failed",
    )
    assert failed["outcome"]["exit_code"] == 4 and failed["outcome"]["problems"][0].startswith(
        "no question was scored"
    )
    assert not (tmp_path / "failed" / run_io.MARKER).exists()  # finished: all its files are written
    late = run(
        make_cfg("memory=full_context", "eval.deadline_s=0.0001", "cache.enabled=false"),
        tmp_path / "late",
    )
    assert (
        late["outcome"]["exit_code"] == 3
        and late["counts"]["deadline_exceeded"] == late["counts"]["questions"]
    )
    assert "eval.deadline_s" in run_io.read_marker(tmp_path / "late")["reason"]
    tolerant = run(
        make_cfg(
            "memory=full_context",
            "llm.backend.fail_on=Which ankle",
            "eval.max_failed_fraction=0.1",
            "cache.enabled=false",
            judged,
        ),
        tmp_path / "one",
    )
    assert (
        tolerant["outcome"]["exit_code"] == 0 and tolerant["outcome"]["failed"] == 1
    )  # 1/14 <= 0.1


def test_cache_path_problems_name_the_setting(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "notes.sqlite").write_text("not a database\n" * 100)
    for path, reason in (
        (tmp_path / "file" / "c.sqlite", "is a file, not a folder"),
        (tmp_path, "is a folder"),
        (tmp_path / "notes.sqlite", "not a database"),
    ):
        with pytest.raises(ConfigError, match="cache.path=") as info:
            CallCache(path)
        assert reason in str(info.value) and "Traceback" not in str(info.value)
    cache = CallCache(tmp_path / "ok.sqlite")
    with sqlite3.connect(tmp_path / "ok.sqlite") as conn:
        conn.execute("DROP TABLE chat")  # the file changed under the run: writes fail from now on
    with pytest.raises(CacheUnavailable, match="cache.path="):
        cache.put_chat("k", "m", {"text": "t"})


def test_atomic_writes_leave_no_partial_file(tmp_path):
    target = tmp_path / "metrics.json"

    def half_then_fail(f):
        f.write('{"counts": ')
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError) as info:
        fileio.atomic_write(target, half_then_fail)
    assert info.value.filename == str(target) and list(tmp_path.iterdir()) == []
    fileio.write_json(target, {"a": 1})
    with pytest.raises(OSError):
        fileio.atomic_write(target, half_then_fail)
    assert json.loads(target.read_text()) == {
        "a": 1
    }  # the old complete file survives a failed rewrite
    err = run_io.output_error(OSError(28, "No space left on device", str(target)), folder=tmp_path)
    assert str(err).startswith(
        f"cannot write {target} (No space left on device); results go to hydra.run.dir="
    )


def test_secrets_are_masked_in_run_files_and_hydra_files(make_cfg, tmp_path, monkeypatch):
    from memharness.memsys.services.secrets import register_secret_env

    secret = "plain-looking-secret-value-42"
    monkeypatch.setenv("MY_SERVICE_CREDENTIAL", secret)  # a name that does not look secret
    register_secret_env("MY_SERVICE_CREDENTIAL")  # as naming it in an api_key_env setting does
    cfg = make_cfg(
        "memory=full_context",
        "dataset.limit=2",
        "llm.backend.fail_on=Search results",
        f"+llm.backend.model_id=fake-{secret}",
    )
    run(cfg, tmp_path / "r")
    hydra = tmp_path / "r" / ".hydra"
    hydra.mkdir()
    (hydra / "overrides.yaml").write_text(f"- llm.backend.model_id=fake-{secret}\n")
    run_io.redact_files(hydra)
    for path in (tmp_path / "r").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(), path
    packages = json.loads((tmp_path / "r" / "metrics.json").read_text())["env"]["packages"]
    assert "***" not in packages.values()  # values are masked, names are not: tiktoken is no token


def test_atomic_writes_from_threads_to_one_path_never_share_a_temporary_file(tmp_path):
    """Eight threads rewrite one file: each write lands whole (one thread's letter throughout)
    and none fails because another thread renamed or truncated its temporary file."""
    from concurrent.futures import ThreadPoolExecutor

    target = tmp_path / "shared.txt"

    def write(i: int) -> None:
        letter = "abcdefgh"[i % 8]
        fileio.atomic_write(target, lambda f: [f.write(letter * 4096) for _ in range(64)])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(64)))
    text = target.read_text()
    assert len(text) == 64 * 4096 and len(set(text)) == 1
    assert not list(tmp_path.glob(".*.tmp"))
