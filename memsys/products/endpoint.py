"""The harness's own OpenAI-compatible endpoint: a product's model calls go through the run's services.

A ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) serves ``/v1/chat/completions``,
``/v1/embeddings`` and ``/v1/models`` by calling the run's ``LLM`` and ``Embedder`` facades, so every
call a product makes is cached, metered, retried, budgeted and counted like a research system's; a
warm rerun makes no backend call. It lives as long as the product memory that started it.

Stage and ledger: the meter's stage and per-episode scope are context variables of the thread that
drives the product. The adapter hands its context to the endpoint before each request it sends the
worker (``use_context``); every HTTP request is served inside a copy of it, so the product's calls
land in the episode's ledger under the stage the runner set (build, retrieve).

A call the harness could not make (retries spent, deadline, budget) answers 502 with
``x-should-retry: false`` so the product's client does not retry what the harness already retried;
a request the endpoint cannot honour (tools, n > 1, another embedding dimension) answers 400. A
``RunAborted`` (rejected key, unwritable cache) is kept and re-raised by the adapter in the run's
thread. Unknown sampling parameters (top_p, ...) are ignored and counted.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import json
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from memharness.memsys.services.backends.openai_wire import chat_completion_body, embeddings_body
from memharness.memsys.services.types import ChatRequest, RunAborted

# request fields the endpoint reads; any other is ignored (and counted in ``ignored_params``)
CHAT_FIELDS = {
    "model",
    "messages",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "stop",
    "response_format",
    "n",
    "stream",
    "tools",
    "tool_choice",
}
EMBED_FIELDS = {"model", "input", "encoding_format", "dimensions"}
DEFAULT_MAX_TOKENS = (
    1024  # a request without max_tokens (OpenAI's own default is the model's limit)
)


class RequestRefused(ValueError):
    """A request the endpoint cannot honour; answered 400 with this message."""


def message_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise RequestRefused("only text message parts are served (no images or audio)")
            parts.append(str(part.get("text", "")))
        return "".join(parts)
    raise RequestRefused(f"message content must be a string or a list of parts, got {content!r}")


def chat_request(body: dict[str, Any], ignored: Counter[str]) -> ChatRequest:
    """The harness request for an OpenAI chat-completions body (refusing what cannot be served)."""
    for key in body:
        if key not in CHAT_FIELDS:
            ignored[key] += 1
    if body.get("tools"):
        raise RequestRefused("tool calls are not served by the harness endpoint")
    if body.get("stream"):
        raise RequestRefused("streaming is not served by the harness endpoint")
    if int(body.get("n") or 1) != 1:
        raise RequestRefused("n must be 1")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestRefused("messages must be a non-empty list")
    pairs = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m:
            raise RequestRefused(f"each message needs a role and content, got {m!r}")
        pairs.append((str(m["role"]), message_text(m.get("content"))))
    fmt = body.get("response_format") or {}
    kind = fmt.get("type", "text") if isinstance(fmt, dict) else fmt
    if kind not in ("text", "json_object", "json_schema"):
        raise RequestRefused(
            f"response_format {kind!r} is not served (text, json_object or json_schema)"
        )
    schema = response_schema(fmt, kind)
    stop = body.get("stop") or ()
    max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
    return ChatRequest(
        messages=tuple(pairs),
        max_tokens=int(max_tokens),
        temperature=float(
            body.get("temperature", 1.0) if body.get("temperature") is not None else 1.0
        ),
        seed=body.get("seed"),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        json_output=kind in ("json_object", "json_schema"),
        json_schema=json.dumps(schema, sort_keys=True) if schema is not None else None,
    )


def response_schema(fmt: Any, kind: str) -> dict[str, Any] | None:
    """The JSON Schema a ``response_format`` asks for: OpenAI's ``{type: json_schema, json_schema:
    {name, schema}}`` or llama.cpp server's ``{type: json_object, schema}``; None for plain JSON."""
    if kind == "json_schema":
        spec = fmt.get("json_schema") if isinstance(fmt, dict) else None
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise RequestRefused("response_format json_schema needs json_schema.schema (an object)")
        return schema
    if kind == "json_object" and isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
        return fmt["schema"]
    return None


def embed_inputs(body: dict[str, Any]) -> list[str]:
    """The texts of an embeddings body (a string or a list of strings; token arrays are refused)."""
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise RequestRefused("input must be a string or a non-empty list of strings")
    return texts


def encode_vector(vector: np.ndarray, encoding: str) -> Any:
    """One embedding as OpenAI writes it: a float list, or base64 of little-endian float32."""
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


