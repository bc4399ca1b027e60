"""Keep API keys out of run folders, logs and config snapshots.

Configs only ever name the environment variable holding a key (``api_key_env``);
``redact`` is a second line of defence for anything written to disk or logged.
"""
from __future__ import annotations

import logging
import os
import re
from typing import Any

REDACTED = "***"
_SECRET_NAME = re.compile(r"(api[_-]?key|secret|token|password|authorization|bearer)", re.IGNORECASE)
_KEY_SHAPED = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|hf_[A-Za-z0-9]{8,})")
_HARMLESS_NAMES = {"api_key_env", "max_tokens", "prompt_tokens", "completion_tokens", "tokenizer"}


def secret_values() -> list[str]:
    """Values of environment variables whose names look like secrets (longest first)."""
    values = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    """Replace secret env values and key-shaped strings in ``text``."""
    for value in secrets if secrets is not None else secret_values():
        text = text.replace(value, REDACTED)
    return _KEY_SHAPED.sub(REDACTED, text)


def redact(obj: Any, secrets: list[str] | None = None) -> Any:
    """A copy of a plain dict/list/str tree with secret-named fields and secret values masked."""
    secrets = secret_values() if secrets is None else secrets
    if isinstance(obj, dict):
        return {k: (REDACTED if _is_secret_field(k, v) else redact(v, secrets)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact(v, secrets) for v in obj)
    if isinstance(obj, str):
        return redact_text(obj, secrets)
    return obj


def _is_secret_field(name: Any, value: Any) -> bool:
    name = str(name)
    return (name not in _HARMLESS_NAMES and not name.endswith(("_env", "_tokens")) and bool(_SECRET_NAME.search(name))
            and isinstance(value, str) and bool(value))


class RedactingFilter(logging.Filter):
    """A logging filter that masks secrets in every record's final message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Attach ``RedactingFilter`` to every handler of ``logger`` (default: the root logger)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
