"""The HTTP transport of the OpenAI-compatible backends: pooled keep-alive connections over the
standard library's ``http.client``, every failure a ``BackendError``.

Not httpx: its request costs about 1.2 ms of CPU against 0.35 ms here, and a run's requests share
two cores and the GIL, so that overhead delayed every reply of a concurrent batch (``make bench``'s
concurrency efficiency).
"""

from __future__ import annotations

import email.utils
import functools
import http.client
import json
import select
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.types import BackendError, ConfigError

_RETRYABLE_STATUS = {408, 409, 425, 429}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def error_for_status(
    response: Any, base_url: str, path: str = "", key_setting: str = "api_key_env"
) -> BackendError:
    """Map an HTTP error response (``status_code``, ``text``, ``headers``) to a BackendError
    (retryable or not) naming the endpoint."""
    status = response.status_code
    retryable = status in _RETRYABLE_STATUS or status >= 500
    detail = " ".join(response.text[:300].split())
    hint = (
        (
            f" (the server rejected the key from the environment variable named by {key_setting}, "
            "or the key lacks access to this endpoint)"
        )
        if status in (401, 403)
        else ""
    )
    return BackendError(
        f"HTTP {status} from {base_url}{path}{hint}: {detail}",
        retryable=retryable,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        status=status,
    )


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process, shared by every client: building one loads the CA
    bundle (tens to hundreds of milliseconds), which each backend of each run paid before."""
    import httpx  # its bundle of CA certificates (certifi), as before

    return httpx.create_ssl_context()


class _Reply:
    """What a request came back with: status, headers, body."""

    def __init__(self, status: int, headers: http.client.HTTPMessage, body: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, body

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


def _proxy_for(parts: urllib.parse.SplitResult) -> tuple[str, int] | None:
    """The (host, port) of the environment's proxy for this URL, or None (none set, or NO_PROXY)."""
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    where = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return where.hostname or "", where.port or 80


def _dropped(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle kept-alive connection is unusable: closed by the server (readable at EOF) or
    holding bytes nobody asked for."""
    if conn.sock is None:
        return True
    poller = select.poll()
    poller.register(conn.sock, select.POLLIN)
    return bool(poller.poll(0))


class HttpClient:
    """Kept-alive connections to one server that post JSON and raise BackendError on any failure;
    at most ``pool`` open at once."""

    def __init__(
        self, base_url: str, api_key: str | None, timeout_s: float, pool: int, setting: str
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.setting = setting
        self.timeout_s = timeout_s
        self.deadline: Deadline | None = (
            None  # set by the factory: requests end by the run's deadline
        )
        parts = urllib.parse.urlsplit(self.base_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        # A proxy from the environment (HTTP(S)_PROXY, NO_PROXY), as httpx honoured: an https server
        # through a CONNECT tunnel, an http one by its absolute URL on the proxy's connection.
        self._proxy = _proxy_for(parts)
        if self._proxy is not None and not self._https:
            self._prefix = f"http://{parts.netloc}{self._prefix}"
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "memharness",
            **({"Authorization": f"Bearer {api_key}"} if api_key else {}),
        }
        self._idle: list[
            http.client.HTTPConnection
        ] = []  # kept-alive connections, last in first out
        self._lock = threading.Lock()
        self._open = threading.BoundedSemaphore(pool)

    def _connect(self, timeout: float, connect_timeout: float) -> http.client.HTTPConnection:
        host, port = self._proxy or (self._host, self._port)
        if self._https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=connect_timeout, context=tls_context()
            )
            if self._proxy is not None:
                conn.set_tunnel(self._host, self._port)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=connect_timeout)
        conn.connect()
        # Headers and body go out as two writes: without TCP_NODELAY the body may wait for an ACK.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sock.settimeout(timeout)
        return conn

    def _request(
        self, method: str, path: str, body: bytes | None, timeout: float, connect_timeout: float
    ) -> _Reply:
        """One request on a kept-alive connection, or a new one if none is idle and still open."""
        with self._open:
            conn = None
            with self._lock:
                while self._idle and conn is None:
                    conn = self._idle.pop()
                    if _dropped(conn):  # the server closed it while it was idle
                        conn.close()
                        conn = None
            try:
                if conn is None:
                    conn = self._connect(timeout, connect_timeout)
                else:
                    conn.sock.settimeout(timeout)
                conn.request(method, self._prefix + path, body=body, headers=self._headers)
                response = conn.getresponse()
                reply = _Reply(response.status, response.headers, response.read())
            except BaseException:
                if conn is not None:
                    conn.close()
                raise
            if response.will_close:
                conn.close()
            else:
                with self._lock:
                    self._idle.append(conn)
            return reply

    def _send(self, method: str, path: str, body: bytes | None, timeout_s: float) -> _Reply:
        connect_s = max(timeout_s, 5.0)  # a busy server may be slow to accept
        if self.deadline is not None:
            self.deadline.check(f"{method} {self.base_url}{path}")
            timeout_s, connect_s = self.deadline.cap(timeout_s), self.deadline.cap(connect_s)
        return self._request(method, path, body, timeout_s, connect_s)

    def check_reachable(self) -> None:
        """Fail fast with a ConfigError if the server cannot be reached or rejects the key."""
        try:
            response = self._request("GET", "/models", None, 10.0, 10.0)
        except (OSError, http.client.HTTPException) as err:
            raise ConfigError(
                f"cannot reach the server at {self.setting}={self.base_url}: "
                f"{type(err).__name__}: {err}"
            ) from None
        if response.status_code in (401, 403):
            raise ConfigError(
                f"the server at {self.setting}={self.base_url} rejected the API key "
                f"(HTTP {response.status_code})"
            )

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode("utf-8")
        try:
            response = self._send("POST", path, body, self.timeout_s)
        except TimeoutError as err:
            raise BackendError(
                f"timed out calling {self.base_url}{path}: {type(err).__name__}", retryable=True
            ) from None
        except (OSError, http.client.HTTPException) as err:  # refused/reset, protocol errors
            raise BackendError(
                f"connection error calling {self.base_url}{path} ({self.setting}): "
                f"{type(err).__name__}: {err}",
                retryable=True,
            ) from None
        if response.status_code >= 400:
            raise error_for_status(
                response, self.base_url, path, self.setting.replace("base_url", "api_key_env")
            )
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BackendError(
                f"malformed JSON body from {self.base_url}{path}: {response.text[:120]!r}",
                retryable=True,
                status=response.status_code,
            ) from None

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