class Endpoint:
    """Serve ``llm`` and ``embedder`` (the run's facades) on 127.0.0.1 until ``stop``."""

    def __init__(self, llm: Any, embedder: Any, tokenizer: Any = None) -> None:
        self.llm, self.embedder, self.tokenizer = llm, embedder, tokenizer
        self.counts: Counter[str] = Counter()
        self.ignored_params: Counter[str] = Counter()
        self.aborted: BaseException | None = None
        self._context = contextvars.copy_context()
        self._lock = threading.Lock()
        self.connections: set[Any] = set()  # open client sockets (keep-alive)
        self.in_flight = 0  # requests being served now
        self.last_activity = time.monotonic()  # when a request last started or ended
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the endpoint is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> str:
        """Bind a free port on 127.0.0.1, serve in a daemon thread, return the base URL."""
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
            # stop() waits for the calls in flight: a model call left running in a daemon thread
            # while the interpreter exits crashes an in-process backend (llama.cpp)
            self._server.daemon_threads = False
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="product-endpoint", daemon=True
            )
            self._thread.start()
        return self.base_url

    def busy(self, delta: int) -> None:
        """A request started (+1) or ended (-1): the adapter's sign of life of the product."""
        with self._lock:
            self.in_flight += delta
            self.last_activity = time.monotonic()

    def idle_s(self) -> float:
        """Seconds since the product last sent or got a model call (0 while one is in flight)."""
        with self._lock:
            return 0.0 if self.in_flight else time.monotonic() - self.last_activity

    def stop(self) -> None:
        """Stop serving, wait for the requests in flight and release the port (idempotent)."""
        if self._server is not None:
            self._server.shutdown()  # no new connection
            while self.in_flight:  # a model call in flight finishes (and is cached)
                time.sleep(0.05)
            with self._lock:
                idle = list(self.connections)
            for sock in idle:  # keep-alive connections waiting for a next request: closed
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._server.server_close()  # joins the handler threads
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = self._thread = None

    def use_context(self, context: contextvars.Context | None = None) -> None:
        """Serve the next requests under ``context`` (default: the caller's): stage and ledger."""
        self._context = context or contextvars.copy_context()

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def stats(self) -> dict[str, Any]:
        """Requests served, refused and failed, and the ignored request fields."""
        with self._lock:
            return {**self.counts, "ignored_params": dict(self.ignored_params)}

    def run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` in a copy of the adapter's context (each HTTP thread its own copy)."""
        return self._context.copy().run(fn, *args)

    # -- the three routes ------------------------------------------------------------------------
    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            request = chat_request(body, self.ignored_params)
        completion = self.run(self.llm.complete_one, request)
        if not completion.ok:
            self.count("chat_failed")
            return 502, _error(f"the harness LLM call failed: {completion.error}", "server_error")
        self.count("chat")
        ident = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
        return 200, chat_completion_body(
            ident,
            self.llm.model_id,
            completion.text,
            completion.prompt_tokens,
            completion.completion_tokens,
            "length" if completion.reached_cap(request.max_tokens) else "stop",
        )

    def embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            for key in body:
                if key not in EMBED_FIELDS:
                    self.ignored_params[key] += 1
        texts = embed_inputs(body)
        vectors = self.run(self.embedder.embed, texts)
        wanted = body.get("dimensions")
        if wanted is not None and int(wanted) != vectors.shape[1]:
            raise RequestRefused(
                f"dimensions={wanted} asked, the harness embedder {self.embedder.model_id} gives "
                f"{vectors.shape[1]}"
            )
        self.count("embeddings")
        self.count("embedded_texts", len(texts))
        encoding = body.get("encoding_format") or "float"
        tokens = sum(self._tokens(t) for t in texts)
        return 200, embeddings_body(
            [encode_vector(v, encoding) for v in vectors], self.embedder.model_id, tokens
        )

    def models(self) -> dict[str, Any]:
        ids = dict.fromkeys([self.llm.model_id, self.embedder.model_id])
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "memharness"} for m in ids
            ],
        }

    def _tokens(self, text: str) -> int:
        return self.tokenizer.count(text) if self.tokenizer is not None else len(text.split())


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


def _handler(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the product's client reuses its connection

        def setup(self) -> None:
            super().setup()
            with endpoint._lock:
                endpoint.connections.add(self.connection)

        def finish(self) -> None:
            with endpoint._lock:
                endpoint.connections.discard(self.connection)
            super().finish()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's signature
            return  # the meter and the counters record every request; no access log on stderr

        def do_GET(self) -> None:  # noqa: N802 - stdlib's name
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._reply(200, endpoint.models())
            else:
                self._reply(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:  # noqa: N802 - stdlib's name
            endpoint.busy(+1)
            try:
                self._reply(*self._serve())
            finally:
                endpoint.busy(-1)

        def _serve(self) -> tuple[int, dict[str, Any]]:
            route = self.path.rstrip("/").removeprefix("/v1")
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise RequestRefused("the request body must be a JSON object")
                if route == "/chat/completions":
                    return endpoint.chat(body)
                if route == "/embeddings":
                    return endpoint.embeddings(body)
                return 404, _error(f"no route {self.path}", "not_found")
            except (RequestRefused, json.JSONDecodeError, TypeError, ValueError) as err:
                endpoint.count("refused")
                return 400, _error(str(err), "invalid_request_error")
            except RunAborted as err:  # the adapter re-raises it in the run's thread
                endpoint.aborted = endpoint.aborted or err
                return 503, _error(f"the run was aborted: {err}", "server_error")
            except Exception as err:  # an embedding that failed for good, a bug: answered, counted
                endpoint.count("failed")
                return 502, _error(f"{type(err).__name__}: {err}", "server_error")

        def _reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status >= 500:  # the harness retried already: the product's client must not
                self.send_header("x-should-retry", "false")
            self.end_headers()
            self.wfile.write(data)

    return Handler
