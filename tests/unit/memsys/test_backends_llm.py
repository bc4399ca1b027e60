"""The LLM facade: bounded concurrency, backoff with jitter, Retry-After, failures recorded, accounting."""

from __future__ import annotations

import random

from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import BackendError, ChatRequest
from memharness.memsys.testing.doubles import ScriptedChat


def ScriptedBackend(
    script: dict[str, list[BackendError]] | None = None, sleep_s: float = 0.0
) -> ScriptedChat:
    """Raises the scripted errors for a prompt, then answers it upper-cased (10 + 1 tokens)."""
    return ScriptedChat(
        reply=lambda r: r.messages[-1][1].upper(),
        errors=script,
        latency_s=sleep_s,
        usage=(10, 1),
        model_id="fake:scripted",
    )


def test_max_in_flight_bounds_concurrency():
    backend = ScriptedBackend(sleep_s=0.05)
    llm = LLM(backend, max_in_flight=3, progress=False)
    out = llm.complete([ChatRequest.user(f"p{i}") for i in range(12)])
    assert [c.text for c in out] == [f"P{i}" for i in range(12)]  # order kept
    assert backend.peak == 3


def test_backend_cap_wins_over_config():
    backend = ScriptedBackend(sleep_s=0.02)
    backend.max_concurrency = 1
    LLM(backend, max_in_flight=8, progress=False).complete(
        [ChatRequest.user(f"p{i}") for i in range(4)]
    )
    assert backend.peak == 1


def test_backoff_is_exponential_with_full_jitter_and_honours_retry_after():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(0)
    for attempt, cap in [(0, 1.0), (1, 2.0), (2, 4.0), (5, 8.0)]:
        waits = [policy.delay(attempt, rng, None) for _ in range(200)]
        assert 0 <= min(waits) and max(waits) <= cap and max(waits) > cap * 0.8
    assert all(policy.delay(0, rng, 5.0) >= 5.0 for _ in range(50))
    assert policy.delay(0, rng, 100.0) == 8.0  # Retry-After is capped by max_delay_s


def test_retries_then_success_and_retry_after_is_waited():
    errors = [
        BackendError("429", retryable=True, retry_after=0.3, status=429),
        BackendError("503", retryable=True, status=503),
    ]
    backend = ScriptedBackend({"x": errors})
    llm = LLM(
        backend, meter=Meter(), progress=False, retry=RetryPolicy(max_retries=3, base_delay_s=0.01)
    )
    with llm.meter.stage("answer"):
        out = llm.complete_one(ChatRequest.user("x"))
    assert out.ok and out.attempts == 3 and backend.calls == 3
    assert backend.times[1] - backend.times[0] >= 0.3
    assert llm.meter.stages["answer"].retries == 2 and llm.meter.stages["answer"].failures == 0


def test_failure_after_budget_is_a_recorded_completion_and_the_batch_goes_on():
    backend = ScriptedBackend(
        {
            "bad": [BackendError("boom", retryable=True)] * 5,
            "fatal": [BackendError("400", retryable=False, status=400)],
        }
    )
    llm = LLM(
        backend, meter=Meter(), progress=False, retry=RetryPolicy(max_retries=2, base_delay_s=0.001)
    )
    with llm.meter.stage("judge"):
        out = llm.complete([ChatRequest.user(p) for p in ("ok", "bad", "fatal", "ok2")])
    assert [c.ok for c in out] == [True, False, False, True]
    assert out[1].attempts == 3 and "boom" in out[1].error and out[2].attempts == 1
    judge = llm.meter.stages["judge"]
    assert judge.failures == 2 and judge.calls == 2 and judge.retries == 2


def test_accounting_per_stage_with_prices():
    backend = ScriptedBackend()
    meter = Meter(prices={"fake:scripted": {"prompt": 1.0, "completion": 10.0}})
    llm = LLM(backend, meter=meter, progress=False)
    with meter.stage("answer"):
        llm.complete([ChatRequest.user("a"), ChatRequest.user("b")])
    with meter.stage("judge"):
        llm.complete_one(ChatRequest.user("c"))
    answer, judge = meter.stages["answer"], meter.stages["judge"]
    assert (answer.calls, answer.prompt_tokens, answer.completion_tokens) == (2, 20, 2)
    assert abs(answer.cost_usd - (20 * 1.0 + 2 * 10.0) / 1e6) < 1e-12
    assert judge.calls == 1 and answer.wall_s > 0 and meter.to_json()["total"]["calls"] == 3
