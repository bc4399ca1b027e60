"""vLLM in process: batched chat and embeddings on a GPU (optional extra ``.[vllm]``).

The ``LLM`` facade calls ``chat`` once per request from many threads; a micro-batcher
gathers those calls into one ``vllm.LLM.chat`` call so the GPU sees full batches.
"""

from __future__ import annotations

import importlib.util
import json
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.services.types import BackendError, ChatRequest, Completion, ConfigError
from memharness.memsys.settings import NonEmpty, Range

DType = Literal["auto", "float16", "bfloat16", "float32"]


def require_vllm(setting: str) -> Any:
    """Import vllm, or raise a ConfigError saying whether the package or the GPU is missing."""
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(
            f"{setting}=vllm needs the optional extra: pip install -e '.[vllm]' "
            "(or use llm=local / llm=openai)"
        )
    try:
        import torch

        has_gpu = bool(torch.cuda.is_available())
    except ImportError:
        has_gpu = False
    if not has_gpu:
        raise ConfigError(
            f"{setting}=vllm needs a CUDA GPU and none is visible "
            "(use llm=local, or llm=openai against a remote vLLM server)"
        )
    import vllm

    return vllm


@dataclass
class _Job:
    request: ChatRequest
    future: Future


class MicroBatcher:
    """Collects single calls from many threads into batches for ``run_batch``."""

    def __init__(
        self,
        run_batch: Callable[[list[ChatRequest]], list[Completion]],
        max_batch: int = 256,
        wait_s: float = 0.02,
    ) -> None:
        self._run_batch = run_batch
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self.batch_sizes: list[int] = []
        self._thread = threading.Thread(target=self._loop, daemon=True, name="vllm-batcher")
        self._thread.start()

    def submit(self, request: ChatRequest) -> Completion:
        job = _Job(request, Future())
        self._queue.put(job)
        return job.future.result()

    def _gather(self, first: _Job) -> list[_Job]:
        jobs = [first]
        while len(jobs) < self.max_batch:
            try:
                job = self._queue.get(timeout=self.wait_s)
            except queue.Empty:
                break
            if job is None:
                self._queue.put(None)
                break
            jobs.append(job)
        return jobs

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            jobs = self._gather(first)
            self.batch_sizes.append(len(jobs))
            try:
                results = self._run_batch([j.request for j in jobs])
                for job, result in zip(jobs, results, strict=True):
                    job.future.set_result(result)
            except Exception as err:  # one bad batch fails its requests, not the batcher
                wrapped = (
                    err
                    if isinstance(err, BackendError)
                    else BackendError(f"vllm batch failed: {err}")
                )
                for job in jobs:
                    if not job.future.done():
                        job.future.set_exception(wrapped)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)


def sampling_params(vllm: Any, request: ChatRequest, default_seed: int) -> Any:
    """vllm.SamplingParams for a request, with guided choices or JSON where asked."""
    kwargs: dict[str, Any] = dict(
        max_tokens=request.max_tokens,
        temperature=request.temperature,
        seed=request.seed if request.seed is not None else default_seed,
        stop=list(request.stop) or None,
    )
    guided = None
    if request.choices:
        guided = {"choice": list(request.choices)}
    elif request.json_output:
        guided = (
            {"json": json.loads(request.json_schema)}
            if request.json_schema
            else {"json_object": True}
        )
    if guided is not None:
        kwargs.update(_guided_kwargs(vllm, guided))
    return vllm.SamplingParams(**kwargs)


def _guided_kwargs(vllm: Any, guided: dict[str, Any]) -> dict[str, Any]:
    """vLLM renamed guided decoding to structured outputs; support both spellings."""
    params = getattr(vllm, "sampling_params", None)
    if params is not None and hasattr(params, "StructuredOutputsParams"):
        return {"structured_outputs": params.StructuredOutputsParams(**guided)}
    if params is not None and hasattr(params, "GuidedDecodingParams"):
        return {"guided_decoding": params.GuidedDecodingParams(**guided)}
    raise ConfigError(
        "this vllm version has neither StructuredOutputsParams nor GuidedDecodingParams"
    )


def completions_from_outputs(outputs: Sequence[Any]) -> list[Completion]:
    """vllm RequestOutput objects -> Completions with token usage."""
    result = []
    for out in outputs:
        gen = out.outputs[0]
        result.append(
            Completion(
                text=gen.text,
                prompt_tokens=len(out.prompt_token_ids or ()),
                completion_tokens=len(gen.token_ids or ()),
                extra={"finish_reason": gen.finish_reason},
            )
        )
    return result


class VLLMBackend:
    """``vllm.LLM`` in process; concurrent ``chat`` calls are batched together."""

    max_concurrency = None

    def __init__(
        self,
        model: Annotated[str, NonEmpty()],
        tensor_parallel_size: Annotated[int, Range(1)] = 1,
        gpu_memory_utilization: Annotated[float, Range(0, 1, lo_open=True)] = 0.85,
        max_model_len: Annotated[int, Range(1)] | None = None,
        dtype: DType = "auto",
        seed: Annotated[int, Range(0)] = 0,
        max_batch: Annotated[int, Range(1)] = 256,
        batch_wait_ms: Annotated[float, Range(0)] = 20.0,
        engine: Any = None,
        vllm_module: Any = None,
    ) -> None:
        # engine / vllm_module let tests inject doubles; real runs build them here.
        self._vllm = vllm_module or require_vllm("llm")
        self._engine = engine or self._vllm.LLM(
            model=model,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            dtype=dtype,
            seed=seed,
        )
        self.model_id = f"vllm:{model}"
        self.seed = seed
        self._batcher = MicroBatcher(
            self._run_batch, max_batch=max_batch, wait_s=batch_wait_ms / 1000
        )

    def _run_batch(self, requests: list[ChatRequest]) -> list[Completion]:
        params = [sampling_params(self._vllm, r, self.seed) for r in requests]
        outputs = self._engine.chat(
            [r.message_dicts() for r in requests], sampling_params=params, use_tqdm=False
        )
        return completions_from_outputs(outputs)

    def chat(self, request: ChatRequest) -> Completion:
        return self._batcher.submit(request)

    def close(self) -> None:
        self._batcher.close()


class VLLMEmbedBackend:
    """An embedding model (e.g. E5-Mistral-7B-Instruct) in process via ``vllm.LLM(task="embed")``;
    one request at a time (the engine is not called from two threads at once)."""

    max_concurrency = 1

    def __init__(
        self,
        model: Annotated[str, NonEmpty()],
        tensor_parallel_size: Annotated[int, Range(1)] = 1,
        gpu_memory_utilization: Annotated[float, Range(0, 1, lo_open=True)] = 0.3,
        max_model_len: Annotated[int, Range(1)] | None = None,
        dtype: DType = "auto",
        seed: Annotated[int, Range(0)] = 0,
        engine: Any = None,
    ) -> None:
        if engine is None:
            vllm = require_vllm("embedder")
            engine = vllm.LLM(
                model=model,
                task="embed",
                tensor_parallel_size=tensor_parallel_size,
                gpu_memory_utilization=gpu_memory_utilization,
                max_model_len=max_model_len,
                dtype=dtype,
                seed=seed,
            )
        self._engine = engine
        self.model_id = f"vllm:{model}"

    def embed(self, texts: list[str]) -> np.ndarray:
        if hasattr(self._engine, "embed"):
            outputs = self._engine.embed(list(texts), use_tqdm=False)
        else:  # older vLLM
            outputs = self._engine.encode(list(texts), use_tqdm=False)
        return np.asarray([o.outputs.embedding for o in outputs], dtype=np.float32)
