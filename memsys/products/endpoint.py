"""The harness's own OpenAI-compatible endpoint: a product's model calls go through the run's services.

A ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) serves ``/v1/chat/completions``,
``/v1/embeddings`` and ``/v1/models`` by calling the run's ``LLM`` and ``Embedder`` facades, so every
call a product makes is cached, metered, retried, budgeted and counted like a research system's; a
warm rerun makes no backend call. It lives as long as the product memory that started it.

Only the product's worker may use it: every request must carry the endpoint's random bearer token
(``Authorization: Bearer <token>``, made anew per endpoint and handed to the worker alone as its
``OPENAI_API_KEY``; compared in constant time) and a ``Host`` of 127.0.0.1 or localhost at its port
(a web page's request through DNS rebinding names another host). Anything else answers a bare 401/403
that does not say what is listening. A POST must be JSON (``Content-Type: application/json``) of at
most ``MAX_BODY_BYTES``, arriving within ``READ_TIMEOUT_S``; the OpenAI fields are range-checked.

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

import contextlib
import contextvars
import hashlib
import hmac
import json
import secrets
import socket
import socketserver
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memharness.memsys.products.openai_requests import (
    EMBED_FIELDS,
    RequestRefused,
    chat_request,
    embed_inputs,
    encode_vector,
)
from memharness.memsys.services.backends.openai_wire import chat_completion_body, embeddings_body
from memharness.memsys.services.types import RunAborted

READ_TIMEOUT_S = 30.0  # a request's headers and body must arrive within this (else cut)
STOP_DEADLINE_S = 30.0  # stop() waits this long for the calls in flight, then lets them go
MAX_BODY_BYTES = 8 << 20  # a request body above this is refused (mem0's longest prompt is ~40 kB)


class Unauthorized(Exception):
    """A request without the token or from another Host: answered without naming the endpoint."""


class Endpoint:
    """Serve ``llm`` and ``embedder`` (the run's facades) on 127.0.0.1 until ``stop``."""

    def __init__(self, llm: Any, embedder: Any, tokenizer: Any = None) -> None:
        self.llm, self.embedder, self.tokenizer = llm, embedder, tokenizer
        self.token = secrets.token_urlsafe(32)  # the worker's OPENAI_API_KEY; nobody else's
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

    def stop(self, deadline_s: float = STOP_DEADLINE_S) -> None:
        """Stop serving, wait up to ``deadline_s`` for the requests in flight, close every
        connection and release the port (idempotent)."""
        if self._server is not None:
            self._server.shutdown()  # no new connection
            until = time.monotonic() + deadline_s
            while self.in_flight and time.monotonic() < until:  # a call in flight is cached
                time.sleep(0.05)
            with self._lock:
                open_now = list(self.connections)
                late = self.in_flight
            for sock in open_now:  # keep-alive or stalled senders: closed
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            if late:  # past the deadline: close the port, leave the late threads to finish alone
                self.count("stopped_in_flight", late)
                socketserver.TCPServer.server_close(self._server)  # without the threads' join
            else:
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

    def authorize(self, host: str | None, authorization: str | None) -> None:
        """Refuse a request from another Host (403) or without the bearer token (401)."""
        port = self._server.server_address[1] if self._server is not None else None
        if host not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            raise Unauthorized(403)
        given = (authorization or "").removeprefix("Bearer ").strip().encode()
        if not hmac.compare_digest(given, self.token.encode()):
            raise Unauthorized(401)

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
        server_version = sys_version = ""  # no Server header naming the stack
        timeout = READ_TIMEOUT_S  # a request line, headers or body that stall are cut

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
            if not self._authorized():
                return
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._reply(200, endpoint.models())
            else:
                self._reply(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:  # noqa: N802 - stdlib's name
            if not self._authorized():
                return
            endpoint.busy(+1)
            try:
                self._reply(*self._serve())
            finally:
                endpoint.busy(-1)

        def _authorized(self) -> bool:
            try:
                endpoint.authorize(self.headers.get("Host"), self.headers.get("Authorization"))
            except Unauthorized as refused:
                endpoint.count(f"unauthorized_{refused.args[0]}")
                self.close_connection = True
                self._reply(refused.args[0], {})
                return False
            return True

        def _body(self) -> Any:
            kind = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise RequestRefused(f"Content-Type must be application/json, got {kind!r}")
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                raise RequestRefused("a Content-Length header is required")
            if int(length) > MAX_BODY_BYTES:
                self.close_connection = True  # the unread body is not drained
                raise RequestRefused(f"the body is {length} bytes; at most {MAX_BODY_BYTES}")
            data = self.rfile.read(int(length))
            if len(data) < int(length):
                self.close_connection = True
                raise RequestRefused("the body ended before its Content-Length")
            return json.loads(data)

        def _serve(self) -> tuple[int, dict[str, Any]]:
            route = self.path.rstrip("/").removeprefix("/v1")
            try:
                body = self._body()
                if not isinstance(body, dict):
                    raise RequestRefused("the request body must be a JSON object")
                if route == "/chat/completions":
                    return endpoint.chat(body)
                if route == "/embeddings":
                    return endpoint.embeddings(body)
                return 404, _error(f"no route {self.path}", "not_found")
            except TimeoutError:  # the body did not arrive in READ_TIMEOUT_S
                self.close_connection = True
                endpoint.count("read_timeouts")
                return 408, _error("the request body did not arrive in time", "timeout")
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
