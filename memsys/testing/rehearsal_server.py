"""``memharness test-backend``: the rehearsal backend over HTTP, OpenAI-compatible, on 127.0.0.1 only.

Serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` with the rehearsal replies and
vectors (rehearsal.py), ``GET /v1/models`` and ``GET /stats`` (requests, replies per prompt family,
unrecognised prompts, queueing, peak in flight). It is the fault server's plumbing (fault_server.py)
with the rehearsal's answers: a request waits for one of ``--capacity`` slots, then takes
``--latency-ms + --per-token-ms x output tokens``. ``--api-key KEY`` requires ``Authorization:
Bearer KEY`` on /v1/ (``--api-key`` alone generates one and prints it once); the key is never logged
nor shown in /stats. ``--exit-after S`` stops the server by itself after S seconds.

    memharness test-backend --port 8765 --latency-ms 20 --per-token-ms 0.5 --capacity 32
    python run.py llm=openai llm.backend.base_url=http://127.0.0.1:8765/v1 llm.backend.api_key_env=null \\
        llm.backend.structured=guided_choice embedder=openai embedder.backend.base_url=... (docs/scaling.md)
"""

from __future__ import annotations

import argparse
import hmac
import json
import secrets
import sys
import threading
from typing import Any

from memharness.memsys.services.backends.openai_wire import chat_completion_body, embeddings_body
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.fault_server import FaultServer, _choices_of, _Handler, prompt_key
from memharness.memsys.testing.rehearsal import RehearsalChat, RehearsalEmbedder

HOST = "127.0.0.1"


def request_of(body: dict[str, Any]) -> ChatRequest:
    """The ChatRequest an OpenAI-style body carries (its choices from guided_choice, a grammar or a
    json_schema enum), so a reply over HTTP is the reply in process."""
    fmt = (body.get("response_format") or {}).get("type")
    choices = _choices_of(body)
    return ChatRequest(
        messages=tuple(
            (str(m.get("role")), str(m.get("content") or "")) for m in body.get("messages") or []
        ),
        max_tokens=int(body.get("max_tokens") or 256),
        choices=tuple(choices) if choices else None,
        json_output=fmt in ("json_object", "json_schema") and not choices,
    )


class _RehearsalHandler(_Handler):
    server_version = "memharness-rehearsal/1"

    def _authorised(self) -> bool:
        key = self.server.api_key  # type: ignore[attr-defined]
        if not key or not self.path.startswith("/v1"):
            return True
        given = self.headers.get("Authorization") or ""
        if hmac.compare_digest(given.encode(), f"Bearer {key}".encode()):
            return True
        with self.state.lock:
            self.state.counts["rejected"] += 1
        self._send(401, {"error": {"message": "missing or wrong API key"}})
        return False

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path.startswith("/stats"):
            stats = self.state.snapshot(detail=False)
            stats["rehearsal"] = {
                "chat": self.server.chat.stats(),  # type: ignore[attr-defined]
                "embed": self.server.embedder.stats(),  # type: ignore[attr-defined]
            }
            self._send(200, stats)
        elif not self._authorised():
            return
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": "rehearsal", "object": "model"}]})
        else:
            super().do_GET()

    def do_POST(self) -> None:  # noqa: N802
        if self._authorised():
            super().do_POST()
        else:  # the body is unread; the connection cannot be reused
            self.close_connection = True

    def _chat(self, body: dict[str, Any]) -> None:
        with self.state.lock:
            self.state.counts["chat_requests"] += 1
        chat: RehearsalChat = self.server.chat  # type: ignore[attr-defined]
        request = request_of(body)
        _, completion = chat.reply(request)
        chat.latency.serve(completion.completion_tokens)
        text = completion.text
        if request.choices and (body.get("response_format") or {}).get("type") == "json_schema":
            text = json.dumps({"answer": text})  # the enum is read back from {"answer": ...}
        with self.state.lock:
            self.state.counts["chat_ok"] += 1
        key = prompt_key(body.get("messages") or [])
        self._send(
            200,
            chat_completion_body(
                key,
                body.get("model"),
                text,
                completion.prompt_tokens,
                completion.completion_tokens,
            ),
        )

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs or []]
        with self.state.lock:
            self.state.counts["embed_requests"] += 1
            self.state.counts["embed_texts"] += len(texts)
        vectors = self.server.embedder.embed(texts)  # type: ignore[attr-defined]
        with self.state.lock:
            self.state.counts["embed_ok"] += 1
        tokens = sum(len(t.split()) for t in texts)
        self._send(200, embeddings_body(vectors.tolist(), body.get("model"), tokens))


