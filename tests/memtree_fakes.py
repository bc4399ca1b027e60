"""Seeded test doubles for the MemTree unit tests: a bag-of-words embedder over hand-made
word vectors and an LLM that writes a traceable merge of its two inputs."""

from __future__ import annotations

import re

import numpy as np
from memharness.memsys.memtree.memory import MemTree
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.testing.doubles import WordTokenizer
from memharness.memsys.types import Unit, content_id

# Test prompt: "<n>|<current>|<new>" so the fake LLM can read its inputs back.
PROMPT = "{n_children}|{current_content}|{new_content}"


def unit(text: str, position: int = 0) -> Unit:
    return Unit(
        id=content_id("t", position, text, prefix="u-"), text=text, source_id="s", position=position
    )


class WordEmbedder:
    """embed(text) = normalised sum of the vectors of the known words in ``text``."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = {w: np.asarray(v, dtype=np.float32) for w, v in table.items()}
        self.dim = len(next(iter(self.table.values())))
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = []
        for t in texts:
            v = sum(
                (self.table[w] for w in re.findall(r"[a-z]+\d*", t) if w in self.table),
                np.zeros(self.dim, np.float32),
            )
            norm = np.linalg.norm(v)
            out.append(v / norm if norm > 0 else v)
        return np.stack(out).astype(np.float32)


class MergeLLM:
    """Answers the PROMPT template with "(current+new#n)"; records every batch it receives."""

    def __init__(self, fail_when: str | None = None) -> None:
        self.batches: list[list[ChatRequest]] = []
        self.fail_when = fail_when

    def complete(self, requests: list[ChatRequest]) -> list[Completion]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            n, cur, new = r.messages[-1][1].split("|", 2)
            if self.fail_when is not None and self.fail_when in cur:
                out.append(Completion(text="", error="BackendError: boom"))
            else:
                out.append(Completion(text=f"({cur}+{new}#{n})"))
        return out

    @property
    def calls(self) -> int:
        return sum(len(b) for b in self.batches)


def make_tree(table: dict[str, list[float]], llm: MergeLLM | None = None, **kw) -> MemTree:
    kw.setdefault("aggregate_prompt", PROMPT)
    return MemTree(
        llm=llm or MergeLLM(), embedder=WordEmbedder(table), tokenizer=WordTokenizer(), **kw
    )
