"""OpenAIBackend / OpenAIEmbedBackend against the in-repo fault server, and through the LLM facade."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _servers import free_port
from memharness.memsys.services.backends.openai_compat import (
    OpenAIBackend,
    OpenAIEmbedBackend,
    parse_retry_after,
)
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import BackendError, ChatRequest, ConfigError
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer


def backend(url: str, **kw) -> OpenAIBackend:
    return OpenAIBackend(model="fault-model", base_url=url, api_key_env=None, **kw)


@pytest.mark.parametrize(
    "fault,status", [("rate_429", 429), ("rate_500", 500), ("rate_malformed", 200)]
)
def test_faults_map_to_retryable_backend_errors(fault, status):
    with FaultServer(FaultConfig(**{fault: 1.0}, retry_after_s=7)) as srv:
        with pytest.raises(BackendError) as info:
            backend(srv.url).chat(ChatRequest.user("hi"))
    assert info.value.retryable and info.value.status == status
    assert info.value.retry_after == (7.0 if status == 429 else None)


def test_hang_becomes_a_retryable_timeout():
    with FaultServer(FaultConfig(rate_hang=1.0, hang_s=3)) as srv:
        with pytest.raises(BackendError, match="timed out") as info:
            backend(srv.url, timeout_s=0.3).chat(ChatRequest.user("hi"))
    assert info.value.retryable


def test_completion_carries_text_and_usage():
    with FaultServer() as srv:
        out = backend(srv.url).chat(ChatRequest.user("four words right here"))
    assert out.text.startswith("reply ") and out.prompt_tokens == 4 and out.completion_tokens == 2


def test_missing_key_names_the_env_var(monkeypatch):
    monkeypatch.delenv("MEMHARNESS_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="MEMHARNESS_TEST_KEY"):
        OpenAIBackend(
            model="m", base_url="http://127.0.0.1:9/v1", api_key_env="MEMHARNESS_TEST_KEY"
        )


def test_unreachable_server_names_base_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ConfigError, match=r"llm\.backend\.base_url=http://127\.0\.0\.1"):
        backend(url)
    with pytest.raises(ConfigError, match=r"embedder\.backend\.base_url"):
        OpenAIEmbedBackend(base_url=url, api_key_env=None)


def test_key_is_sent_but_never_shown(monkeypatch):
    monkeypatch.setenv("MEMHARNESS_TEST_KEY", "sk-test-very-secret-123")
    with FaultServer(FaultConfig(rate_500=1.0)) as srv:
        b = OpenAIBackend(model="m", base_url=srv.url, api_key_env="MEMHARNESS_TEST_KEY")
        with pytest.raises(BackendError) as info:
            b.chat(ChatRequest.user("x"))
        assert srv.stats()["auth_seen"] >= 2  # the /models probe and the chat call
    assert "sk-test" not in repr(b) and "sk-test" not in str(info.value)
    assert "sk-test" not in json.dumps(b.payload(ChatRequest.user("x")))


def test_structured_modes_build_the_right_fields():
    with FaultServer() as srv:
        req = ChatRequest.user("judge", max_tokens=5, choices=("0", "1"))
        assert (
            backend(srv.url, structured="grammar").payload(req)["grammar"] == 'root ::= "0" | "1"'
        )
        assert backend(srv.url, structured="guided_choice").payload(req)["guided_choice"] == [
            "0",
            "1",
        ]
        lb = backend(srv.url, structured="logit_bias").payload(req)
        assert (
            lb["max_tokens"] == 1
            and len(lb["logit_bias"]) == 2
            and set(lb["logit_bias"].values()) == {100}
        )
        js = backend(srv.url, structured="json_schema")
        assert js.payload(req)["response_format"]["json_schema"]["schema"]["properties"]["answer"][
            "enum"
        ] == ["0", "1"]
        assert js.chat(req).text in ("0", "1")  # unwrapped from {"answer": ...}
        assert "grammar" not in backend(srv.url, structured="none").payload(req)
        jreq = ChatRequest.user("extract", json_output=True)
        assert backend(srv.url).payload(jreq)["response_format"] == {"type": "json_object"}
        seeded = backend(srv.url).payload(
            ChatRequest.user("s", temperature=0.7, seed=11, stop=("\n",))
        )
        assert seeded["seed"] == 11 and seeded["stop"] == ["\n"] and seeded["temperature"] == 0.7
    with pytest.raises(ConfigError, match="structured"):
        OpenAIBackend(model="m", structured="magic", api_key_env=None, check_connection=False)


def test_retry_after_parsing():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_transient_faults_recover_through_retries(tmp_path):
    cfg = FaultConfig(rate_429=0.3, rate_500=0.3, rate_malformed=0.2, transient=1, seed=5)
    with FaultServer(cfg) as srv:
        llm = LLM(
            backend(srv.url),
            meter=Meter(),
            max_in_flight=4,
            progress=False,
            retry=RetryPolicy(max_retries=2, base_delay_s=0.001, max_delay_s=0.01),
        )
        with llm.meter.stage("answer"):
            out = llm.complete([ChatRequest.user(f"q{i}") for i in range(30)])
        stats = srv.stats()
    assert all(c.ok for c in out)
    counts = llm.meter.stages["answer"]
    assert counts.retries == stats["injected_total"] > 0
    assert counts.calls == 30 and counts.failures == 0
    assert stats["chat_requests"] == 30 + stats["injected_total"]


def test_permanent_faults_fail_exactly_the_faulted_prompts(tmp_path):
    cfg = FaultConfig(rate_429=0.2, rate_500=0.2, rate_hang=0.1, hang_s=2, seed=2)
    with FaultServer(cfg) as srv:
        llm = LLM(
            backend(srv.url, timeout_s=0.5),
            meter=Meter(),
            cache=CallCache(tmp_path / "c.sqlite"),
            max_in_flight=8,
            progress=False,
            retry=RetryPolicy(max_retries=1, base_delay_s=0.001),
        )
        with llm.meter.stage("judge"):
            out = llm.complete([ChatRequest.user(f"q{i}") for i in range(40)])
        stats = srv.stats()
    failed = [c for c in out if not c.ok]
    assert len(failed) == llm.meter.stages["judge"].failures == stats["injected_total"] // 2 > 0
    assert all(c.attempts == 2 and c.text == "" for c in failed)
    assert len(llm.cache) == 40 - len(failed)  # failures are never cached


def test_openai_embedder_batches_and_caches(tmp_path):
    with FaultServer(FaultConfig(embed_dim=12)) as srv:
        meter = Meter()
        emb = Embedder(
            OpenAIEmbedBackend(model="e", base_url=srv.url, api_key_env=None),
            meter=meter,
            cache=CallCache(tmp_path / "c.sqlite"),
            batch_size=4,
        )
        vecs = emb.embed([f"t{i}" for i in range(10)])
        again = emb.embed([f"t{i}" for i in range(10)])
        stats = srv.stats()
    assert vecs.shape == (10, 12) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert np.array_equal(vecs, again)
    assert stats["embed_requests"] == 3 and stats["embed_texts"] == 10
    assert meter.stages["other"].embed_cache_hits == 10


def test_a_proxy_from_the_environment_carries_the_requests(monkeypatch):
    """HTTP_PROXY is honoured: the request goes to the proxy, addressed by the server's absolute URL."""
    from memharness.memsys.testing.fault_server import FaultConfig, FaultServer

    with FaultServer(FaultConfig()) as proxy:  # its routes match the absolute URL's path
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        backend = OpenAIBackend(
            model="m", base_url="http://server.invalid:9/v1", api_key_env=None, timeout_s=5
        )
        reply = backend.chat(ChatRequest.user("hello"))
        backend.close()
        assert reply.text and proxy.stats()["chat_requests"] == 1
        monkeypatch.setenv("NO_PROXY", "server.invalid")
        direct = OpenAIBackend(
            model="m",
            base_url="http://server.invalid:9/v1",
            api_key_env=None,
            check_connection=False,
            timeout_s=5,
        )
        with pytest.raises(BackendError, match="connection error"):
            direct.chat(ChatRequest.user("hello"))
        assert proxy.stats()["chat_requests"] == 1
