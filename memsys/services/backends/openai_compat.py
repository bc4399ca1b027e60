"""OpenAI-compatible HTTP backends (OpenAI, vLLM's and llama.cpp's servers) over ``http.client``.

Every transport or protocol problem becomes a ``BackendError``: 429, 408, 409 and 5xx,
timeouts, connection errors and malformed bodies are retryable (429 carries the
server's Retry-After); other 4xx are not. The same rules hold for every endpoint: a 200 whose
body is an error or lacks the answer (``choices`` of a chat reply, ``data`` of an embeddings
reply) is retryable on ``/chat/completions`` and ``/embeddings`` alike.
The API key is read from the environment variable named in the config and only ever lives in the
HTTP client's headers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import typing
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.services.backends.http_client import (  # noqa: F401 (re-exported)
    HttpClient,
    error_for_status,
    parse_retry_after,
    tls_context,
)
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.secrets import register_secret_env
from memharness.memsys.services.types import BackendError, ChatRequest, Completion, ConfigError
from memharness.memsys.settings import Check, EnvVarName, NonEmpty, Range

Structured = Literal["none", "grammar", "guided_choice", "logit_bias", "json_schema"]
STRUCTURED_MODES = typing.get_args(Structured)
HttpUrl = Annotated[
    str,
    Check(
        lambda v: isinstance(v, str) and v.startswith(("http://", "https://")),
        "an http:// or https:// URL (the server's /v1 root)",
    ),
]
KeyEnv = Annotated[str | None, EnvVarName()]
Seconds = Annotated[float, Range(0, lo_open=True)]
# httpx logs every request at INFO; thousands of lines per run drown the progress bars.
logging.getLogger("httpx").setLevel(logging.WARNING)


def read_api_key(env_name: str | None, setting: str) -> str | None:
    """The key from ``$env_name``; None when no key is configured (a local server)."""
    if not env_name:
        return None
    register_secret_env(env_name)  # its value is masked in everything the harness writes or logs
    key = os.environ.get(env_name)
    if not key:
        raise ConfigError(
            f"environment variable {env_name} is not set ({setting}={env_name}); export it, "
            f"or set {setting}=null for a server without authentication"
        )
    return key


class OpenAIBackend:
    """Chat completions over an OpenAI-compatible ``/chat/completions`` endpoint.

    ``structured`` picks how ``ChatRequest.choices`` is enforced: ``grammar``
    (llama.cpp server GBNF), ``guided_choice`` (vLLM), ``logit_bias`` (OpenAI;
    token ids from ``logit_bias_encoding``), ``json_schema`` (an enum in a strict
    schema) or ``none`` (the caller parses and counts failures).
    """

    max_concurrency = None

    def __init__(
        self,
        model: Annotated[str, NonEmpty()],
        base_url: HttpUrl = "https://api.openai.com/v1",
        api_key_env: KeyEnv = "OPENAI_API_KEY",
        timeout_s: Seconds = 120.0,
        structured: Structured = "logit_bias",
        json_mode: bool = True,
        logit_bias_encoding: Annotated[str, NonEmpty()] = "cl100k_base",
        check_connection: bool = True,
        pool_size: Annotated[int, Range(1)] = 64,
        model_id: str | None = None,
        extra_body: dict[str, Any] | None = None,
        *,
        setting_prefix: str = "llm.backend",
    ) -> None:
        # setting_prefix: where this backend's settings live (judge.backend for a judge), so every
        # error names the setting to change; passed by the factory, not a config key
        if structured not in STRUCTURED_MODES:
            raise ConfigError(
                f"{setting_prefix}.structured={structured!r}; expected one of {STRUCTURED_MODES}"
            )
        self.model = model
        # Cache identity: the same model name behind another server, another constraint mode or other
        # extra request fields gives other replies, so those settings are part of the default id.
        self.model_id = (
            model_id or f"openai:{model}@{_settings_hash(base_url, structured, extra_body or {})}"
        )
        self.structured = structured
        self.json_mode = json_mode
        self.logit_bias_encoding = logit_bias_encoding
        self.extra_body = dict(extra_body or {})
        key = read_api_key(api_key_env, f"{setting_prefix}.api_key_env")
        self._http = HttpClient(base_url, key, timeout_s, pool_size, f"{setting_prefix}.base_url")
        if check_connection:
            self._http.check_reachable()

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={self._http.base_url!r})"

    @property
    def base_url(self) -> str:
        """The server's /v1 root (the factory shares one request budget per server)."""
        return self._http.base_url

    def set_deadline(self, deadline: Deadline | None) -> None:
        """Cut requests in flight at the run's deadline and make none after it."""
        self._http.deadline = deadline

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body for one request, including the structured-output fields."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.message_dicts(),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            **self.extra_body,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.stop:
            body["stop"] = list(request.stop)
        if request.choices:
            body.update(self._choice_fields(tuple(request.choices), request.max_tokens))
        elif request.json_output and self.json_mode:
            body["response_format"] = (
                {
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "schema": json.loads(request.json_schema)},
                }
                if request.json_schema
                else {"type": "json_object"}
            )
        return body

    def _choice_fields(self, choices: tuple[str, ...], max_tokens: int) -> dict[str, Any]:
        if self.structured == "grammar":
            alternatives = " | ".join(json.dumps(c) for c in choices)
            return {"grammar": f"root ::= {alternatives}"}
        if self.structured == "guided_choice":
            return {"guided_choice": list(choices)}
        if self.structured == "json_schema":
            schema = {
                "type": "object",
                "properties": {"answer": {"type": "string", "enum": list(choices)}},
                "required": ["answer"],
                "additionalProperties": False,
            }
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "choice", "strict": True, "schema": schema},
                }
            }
        if self.structured == "logit_bias":
            return _logit_bias_fields(choices, self.logit_bias_encoding, max_tokens)
        return {}

    def chat(self, request: ChatRequest) -> Completion:
        data = self._http.post("/chat/completions", self.payload(request))
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise unusable_reply(
                f"{self._http.base_url}/chat/completions", data, "choices[0].message.content"
            ) from None
        if request.choices and self.structured == "json_schema":
            text = _unwrap_choice(text)
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            extra={"finish_reason": data["choices"][0].get("finish_reason")},
        )

    def close(self) -> None:
        self._http.close()


