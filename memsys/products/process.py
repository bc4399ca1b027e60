"""A product worker's process: a minimal environment, its own session, and nothing left behind.

Third-party code runs in the worker, so it gets only what it needs (``worker_env``): ``PATH``,
``HOME``, the locale, the proxy settings (127.0.0.1 always bypasses the proxy), the ``MEMHARNESS_*``
variables whose names do not look like secrets, and what the adapter adds (the endpoint's URL and
token). No API key, ``HF_TOKEN`` or cloud credential reaches it.

The worker starts a new session (``spawn_worker``), so the harness's Ctrl-C does not reach it
half-way through a request and the harness can kill it together with every process it started
(``kill_group``). When the harness itself dies, even by SIGKILL, the worker follows: on Linux the
kernel sends it SIGTERM (``PR_SET_PDEATHSIG``), and the protocol's watchdog (``protocol.py``) kills
its whole group as soon as its parent is gone, either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PASSED = {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME"}
PROXIES = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
LOCAL = "127.0.0.1,localhost"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def worker_env(parent: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment: the safe part of ``parent``, then ``extra``."""
    env = {}
    for name, value in parent.items():
        upper = name.upper()
        harness = upper.startswith("MEMHARNESS_") and not any(w in upper for w in SECRET_WORDS)
        if name in PASSED or upper.startswith("LC_") or upper in PROXIES or harness:
            env[name] = value
    for name in ("NO_PROXY", "no_proxy"):  # the endpoint is local: never through a proxy
        env[name] = ",".join(x for x in (env.get(name), LOCAL) if x)
    env.update(extra)
    return env


def _libc_prctl() -> Any:
    """libc's ``prctl``, looked up once in the parent (no dlopen between fork and exec)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


PRCTL = _libc_prctl()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the harness dies (elsewhere: the watchdog)."""
    with contextlib.suppress(Exception):
        PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn_worker(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, log: Path
) -> subprocess.Popen:
    """Start the worker in its own session, stdin/stdout piped, stderr appended to ``log``.

    The parent-death signal is tied to the thread that forks; it is asked for only from the main
    thread (an episode thread ends before the run does), the watchdog covers the rest."""
    pdeathsig = PRCTL is not None and threading.current_thread() is threading.main_thread()
    with log.open("ab") as err:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=dict(env),
            cwd=str(cwd),
            start_new_session=True,
            preexec_fn=_die_with_parent if pdeathsig else None,  # noqa: PLW1509 - prctl only
        )


def exited(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait up to ``timeout`` s for the worker to exit, leaving it unreaped (its pid, the group's
    id, cannot be reused before ``kill_group``)."""
    until = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped already
            return True
        if time.monotonic() >= until:
            return False
        time.sleep(0.05)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the worker's session group (the worker and whatever it started), then reap it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    proc.wait()
