"""Request / response types and errors shared by every backend."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completion request.

    ``choices`` asks the backend to constrain the output to one of the given
    strings (grammar, guided decoding or logit bias, as the backend allows);
    ``json_output`` asks for a JSON object; ``json_schema`` (a JSON Schema, serialised) narrows it to
    objects of that schema (a grammar on llama.cpp, ``response_format: json_schema`` on OpenAI-compatible
    servers with ``json_mode``, guided JSON on vLLM). Backends that cannot constrain ignore them and the
    caller parses, counting failures.
    """

    messages: tuple[tuple[str, str], ...]  # (role, content) pairs
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None
    json_output: bool = False
    json_schema: str | None = None  # a JSON Schema document; only read with json_output

    @classmethod
    def user(cls, prompt: str, system: str | None = None, **params: Any) -> ChatRequest:
        messages = ((("system", system),) if system else ()) + (("user", prompt),)
        return cls(messages=messages, **params)

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def cache_key(self, model_id: str) -> str:
        """Hash of the model id, the messages and every generation parameter."""
        payload = {"kind": "chat", "model": model_id, **asdict(self)}
        if payload["json_schema"] is None:  # keys of requests without a schema stay as they were
            del payload["json_schema"]
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @property
    def cacheable(self) -> bool:
        """Sampled calls are only reproducible, hence cacheable, with a seed."""
        return self.temperature == 0 or self.seed is not None


@dataclass(frozen=True)
class LogprobRequest:
    """Score ``text`` as a continuation of ``prefix``: the sum of its tokens' log-probabilities.

    Used by diagnostics (SS_θ), never to generate; only backends with a ``logprob`` method serve it.
    """

    prefix: str
    text: str

    def cache_key(self, model_id: str) -> str:
        payload = {"kind": "logprob", "model": model_id, "prefix": self.prefix, "text": self.text}
        return hashlib.sha256(
            json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        ).hexdigest()


@dataclass
class Logprob:
    """Total log-probability of the scored text and its token count; ``error`` when the call failed."""

    logprob: float = 0.0
    tokens: int = 0
    cached: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Completion:
    """A completion with token usage. ``error`` is set when every retry failed."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    error: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def reached_cap(self, cap: int) -> bool:
        """The reply stopped at its output cap ``cap``: the backend says so (finish_reason
        "length") or it used every token it was allowed."""
        return self.extra.get("finish_reason") == "length" or self.completion_tokens >= cap


class BackendError(Exception):
    """A backend call failed. ``retryable`` errors are retried with backoff."""

    def __init__(
        self,
        message: str,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


class ConfigError(Exception):
    """A user configuration mistake; the message names the setting to change."""


class RunAborted(BaseException):
    """Ends the whole run at once: every later call would fail the same way (a rejected key, an
    unwritable cache). A BaseException, so no ``except Exception`` in a memory or in the runner's
    per-sample guards swallows it; the command prints the message and marks the run incomplete."""


class AuthenticationFailed(RunAborted):
    """The server answered 401/403: the key is missing, wrong or lacks access."""


class CacheUnavailable(RunAborted):
    """The call cache could not be written (disk full, file replaced, permissions)."""


class DeadlineExceeded(BackendError):
    """The run's deadline (``eval.deadline_s``) has passed: the call was not made."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


class BudgetExceeded(BackendError):
    """The run's budget (``budget.usd`` / ``budget.calls``) is spent: the call was not made."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


AUTH_STATUS = (401, 403)


def weights_load_s(backend: object) -> float:
    """Seconds an embedded backend has spent loading its weights so far (``load_s``; 0 for others)."""
    return float(getattr(backend, "load_s", 0.0) or 0.0)


def loading_apart(backend: object, call: Any, loads: list[float]) -> Any:
    """``call()``, appending to ``loads`` the seconds the backend spent loading its weights during
    it (a call's latency leaves them out: they are metrics.json ``model_load_s``)."""
    before = weights_load_s(backend)
    try:
        return call()
    finally:
        loads.append(weights_load_s(backend) - before)
