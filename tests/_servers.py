"""Start/stop local OpenAI-compatible servers for tests: the fault server and llama.cpp's."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    """Poll ``url`` until it answers 200, the process dies, or the timeout passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before it was ready")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"server at {url} not ready after {timeout_s}s")


def stop(proc: subprocess.Popen) -> None:
    """Terminate the server's process group, then kill it if it lingers."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@contextlib.contextmanager
def serve(
    args: list[str], ready_path: str, port: int, log_path: Path, timeout_s: float
) -> Iterator[str]:
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, *args],
            cwd=REPO,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_ready(f"http://127.0.0.1:{port}{ready_path}", proc, timeout_s)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop(proc)


@contextlib.contextmanager
def fault_server(log_dir: Path, **options: float) -> Iterator[str]:
    """``python -m memharness.memsys.testing.fault_server`` on a free port; yields its /v1 URL."""
    port = free_port()
    args = ["-m", "memharness.memsys.testing.fault_server", "--port", str(port)]
    for name, value in options.items():
        args += [f"--{name.replace('_', '-')}", str(value)]
    with serve(args, "/stats", port, log_dir / f"fault-{port}.log", 30) as url:
        yield url


@contextlib.contextmanager
def rehearsal_backend(log_dir: Path, *options: str) -> Iterator[str]:
    """``memharness test-backend`` (the rehearsal backend) on a free port, stopping itself after
    10 minutes whatever happens to the test; yields its /v1 URL."""
    port = free_port()
    args = ["-m", "memharness.memsys.testing.rehearsal_server", "--port", str(port)]
    args += ["--exit-after", "600", *options]
    with serve(args, "/stats", port, log_dir / f"rehearsal-{port}.log", 30) as url:
        yield url


@contextlib.contextmanager
def llama_server(log_dir: Path, n_ctx: int = 2048) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the bundled SmolLM2 GGUF; yields its /v1 URL."""
    from memharness.memsys.services.backends.embedded_models import bundled_smollm2_path
    from memharness.memsys.services.backends.local import usable_cores

    cores = usable_cores()

    port = free_port()
    args = [
        "-m",
        "llama_cpp.server",
        "--model",
        bundled_smollm2_path(),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--model_alias",
        "smollm2",
        # as the embedded backend: threads for the cores this process may use (its default prompt
        # pass takes every core of the machine, which spins when pytest pins a worker to one)
        "--n_threads",
        str(cores),
        "--n_threads_batch",
        str(cores),
    ]
    with serve(args, "/v1/models", port, log_dir / f"llama-{port}.log", 180) as url:
        yield url


def stats(url: str, detail: bool = False) -> dict:
    root = url.rsplit("/v1", 1)[0]
    return httpx.get(f"{root}/stats" + ("?detail=1" if detail else ""), timeout=5).json()
