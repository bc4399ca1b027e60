"""Test doubles for the RAPTOR tests: planted embeddings, a summariser that echoes its inputs,
a word tokenizer and an identity stand-in for UMAP (so mixtures see the planted geometry)."""

from __future__ import annotations

import re

import numpy as np
from memharness.memsys.raptor.memory import Raptor
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.testing.doubles import WordTokenizer
from memharness.memsys.types import Unit, content_id

WORD = re.compile(r"[a-z]+\d*")
PROMPT = "SUM<{context}>"


def unit(text: str, position: int = 0, source: str = "s") -> Unit:
    return Unit(
        id=content_id("t", source, position, text, prefix="u-"),
        text=text,
        source_id=source,
        position=position,
    )


def units(texts: list[str], source: str = "s") -> list[Unit]:
    return [unit(t, i, source) for i, t in enumerate(texts)]


class PlantedEmbedder:
    """embed(text) = mean of the table vectors of the known words in ``text`` (not normalised, so
    the planted geometry reaches the mixtures unchanged); unknown texts get the zero vector."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = {w: np.asarray(v, dtype=np.float32) for w, v in table.items()}
        self.dim = len(next(iter(self.table.values())))
        self.batches: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.batches.append(list(texts))
        rows = []
        for t in texts:
            known = [self.table[w] for w in WORD.findall(t) if w in self.table]
            rows.append(np.mean(known, axis=0) if known else np.zeros(self.dim, np.float32))
        return np.stack(rows).astype(np.float32)


class EchoSummariser:
    """Replies "sum(<the member words>)" to the PROMPT; fails on prompts containing ``fail_on``.

    Records every batch, so a test can check that one layer's summaries came as one batch."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[ChatRequest]] = []
        self.descs: list[str | None] = []
        self.fail_on = fail_on

    def complete(self, requests: list[ChatRequest], desc: str | None = None) -> list[Completion]:
        self.batches.append(list(requests))
        self.descs.append(desc)
        out = []
        for r in requests:
            context = r.messages[-1][1]
            if self.fail_on is not None and self.fail_on in context:
                out.append(Completion(text="", error="BackendError: boom"))
            else:
                out.append(Completion(text="sum(" + " ".join(WORD.findall(context[4:-1])) + ")"))
        return out

    @property
    def calls(self) -> int:
        return sum(len(b) for b in self.batches)


def identity_reduce(
    vectors: np.ndarray, n_components: int, n_neighbors: int, metric: str, seed: int
) -> np.ndarray:
    """Stands in for UMAP: the mixtures see the planted vectors themselves."""
    return np.asarray(vectors, dtype=np.float64)


class PlainRaptor(Raptor):
    """RAPTOR with UMAP replaced by ``identity_reduce`` (for tests about the build loop)."""

    reduce = staticmethod(identity_reduce)


def two_blobs(n: int = 60, sep: float = 3.0, seed: int = 0) -> dict[str, np.ndarray]:
    """Words a0.. around (-sep, 0) with unit spread, b0.. their mirror images around (sep, 0), and
    m at the midpoint (0, 0): the mirror symmetry makes m equally likely under both clusters."""
    offsets = np.random.default_rng(seed).standard_normal((n, 2))
    table = {f"a{i}": np.array([-sep + dx, dy]) for i, (dx, dy) in enumerate(offsets)}
    table.update({f"b{i}": np.array([sep - dx, dy]) for i, (dx, dy) in enumerate(offsets)})
    table["m"] = np.zeros(2)
    return table


def make_raptor(
    table: dict[str, np.ndarray], llm: EchoSummariser | None = None, cls: type = PlainRaptor, **kw
) -> Raptor:
    kw["summaries"] = {"prompt": PROMPT, **kw.get("summaries", {})}
    kw["chunks"] = {"chunker": "units", **kw.get("chunks", {})}
    return cls(
        llm=llm or EchoSummariser(),
        embedder=PlantedEmbedder(table),
        tokenizer=WordTokenizer(),
        **kw,
    )