class RehearsalServer(FaultServer):
    """The rehearsal backend in a background thread on 127.0.0.1:
    ``with RehearsalServer(RehearsalChat(base_ms=20)) as srv: srv.url``."""

    def __init__(
        self,
        chat: RehearsalChat | None = None,
        embedder: RehearsalEmbedder | None = None,
        port: int = 0,
        api_key: str | None = None,
    ) -> None:
        super().__init__(host=HOST, port=port)
        self.httpd.RequestHandlerClass = _RehearsalHandler
        self.httpd.chat = chat or RehearsalChat()  # type: ignore[attr-defined]
        self.httpd.embedder = embedder or RehearsalEmbedder()  # type: ignore[attr-defined]
        self.httpd.api_key = api_key  # type: ignore[attr-defined]

    def stats(self, detail: bool = False) -> dict[str, Any]:
        out = super().stats(detail)
        out["rehearsal"] = {
            "chat": self.httpd.chat.stats(),  # type: ignore[attr-defined]
            "embed": self.httpd.embedder.stats(),  # type: ignore[attr-defined]
        }
        return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memharness test-backend",
        description="the rehearsal backend over HTTP (OpenAI-compatible, 127.0.0.1 only)",
    )
    p.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 (0 = any free one)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="latency of every request")
    p.add_argument("--per-token-ms", type=float, default=0.0, help="added latency per output token")
    p.add_argument("--capacity", type=int, default=32, help="requests served at once; more wait")
    p.add_argument(
        "--embed-latency-ms", type=float, default=0.0, help="latency per embedding batch"
    )
    p.add_argument("--dim", type=int, default=384, help="embedding dimensions")
    p.add_argument("--summary-share", type=float, default=0.4, help="sentences a summary keeps")
    p.add_argument(
        "--api-key",
        nargs="?",
        const="",
        default=None,
        help="require this bearer token on /v1/ (no value: generate one and print it once)",
    )
    p.add_argument("--exit-after", type=float, default=0.0, help="stop after S seconds (0: never)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.capacity < 1 or args.latency_ms < 0 or args.per_token_ms < 0 or args.dim < 16:
        parser().error("--capacity >= 1, --latency-ms and --per-token-ms >= 0, --dim >= 16")
    key = args.api_key
    if key == "":
        key = secrets.token_urlsafe(24)
        print(f"API key (shown once): {key}", flush=True)
    chat = RehearsalChat(
        base_ms=args.latency_ms,
        per_token_ms=args.per_token_ms,
        capacity=args.capacity,
        summary_share=args.summary_share,
    )
    embedder = RehearsalEmbedder(
        dim=args.dim, base_ms=args.embed_latency_ms, capacity=args.capacity
    )
    try:
        server = RehearsalServer(chat, embedder, port=args.port, api_key=key)
    except OSError as err:
        print(f"error: cannot listen on {HOST}:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(
        f"rehearsal backend on {server.url} (latency {args.latency_ms:g} ms + "
        f"{args.per_token_ms:g} ms/token, capacity {args.capacity}"
        f"{', API key required' if key else ''}); stats: {server.url[:-3]}/stats",
        flush=True,
    )
    if args.exit_after > 0:
        timer = threading.Timer(args.exit_after, server.httpd.shutdown)
        timer.daemon = True
        timer.start()
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
