"""The OpenAI-compatible reply bodies the harness's own servers send: the product endpoint
(``memsys/products/endpoint.py``) and the fault-injecting test server. One shape for both, so a
client that reads one reads the other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def chat_completion_body(
    ident: str,
    model: str | None,
    text: str,
    prompt_tokens: int,
    completion_tokens: int,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A one-choice ``chat.completion`` (``created`` is 0: no wall clock); ``finish_reason`` is
    "length" when the reply was cut at its ``max_tokens``, as OpenAI reports it."""
    return {
        "id": f"chatcmpl-{ident}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def embeddings_body(
    vectors: Sequence[Any], model: str | None, prompt_tokens: int
) -> dict[str, Any]:
    """An embeddings ``list``, one item per vector in input order (each already JSON-ready)."""
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ],
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }
