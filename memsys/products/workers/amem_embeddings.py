"""A-Mem's Chroma store embedding through the harness endpoint (``/v1/embeddings``).

Run inside ``.venvs/amem`` by the worker; imports chromadb, numpy and openai only when called, so the
module stays importable without the product."""

from __future__ import annotations

from collections import Counter
from typing import Any


def endpoint_embedding_function(
    model: str, base_url: str, api_key: str | None, counts: Counter[str]
) -> type:
    """A Chroma embedding function class that embeds through the harness endpoint.

    It replaces ``SentenceTransformerEmbeddingFunction`` in the product's ``retrievers`` module, so
    the product's own ``ChromaRetriever`` builds it (ignoring its ``model_name``). One request per
    Chroma call (a note added or updated, a query), counted in ``counts`` (failures as
    ``embed_error``)."""
    import numpy as np
    import openai
    from chromadb.api.types import EmbeddingFunction

    # the harness owns deadlines and retries; api_key is the endpoint's token (OPENAI_API_KEY)
    client = openai.OpenAI(
        base_url=base_url, api_key=api_key or "memharness-local", timeout=None, max_retries=0
    )

    class EndpointEmbeddingFunction(EmbeddingFunction):
        def __init__(self, model_name: str = "", **_: Any) -> None:
            self.model = model

        def __call__(self, input: list[str]) -> list[Any]:
            texts = list(input)
            try:
                reply = client.embeddings.create(model=self.model, input=texts)
            except Exception:
                # the product swallows most of these (a skipped evolution, an empty search):
                # counted here so the worker can report them
                counts["embed_error"] += 1
                raise
            counts["embed_requests"] += 1
            counts["embedded_texts"] += len(texts)
            ordered = sorted(reply.data, key=lambda d: d.index)
            return [np.asarray(d.embedding, dtype=np.float32) for d in ordered]

        @staticmethod
        def name() -> str:
            return "memharness_endpoint"

        def get_config(self) -> dict[str, Any]:
            return {"model": self.model}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> EndpointEmbeddingFunction:
            return EndpointEmbeddingFunction()

        def default_space(self) -> str:
            return "cosine"  # what the product's sentence-transformers function declares

    return EndpointEmbeddingFunction
