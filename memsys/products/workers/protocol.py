"""The line protocol between the harness and a product worker (stdlib only).

A worker is a script run by the product's virtualenv Python. It reads one JSON object per line on
stdin and writes exactly one JSON object per line on stdout (logs go to stderr). Requests:

- ``{"op": "hello"}`` -> ``{"ok": true, "product": str, "version": str, "packages": {name: version},
  "clock": "data" | "wall", "ops": [operation, ...]}`` (``wall``: the product reads the wall clock
  into its prompts; ``ops`` is added by ``serve``: the operations this worker answers)
- ``{"op": "reset"}`` -> ``{"ok": true}``: forget everything (a new episode)
- ``{"op": "ingest", "units": [{"id", "text", "speaker", "timestamp", "session"}]}``
  -> ``{"ok": true, "added": int, "failures": {kind: count}}``
- ``{"op": "search", "query": str, "k": int}``
  -> ``{"ok": true, "items": [{"text": str, "score": float, "source_ids": [unit id, ...]}]}``
- ``{"op": "forget", "unit_ids": [unit id, ...], "units": [remaining units, as in ingest]}``
  -> ``{"ok": true, "deleted": int, "units_reinserted": int, "failures": {kind: count}}``: the
  product's own delete of everything derived from those units; ``units`` (the units still held)
  lets a worker add again the other units of what it had to delete (optional operation)
- ``{"op": "stats"}`` -> ``{"ok": true, "stats": {name: number}}``
- ``{"op": "close"}`` -> ``{"ok": true}``, then the worker exits.

A failed request answers ``{"ok": false, "error": "<one line>"}`` and the worker keeps serving.
Every request carries an ``"id"``; its reply carries the same ``"id"``, so the harness never takes a
stray line on stdout (a library's print, native code, a child process) for the reply it waits for.

The harness starts the worker in a session of its own with ``MEMHARNESS_WATCHDOG=1``: then ``serve``
kills the worker's whole process group (the worker and every process it started) as soon as the
harness is gone (its parent changes) or sends SIGTERM, even while a request is being computed.

The environment is minimal (no API key or credential of the user's reaches the product) and names
the endpoint and the store: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` (the endpoint's bearer token:
every request to it must send ``Authorization: Bearer <token>``),
``MEMHARNESS_LLM_MODEL``, ``MEMHARNESS_EMBED_MODEL``, ``MEMHARNESS_EMBED_DIM``,
``MEMHARNESS_STORE_DIR`` (an empty folder the worker may write; nothing outside it), and
``MEMHARNESS_PRODUCT_OPTIONS`` (a JSON object: the memory config's ``options``, for the worker).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]
OPS = ("hello", "reset", "ingest", "search", "forget", "stats", "close")


def handlers_of(worker: Any) -> dict[str, Handler]:
    """The worker's methods named after the operations (``close`` is served by ``serve`` itself;
    ``forget`` only where the worker has one: the adapter then rebuilds instead)."""
    return {op: getattr(worker, op) for op in OPS if op != "close" and hasattr(worker, op)}


def serve(handlers: dict[str, Handler], stdin: Any = None, stdout: Any = None) -> None:
    """Answer requests line by line until ``close`` or end of input. Under the watchdog, input
    that ends without ``close`` means the harness is gone: the whole group is killed."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    watched = os.environ.get("MEMHARNESS_WATCHDOG") == "1"
    if watched:
        start_watchdog()
    for line in stdin:
        if not line.strip():
            continue
        reply = handle_line(handlers, line)
        stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
        stdout.flush()
        if reply.get("closing"):
            return
    if watched:  # stdin closed under us: the harness died (or dropped us); take our children along
        kill_group()


def kill_group(*_: Any) -> None:
    """SIGKILL this process's group: the worker and every process it started."""
    os.killpg(os.getpgid(0), signal.SIGKILL)


def start_watchdog(poll_s: float = 0.2) -> None:
    """Kill this process group when the parent dies or SIGTERM comes (the harness was killed)."""

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        kill_group()

    signal.signal(signal.SIGTERM, kill_group)
    threading.Thread(target=watch, name="watchdog", daemon=True).start()


def handle_line(handlers: dict[str, Handler], line: str) -> dict[str, Any]:
    """One request -> one reply carrying the request's ``id``; any exception becomes a one-line
    error reply."""
    try:
        request = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"ok": False, "error": f"request is not JSON: {exc}"}
    if isinstance(request, dict) and "id" in request:
        return {**answer(handlers, request), "id": request["id"]}
    return answer(handlers, request)


def answer(handlers: dict[str, Handler], request: Any) -> dict[str, Any]:
    """The reply to one parsed request (without its id)."""
    op = request.get("op") if isinstance(request, dict) else None
    if op == "close":
        return {"ok": True, "closing": True}
    if op not in handlers:
        return {"ok": False, "error": f"unknown op {op!r}; this worker serves {sorted(handlers)}"}
    try:
        reply = handlers[op](request)
    except Exception as exc:  # the worker must keep serving; the harness counts the failure
        traceback.print_exc(file=sys.stderr)
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        return {"ok": False, "error": message[:500]}
    if op == "hello":  # the operations served, so the harness knows whether ``forget`` is there
        reply = {**reply, "ops": sorted({*handlers, "close"})}
    return {"ok": True, **reply}