def unusable_reply(where: str, data: Any, wanted: str) -> BackendError:
    """A 200 that is no answer (an error body, or without ``wanted``): retried like a 5xx."""
    error = data.get("error") if isinstance(data, dict) else None
    detail = f"an error body: {error}" if error else f"without {wanted}: {data}"
    return BackendError(f"response from {where} is {detail}"[:300], retryable=True, status=200)


def _settings_hash(*settings: Any) -> str:
    """A short stable hash of the request-shaping settings (part of a backend's cache identity)."""
    blob = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]


def _logit_bias_fields(choices: tuple[str, ...], encoding: str, max_tokens: int) -> dict[str, Any]:
    """Push the first token of each choice to the top and cap the length at the longest choice."""
    from memharness.memsys.services.tokens import get_tokenizer

    tok = get_tokenizer(encoding)
    encoded = [tok.encode(c) for c in choices]
    bias = {str(ids[0]): 100 for ids in encoded if ids}
    return {"logit_bias": bias, "max_tokens": min(max_tokens, max(len(ids) for ids in encoded))}


def _unwrap_choice(text: str) -> str:
    """``{"answer": "1"}`` -> ``1``; anything else is returned as is for the caller to parse."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return str(value["answer"]) if isinstance(value, dict) and "answer" in value else text


class OpenAIEmbedBackend:
    """Embeddings over ``/embeddings`` (text-embedding-3-small/-large, vLLM, ...).

    One attempt per ``embed`` call; the ``Embedder`` facade retries by ``retry_policy`` (built
    from ``max_retries`` / ``base_delay_s``) and counts retries and failures per stage."""

    def __init__(
        self,
        model: Annotated[str, NonEmpty()] = "text-embedding-3-small",
        base_url: HttpUrl = "https://api.openai.com/v1",
        api_key_env: KeyEnv = "OPENAI_API_KEY",
        dimensions: Annotated[int, Range(1)] | None = None,
        timeout_s: Seconds = 60.0,
        max_retries: Annotated[int, Range(0)] = 5,
        base_delay_s: Annotated[float, Range(0)] = 0.5,
        check_connection: bool = True,
        model_id: str | None = None,
        pool_size: Annotated[int, Range(1)] = 64,
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        self.model_id = model_id or (
            f"openai:{model}"
            + (f":{dimensions}" if dimensions else "")
            + f"@{_settings_hash(base_url)}"
        )
        self.max_retries = max_retries
        self.base_delay_s = base_delay_s
        key = read_api_key(api_key_env, "embedder.backend.api_key_env")
        self._http = HttpClient(base_url, key, timeout_s, pool_size, "embedder.backend.base_url")
        if check_connection:
            self._http.check_reachable()

    def __repr__(self) -> str:
        return f"OpenAIEmbedBackend(model={self.model!r}, base_url={self._http.base_url!r})"

    @property
    def base_url(self) -> str:
        """The server's /v1 root (the factory shares one request budget per server)."""
        return self._http.base_url

    @property
    def retry_policy(self) -> RetryPolicy:
        """How the Embedder facade retries this backend (the server's Retry-After is a floor)."""
        return RetryPolicy(
            max_retries=self.max_retries, base_delay_s=self.base_delay_s, max_delay_s=60.0
        )

    def set_deadline(self, deadline: Deadline | None) -> None:
        self._http.deadline = deadline

    def embed(self, texts: list[str]) -> np.ndarray:
        payload: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        data = self._http.post("/embeddings", payload)
        where = f"{self._http.base_url}/embeddings"
        try:
            rows = sorted(data["data"], key=lambda d: d["index"])
            vectors = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError):
            raise unusable_reply(where, data, "data[].embedding of equal lengths") from None
        return vectors  # the Embedder checks the count, the dimension and the values (any backend)

    def close(self) -> None:
        self._http.close()
