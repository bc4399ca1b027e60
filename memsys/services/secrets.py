"""Keep API keys out of run folders, logs and config snapshots.

Configs only ever name the environment variable holding a key (``api_key_env``). Every variable
named that way is registered (``register_secret_env``) and its value is masked by ``redact`` /
``redact_text`` wherever the harness writes or logs, as are values of variables whose names look
secret, key-shaped strings, and any value registered with ``register_secret_value`` (a key pasted
where a variable name was expected). ``install_log_redaction`` masks every log record, tracebacks
included, from the moment it is created.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback
from typing import Any

REDACTED = "***"
_SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|token|password|authorization|bearer)", re.IGNORECASE
)
_KEY_SHAPED = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|hf_[A-Za-z0-9]{8,})")
_HARMLESS_NAMES = {"api_key_env", "max_tokens", "prompt_tokens", "completion_tokens", "tokenizer"}
_MIN_LEN = 8  # shorter "secrets" would mask ordinary words

_lock = threading.Lock()
_secret_envs: set[str] = set()
_secret_values: set[str] = set()


def register_secret_env(name: str) -> None:
    """Mask the value of environment variable ``name`` wherever the harness writes or logs."""
    with _lock:
        _secret_envs.add(name)


def register_secret_value(value: str) -> None:
    """Mask this literal value (e.g. a key given where a variable name was expected)."""
    if value and len(value) >= _MIN_LEN:
        with _lock:
            _secret_values.add(value)


_memo: tuple[Any, list[str]] | None = None  # (the state it was computed from, the values)


def secret_values() -> list[str]:
    """Values to mask, longest first: registered values and variables, and secret-named variables.

    Every reply is redacted, so this runs once per backend call: the list is recomputed only when
    the environment or the registrations changed (decoding and matching every variable per call
    cost more than the rest of a call's harness work)."""
    global _memo
    raw = getattr(os.environ, "_data", None)  # CPython's undecoded mapping, compared cheaply
    with _lock:
        if (
            isinstance(raw, dict)
            and _memo is not None
            and _memo[0] == (raw, _secret_envs, _secret_values)  # dict and set equality, in C
        ):
            return list(_memo[1])
        state = (
            dict(raw) if isinstance(raw, dict) else None,
            set(_secret_envs),
            set(_secret_values),
        )
        names, literal = set(_secret_envs), set(_secret_values)
    values = {
        v
        for k, v in os.environ.items()
        if (k in names or _SECRET_NAME.search(k)) and len(v) >= _MIN_LEN
    }
    result = sorted(values | literal, key=len, reverse=True)
    with _lock:
        _memo = (state, result)
    return list(result)


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    """Replace secret values and key-shaped strings in ``text``."""
    for value in secrets if secrets is not None else secret_values():
        text = text.replace(value, REDACTED)
    return _KEY_SHAPED.sub(REDACTED, text)


def redact(obj: Any, secrets: list[str] | None = None) -> Any:
    """A copy of a plain dict/list/str tree with secret-named fields and secret values masked."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, dict):
        return {
            k: (REDACTED if _is_secret_field(k, v) else redact(v, secrets)) for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v, secrets) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    return obj


def _is_secret_field(name: Any, value: Any) -> bool:
    name = str(name)
    return (
        name not in _HARMLESS_NAMES
        and not name.endswith(("_env", "_tokens"))
        and bool(_SECRET_NAME.search(name))
        and isinstance(value, str)
        and bool(value)
    )


def redact_record(record: logging.LogRecord) -> None:
    """Mask secrets in a record's message and in its formatted traceback, in place."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed format call: leave it to the handler's error reporting
        return
    clean = redact_text(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and not record.exc_text:
        record.exc_text = redact_text(
            "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        )
    if record.stack_info:
        record.stack_info = redact_text(record.stack_info)


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in every record's final message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


_factory_installed = False


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Mask secrets in every log record from now on (a record factory, which survives logging
    reconfiguration) and attach ``RedactingFilter`` to the handlers of ``logger`` (default: root)."""
    global _factory_installed
    with _lock:
        if not _factory_installed:
            previous = logging.getLogRecordFactory()

            def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                record = previous(*args, **kwargs)
                redact_record(record)
                return record

            logging.setLogRecordFactory(factory)
            _factory_installed = True
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def looks_like_key(value: str) -> bool:
    """True for a string that is not an environment variable name or looks like an API key."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        return True
    if (
        re.match(r"(sk|pk|hf|ghp|gho|xox[abp]|AIza)[-_A-Za-z0-9]{8,}", value)
        and not value.isupper()
    ):
        return True
    mixed = (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    )
    return len(value) >= 20 and mixed


def env_name_problems(value: Any, nullable: bool = False) -> list[str]:
    """The checker's rule for an ``api_key_env``-like setting (``settings.EnvVarName``): a variable's
    NAME, registered so that its value is redacted; anything else is refused without being echoed
    (it may be the key itself) and is redacted from then on."""
    if named := isinstance(value, str) and value and not looks_like_key(value):
        register_secret_env(value)
    if named or (value is None and nullable):
        return []
    if isinstance(value, str) and value:
        register_secret_value(value)
    return [
        ": expected the NAME of an environment variable that holds the key (such as OPENAI_API_KEY); "
        "the value given is not a variable name and may be the key itself, so it is not shown. "
        "Export the key in a variable and pass that variable's name"
        + (", or null for a server without authentication" if nullable else "")
    ]
