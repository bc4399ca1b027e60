"""A deterministic, fault-injecting OpenAI-compatible test server (stdlib only).

Serves ``POST /v1/chat/completions``, ``POST /v1/embeddings``, ``GET /v1/models`` and
``GET /stats`` (counts of what was served and injected). Whether a chat request is
faulted, and how, is a pure function of ``seed`` and the request's messages, so a
prompt that is faulted stays faulted (``--transient 0``) or recovers after its first
N attempts (``--transient N``). That makes the number of failed samples of a run
computable from ``/stats``.

Embedding requests can be faulted too (``embed_rate_500``, keyed by the batch's texts, recovering
after ``embed_transient`` attempts), or answered 200 with a broken reply (``embed_rate_bad`` of the
kind ``embed_bad``: ``nan`` / ``inf`` in one vector, ``dim`` vectors of half the dimension,
``count`` one vector too few, ``error`` an error body); ``empty_rate`` answers some prompts with empty content;
``reject_posts=401`` answers every POST with that status while ``/models`` still answers 200; and
``echo_auth`` makes error bodies quote the request's Authorization header (a misbehaving server,
to test that no key reaches a file); ``echo_auth_ok`` does the same in successful chat replies, so
the key enters memories, views, snapshots and the call cache.

Run: ``python -m memharness.memsys.testing.fault_server --port 8765 --rate-429 0.1 --seed 0``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memharness.memsys.services.backends.openai_wire import chat_completion_body, embeddings_body

FAULTS = ("429", "500", "hang", "malformed")
EMBED_BAD = ("nan", "inf", "dim", "count", "error")


@dataclass
class FaultConfig:
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    rate_malformed: float = 0.0
    latency_ms: float = 0.0
    seed: int = 0
    transient: int = 0  # 0 = a faulted prompt is faulted forever; N = only its first N attempts
    retry_after_s: float = 0.0  # Retry-After header on 429s
    hang_s: float = 30.0  # how long a hung request stalls before the connection is dropped
    embed_dim: int = 16
    embed_rate_500: float = 0.0  # fraction of embedding batches answered 500
    embed_transient: int = 0  # 0 = a faulted batch fails forever; N = only its first N attempts
    embed_rate_bad: float = 0.0  # fraction of embedding batches answered 200 with a broken reply
    embed_bad: str = "nan"  # how: one of EMBED_BAD
    empty_rate: float = 0.0  # fraction of (unfaulted) chat prompts answered with empty content
    reject_posts: int = 0  # an HTTP status (401, 403) for every POST; /models still answers 200
    echo_auth: bool = False  # error bodies quote the request's Authorization header
    echo_auth_ok: bool = False  # successful chat replies quote it too (a leak into memory)

    def __post_init__(self) -> None:
        if sum(self.rates()) > 1.0:
            raise ValueError(f"fault rates sum to {sum(self.rates())} > 1")
        if self.embed_bad not in EMBED_BAD or self.embed_rate_500 + self.embed_rate_bad > 1.0:
            raise ValueError(f"embed_bad in {EMBED_BAD}; embedding fault rates sum to at most 1")

    def rates(self) -> tuple[float, ...]:
        return (self.rate_429, self.rate_500, self.rate_hang, self.rate_malformed)


def _unit(seed: int, *parts: str) -> float:
    """A deterministic number in [0, 1) from the seed and some strings."""
    digest = hashlib.sha256("\x00".join((str(seed),) + parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def prompt_key(messages: list[dict[str, Any]]) -> str:
    """Content hash of a request's messages: what faults and answers depend on."""
    blob = json.dumps([[m.get("role"), m.get("content")] for m in messages], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def fault_for(config: FaultConfig, key: str) -> str | None:
    """The fault a prompt draws (None = served normally)."""
    u, edge = _unit(config.seed, "fault", key), 0.0
    for name, rate in zip(FAULTS, config.rates(), strict=False):
        edge += rate
        if u < edge:
            return name
    return None


def _choices_of(body: dict[str, Any]) -> list[str] | None:
    """The allowed outputs if the request constrains them (guided_choice, grammar, json enum)."""
    if body.get("guided_choice"):
        return [str(c) for c in body["guided_choice"]]
    grammar = body.get("grammar")
    if isinstance(grammar, str) and grammar.strip().startswith("root ::="):
        return re.findall(r'"((?:[^"\\]|\\.)*)"', grammar)
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    enum = ((schema.get("properties") or {}).get("answer") or {}).get("enum")
    return [str(c) for c in enum] if enum else None


def answer_text(config: FaultConfig, key: str, body: dict[str, Any]) -> str:
    """A deterministic reply: a constrained choice, a JSON object, or a short text."""
    choices = _choices_of(body)
    fmt = (body.get("response_format") or {}).get("type")
    if choices:
        pick = choices[int(_unit(config.seed, "choice", key) * len(choices))]
        return json.dumps({"answer": pick}) if fmt == "json_schema" else pick
    if fmt in ("json_object", "json_schema"):
        return json.dumps({"answer": f"item {key[:6]}"})
    return f"reply {key[:8]}"


class _State:
    """Thread-safe counters behind ``GET /stats``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter(
            dict.fromkeys(
                (
                    "chat_requests",
                    "chat_ok",
                    "embed_requests",
                    "embed_texts",
                    "embed_ok",
                    "injected_embed",
                    "injected_embed_bad",
                    "empty_answers",
                    "rejected",
                ),
                0,
            )
        )
        self.injected: Counter[str] = Counter()
        self.per_prompt: Counter[str] = Counter()
        self.per_batch: Counter[str] = Counter()
        self.auth_seen = 0

    def snapshot(self, detail: bool) -> dict[str, Any]:
        with self.lock:
            out: dict[str, Any] = {
                **self.counts,
                "injected": {f: self.injected[f] for f in FAULTS},
                "distinct_prompts": len(self.per_prompt),
                "auth_seen": self.auth_seen,
            }
            out["injected_total"] = sum(self.injected.values())
            if detail:
                out["per_prompt"] = dict(self.per_prompt)
            return out


class _Handler(BaseHTTPRequestHandler):
    server_version = "memharness-fault/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet: tests read /stats instead
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes; without TCP_NODELAY, Nagle's algorithm holds
        # the body back until the client's (delayed) ACK of the headers on a kept-alive connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def cfg(self) -> FaultConfig:
        return self.server.fault_config  # type: ignore[attr-defined]

    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined]

    def _send(
        self,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        data = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path.startswith("/stats"):
            self._send(200, self.state.snapshot(detail="detail" in self.path))
        elif self.path.rstrip("/") in ("/v1/models", "/models"):
            with self.state.lock:
                self.state.auth_seen += bool(self.headers.get("Authorization"))
            self._send(200, {"object": "list", "data": [{"id": "fault-model", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "request body is not JSON"}})
            return
        with self.state.lock:
            self.state.auth_seen += bool(self.headers.get("Authorization"))
        if self.cfg.reject_posts:
            with self.state.lock:
                self.state.counts["rejected"] += 1
            self._send(
                self.cfg.reject_posts, {"error": {"message": "invalid API key" + self._echo()}}
            )
            return
        if self.path.rstrip("/").endswith("/chat/completions"):
            self._chat(body)
        elif self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(body)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _chat(self, body: dict[str, Any]) -> None:
        key = prompt_key(body.get("messages") or [])
        with self.state.lock:
            self.state.counts["chat_requests"] += 1
            self.state.per_prompt[key] += 1
            attempt = self.state.per_prompt[key]
        if self.cfg.latency_ms:
            time.sleep(self.cfg.latency_ms / 1000)
        fault = fault_for(self.cfg, key)
        if fault and (self.cfg.transient == 0 or attempt <= self.cfg.transient):
            with self.state.lock:
                self.state.injected[fault] += 1
            self._inject(fault)
            return
        text = answer_text(self.cfg, key, body)
        if self.cfg.echo_auth_ok and not _choices_of(body):
            text += f" (received {self.headers.get('Authorization')})"
        if self.cfg.empty_rate and _unit(self.cfg.seed, "empty", key) < self.cfg.empty_rate:
            text = ""
            with self.state.lock:
                self.state.counts["empty_answers"] += 1
        prompt_tokens = sum(
            len(str(m.get("content", "")).split()) for m in body.get("messages") or []
        )
        with self.state.lock:
            self.state.counts["chat_ok"] += 1
        reply = chat_completion_body(key, body.get("model"), text, prompt_tokens, len(text.split()))
        self._send(200, reply)

    def _echo(self) -> str:
        """What a misbehaving server leaks: the Authorization header it received."""
        return f" (received {self.headers.get('Authorization')})" if self.cfg.echo_auth else ""

    def _inject(self, fault: str) -> None:
        if fault == "429":
            self._send(
                429,
                {"error": {"message": "rate limited (injected)" + self._echo()}},
                headers={"Retry-After": f"{self.cfg.retry_after_s:g}"},
            )
        elif fault == "500":
            self._send(500, {"error": {"message": "server error (injected)" + self._echo()}})
        elif fault == "malformed":
            self._send(200, None, raw=b'{"choices": [{"message": {"content": "trunc')
        else:  # hang: stall, then drop the connection without a response
            time.sleep(self.cfg.hang_s)
            self.close_connection = True

    def _embeddings(self, body: dict[str, Any]) -> None:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        key = prompt_key([{"role": "embed", "content": t} for t in texts])
        with self.state.lock:
            self.state.counts["embed_requests"] += 1
            self.state.counts["embed_texts"] += len(texts)
            self.state.per_batch[key] += 1
            attempt = self.state.per_batch[key]
        u = _unit(self.cfg.seed, "embed-fault", key)
        live = self.cfg.embed_transient == 0 or attempt <= self.cfg.embed_transient
        if live and u < self.cfg.embed_rate_500:
            with self.state.lock:
                self.state.counts["injected_embed"] += 1
            self._send(
                500, {"error": {"message": "embedding server error (injected)" + self._echo()}}
            )
            return
        bad = live and u < self.cfg.embed_rate_500 + self.cfg.embed_rate_bad
        with self.state.lock:
            self.state.counts["injected_embed_bad" if bad else "embed_ok"] += 1
        if bad and self.cfg.embed_bad == "error":  # a 200 whose body is an error, not embeddings
            self._send(200, {"error": {"message": "embedding model overloaded (injected)"}})
            return
        vectors = [
            [_unit(self.cfg.seed, "embed", str(t), str(d)) - 0.5 for d in range(self.cfg.embed_dim)]
            for t in texts
        ]
        if bad and self.cfg.embed_bad in ("nan", "inf"):
            vectors[-1][0] = float(self.cfg.embed_bad)  # json.dumps writes NaN / Infinity
        elif bad and self.cfg.embed_bad == "dim":
            vectors = [v[: max(1, self.cfg.embed_dim // 2)] for v in vectors]
        elif bad:  # count
            vectors = vectors[:-1]
        tokens = sum(len(str(t).split()) for t in texts)
        self._send(200, embeddings_body(vectors, body.get("model"), tokens))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 drops SYNs when dozens of clients connect at once


class FaultServer:
    """The server in a background thread: ``with FaultServer(FaultConfig(...)) as srv: srv.url``."""

    def __init__(
        self, config: FaultConfig | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.httpd = _Server((host, port), _Handler)
        self.httpd.fault_config = config or FaultConfig()  # type: ignore[attr-defined]
        self.httpd.state = _State()  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def stats(self, detail: bool = False) -> dict[str, Any]:
        return self.httpd.state.snapshot(detail)  # type: ignore[attr-defined]

    def start(self) -> FaultServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    # One flag per FaultConfig field (rate_429 -> --rate-429); booleans take 0/1.
    for f in dataclasses.fields(FaultConfig):
        kind = type(f.default)
        flags = [f"--{f.name.replace('_', '-')}"]
        if f.name == "retry_after_s":
            flags.append("--retry-after")  # the flag's older name
        parser.add_argument(
            *flags,
            dest=f.name,
            default=f.default,
            type=(lambda v: v.lower() in ("1", "true")) if kind is bool else kind,
            choices=EMBED_BAD if f.name == "embed_bad" else None,
        )
    args = vars(parser.parse_args(argv))
    host, port = args.pop("host"), args.pop("port")
    config = FaultConfig(**args)
    server = FaultServer(config, host=host, port=port)
    print(f"fault server on {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
