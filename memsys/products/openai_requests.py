"""OpenAI request bodies as harness requests: the fields the endpoint serves, their ranges checked."""

from __future__ import annotations

import base64
import json
import math
from collections import Counter
from typing import Any

import numpy as np
from memharness.memsys.services.types import ChatRequest

# request fields the endpoint reads; any other is ignored (and counted in ``ignored_params``)
CHAT_FIELDS = {
    "model",
    "messages",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "stop",
    "response_format",
    "n",
    "stream",
    "tools",
    "tool_choice",
}
EMBED_FIELDS = {"model", "input", "encoding_format", "dimensions"}
DEFAULT_MAX_TOKENS = (
    1024  # a request without max_tokens (OpenAI's own default is the model's limit)
)
MAX_TOKENS_CAP = 65536  # the largest max_tokens served (no served model writes more)
MAX_EMBED_INPUTS = 2048  # texts per embeddings request (OpenAI's own limit)


class RequestRefused(ValueError):
    """A request the endpoint cannot honour; answered 400 with this message."""


def message_text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise RequestRefused("only text message parts are served (no images or audio)")
            parts.append(str(part.get("text", "")))
        return "".join(parts)
    raise RequestRefused(f"message content must be a string or a list of parts, got {content!r}")


def chat_request(body: dict[str, Any], ignored: Counter[str]) -> ChatRequest:
    """The harness request for an OpenAI chat-completions body (refusing what cannot be served)."""
    for key in body:
        if key not in CHAT_FIELDS:
            ignored[key] += 1
    if body.get("tools"):
        raise RequestRefused("tool calls are not served by the harness endpoint")
    if body.get("stream"):
        raise RequestRefused("streaming is not served by the harness endpoint")
    whole_number(body.get("n"), "n", 1, 1)  # one choice per request
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestRefused("messages must be a non-empty list")
    pairs = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m:
            raise RequestRefused(f"each message needs a role and content, got {m!r}")
        pairs.append((str(m["role"]), message_text(m.get("content"))))
    fmt = body.get("response_format") or {}
    kind = fmt.get("type", "text") if isinstance(fmt, dict) else fmt
    if kind not in ("text", "json_object", "json_schema"):
        raise RequestRefused(
            f"response_format {kind!r} is not served (text, json_object or json_schema)"
        )
    schema = response_schema(fmt, kind)
    stop = body.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else stop
    if not isinstance(stop, list | tuple) or not all(isinstance(x, str) for x in stop):
        raise RequestRefused("stop must be a string or a list of strings")
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = whole_number(body.get(key), key, 1, MAX_TOKENS_CAP)
    temperature = body.get("temperature")
    if temperature is not None and (
        not isinstance(temperature, int | float)
        or isinstance(temperature, bool)
        or not math.isfinite(temperature)
        or not 0 <= temperature <= 2
    ):
        raise RequestRefused(f"temperature must be a number from 0 to 2, got {temperature!r}")
    seed = body.get("seed")
    if seed is not None:
        whole_number(seed, "seed", -(2**63), 2**63 - 1)
    return ChatRequest(
        messages=tuple(pairs),
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        temperature=1.0 if temperature is None else float(temperature),
        seed=seed,
        stop=tuple(stop),
        json_output=kind in ("json_object", "json_schema"),
        json_schema=json.dumps(schema, sort_keys=True) if schema is not None else None,
    )


def whole_number(value: Any, field: str, low: int, high: int) -> int | None:
    """``value`` as an integer in ``[low, high]`` (None stays None); else ``RequestRefused``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RequestRefused(f"{field} must be an integer from {low} to {high}, got {value!r}")
    return value


def response_schema(fmt: Any, kind: str) -> dict[str, Any] | None:
    """The JSON Schema a ``response_format`` asks for: OpenAI's ``{type: json_schema, json_schema:
    {name, schema}}`` or llama.cpp server's ``{type: json_object, schema}``; None for plain JSON."""
    if kind == "json_schema":
        spec = fmt.get("json_schema") if isinstance(fmt, dict) else None
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise RequestRefused("response_format json_schema needs json_schema.schema (an object)")
        return schema
    if kind == "json_object" and isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
        return fmt["schema"]
    return None


def embed_inputs(body: dict[str, Any]) -> list[str]:
    """The texts of an embeddings body (a string or a list of strings; token arrays are refused)."""
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise RequestRefused("input must be a string or a non-empty list of strings")
    if len(texts) > MAX_EMBED_INPUTS:
        raise RequestRefused(f"input has {len(texts)} texts; at most {MAX_EMBED_INPUTS} are served")
    return texts


def encode_vector(vector: np.ndarray, encoding: str) -> Any:
    """One embedding as OpenAI writes it: a float list, or base64 of little-endian float32."""
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]
