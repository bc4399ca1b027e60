"""Seeded test doubles for the CAM unit tests: hand-made word vectors, an LLM that writes a
traceable summary of its passages and answers selection prompts from a script."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from memharness.memsys.cam import CAM
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.testing.doubles import WordTokenizer
from memharness.memsys.types import Unit, content_id
from memtree_fakes import WordEmbedder

SUMMARY = "SUMMARISE\n{passages}"
SELECT = "SELECT {question}\n{passages}"
_PASSAGE = re.compile(r"^Passage (\d+): (.*)$", re.M)


def unit(text: str, position: int = 0, source: str = "doc") -> Unit:
    return Unit(
        id=content_id("t", position, text, prefix="u-"),
        text=text,
        source_id=source,
        position=position,
    )


def units(texts: list[str], source: str = "doc", start: int = 0) -> list[Unit]:
    return [unit(t, start + i, source) for i, t in enumerate(texts)]


def passages(prompt: str) -> list[str]:
    return [m.group(2) for m in _PASSAGE.finditer(prompt)]


class FakeLLM:
    """Summaries are "(" + the passages joined + ")"; selections come from ``select(question, passages)``.

    ``select`` returns the reply text (e.g. "[1, 2]"); by default nothing is selected ("[]").
    ``fail_summary_when``: a summary prompt containing this text comes back failed.
    Every batch is recorded in ``batches``.
    """

    def __init__(
        self,
        select: Callable[[str, list[str]], str] | None = None,
        fail_summary_when: str | None = None,
    ) -> None:
        self.select = select or (lambda q, p: "[]")
        self.fail_summary_when = fail_summary_when
        self.batches: list[list[ChatRequest]] = []

    def complete(self, requests: list[ChatRequest], desc: str | None = None) -> list[Completion]:
        self.batches.append(list(requests))
        out = []
        for r in requests:
            prompt = r.messages[-1][1]
            texts = passages(prompt)
            if prompt.startswith("SUMMARISE"):
                if self.fail_summary_when and self.fail_summary_when in prompt:
                    out.append(Completion(text="", error="BackendError: boom"))
                else:
                    out.append(Completion(text="(" + " ".join(texts) + ")"))
            else:
                question = prompt.split("\n", 1)[0][len("SELECT ") :]
                out.append(Completion(text=self.select(question, texts)))
        return out

    @property
    def calls(self) -> int:
        """Requests answered so far (what a forget's cost reads from a double without a meter)."""
        return sum(len(b) for b in self.batches)

    def summary_requests(self) -> list[list[str]]:
        """The passages of every summary request so far, in order."""
        return [
            passages(r.messages[-1][1])
            for b in self.batches
            for r in b
            if r.messages[-1][1].startswith("SUMMARISE")
        ]

    def selection_requests(self) -> list[ChatRequest]:
        return [r for b in self.batches for r in b if r.messages[-1][1].startswith("SELECT")]


def basis(dim: int, i: int, scale: float = 1.0) -> np.ndarray:
    v = np.zeros(dim, np.float32)
    v[i] = scale
    return v


def make_cam(
    table: dict[str, list[float]] | dict[str, np.ndarray], llm: FakeLLM | None = None, **kw
) -> CAM:
    kw["summaries"] = {"prompt": SUMMARY, **kw.get("summaries", {})}
    kw["selection"] = {"prompt": SELECT, **kw.get("selection", {})}
    # the hand-made tables were computed with the released code's alpha and theta
    kw["network"] = {"alpha": 0.6, "theta": 0.6, **kw.get("network", {})}
    table = {w: list(map(float, v)) for w, v in table.items()}
    return CAM(llm=llm or FakeLLM(), embedder=WordEmbedder(table), tokenizer=WordTokenizer(), **kw)


def four_groups(dim: int = 12) -> dict[str, np.ndarray]:
    """Words a1..a4, b1..b4, c1..c4, d1..d4: four tight groups (cos ~0.99 inside, 0 across), with
    bridges a1-b1 and c1-d1 (cos 0.98 to each other, 0.78 to their own group, 0.62 to the other).
    A fifth word a5 sits in group A, closest to a2 and a3."""
    table: dict[str, np.ndarray] = {}
    for g, name in enumerate("abcd"):
        for i in range(1, 5):
            v = basis(dim, g) + basis(dim, 4 + (i - 1) % 4, 0.1) + basis(dim, 8 + g, 0.05 * i)
            table[f"{name}{i}"] = v / np.linalg.norm(v)
    for x, y, gx, gy in (("a1", "b1", 0, 1), ("c1", "d1", 2, 3)):
        for w, g, h in ((x, gx, gy), (y, gy, gx)):
            v = basis(dim, g) + basis(dim, h, 0.8)
            table[w] = v / np.linalg.norm(v)
    v = basis(dim, 0) + basis(dim, 5, 0.1) + basis(dim, 6, 0.1)
    table["a5"] = v / np.linalg.norm(v)
    return table
