"""vLLM backend: clear errors without the package or a GPU; batching and parameter mapping with doubles."""

from __future__ import annotations

import importlib.util
import threading
import types

import pytest
from memharness.memsys.services.backends.vllm_backend import (
    VLLMBackend,
    VLLMEmbedBackend,
    require_vllm,
)
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.types import ChatRequest, ConfigError


def test_missing_package_or_gpu_is_a_config_error():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here; the GPU check is exercised on GPU machines")
    with pytest.raises(ConfigError, match=r"\.\[vllm\]"):
        require_vllm("llm")
    with pytest.raises(ConfigError, match="vllm"):
        VLLMBackend(model="some/model")


def test_no_gpu_is_named(monkeypatch):
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: object() if name == "vllm" else None
    )
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(__import__("sys").modules, "torch", fake_torch)
    with pytest.raises(ConfigError, match="CUDA GPU"):
        require_vllm("embedder")


class FakeParams:
    def __init__(self, **kw):
        self.kw = kw


class FakeGuided:
    def __init__(self, **kw):
        self.kw = kw


FAKE_VLLM = types.SimpleNamespace(
    SamplingParams=FakeParams,
    sampling_params=types.SimpleNamespace(GuidedDecodingParams=FakeGuided),
)


class FakeEngine:
    """Answers each conversation with its last message reversed; records batch sizes and params."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.params: list[FakeParams] = []
        self.lock = threading.Lock()

    def chat(self, conversations, sampling_params, use_tqdm):
        with self.lock:
            self.batches.append(len(conversations))
            self.params.extend(sampling_params)
        out = []
        for conv in conversations:
            text = conv[-1]["content"][::-1]
            gen = types.SimpleNamespace(text=text, token_ids=[1] * len(text), finish_reason="stop")
            out.append(types.SimpleNamespace(outputs=[gen], prompt_token_ids=[0] * 7))
        return out

    def embed(self, texts, use_tqdm):
        return [
            types.SimpleNamespace(outputs=types.SimpleNamespace(embedding=[len(t), 1.0]))
            for t in texts
        ]


def test_concurrent_calls_are_batched_and_params_mapped():
    engine = FakeEngine()
    backend = VLLMBackend(
        model="m", engine=engine, vllm_module=FAKE_VLLM, max_batch=64, batch_wait_ms=50, seed=9
    )
    llm = LLM(backend, max_in_flight=32, progress=False)
    requests = [ChatRequest.user(f"q{i}", max_tokens=3, choices=("0", "1")) for i in range(32)]
    out = llm.complete(requests)
    backend.close()
    assert [c.text for c in out] == [f"q{i}"[::-1] for i in range(32)]
    assert out[0].prompt_tokens == 7 and out[0].completion_tokens == 2
    assert sum(engine.batches) == 32 and max(engine.batches) > 1
    first = engine.params[0].kw
    assert (
        first["max_tokens"] == 3
        and first["seed"] == 9
        and first["guided_decoding"].kw == {"choice": ["0", "1"]}
    )


def test_engine_errors_fail_the_batch_not_the_batcher():
    class Broken(FakeEngine):
        def chat(self, *a, **k):
            raise RuntimeError("CUDA out of memory")

    backend = VLLMBackend(model="m", engine=Broken(), vllm_module=FAKE_VLLM)
    out = LLM(backend, progress=False).complete_one(ChatRequest.user("x"))
    assert not out.ok and "out of memory" in out.error
    backend.close()


def test_embed_backend_returns_one_row_per_text():
    vectors = VLLMEmbedBackend(model="e5", engine=FakeEngine()).embed(["ab", "abcd"])
    assert vectors.tolist() == [[2.0, 1.0], [4.0, 1.0]]
