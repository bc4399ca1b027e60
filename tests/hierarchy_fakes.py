"""A hand-built DAG hierarchy and a toy hierarchical memory for the core's unit tests.

Level 0: atoms a, b, c, d. Level 1: P = {a, b}, Q = {b, c} (b has two parents, as a soft cluster
or an overlapping community would give), R = {d}. Level 2: T = {P, Q}. R has no parent, so the
top level is {T} and top-down search from the top never reaches R (RAPTOR's behaviour).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from memharness.memsys.hierarchy.memory import HierarchicalMemory
from memharness.memsys.hierarchy.store import HierarchyStore
from memharness.memsys.services.types import Completion
from memharness.memsys.types import Unit


def unit_vec(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


VECTORS = {
    "a": unit_vec(1, 0, 0),
    "b": unit_vec(1, 1, 0),
    "c": unit_vec(0, 1, 0),
    "d": unit_vec(0, 0, 1),
    "P": unit_vec(2, 1, 0),
    "Q": unit_vec(1, 2, 0),
    "R": unit_vec(0, 0.2, 1),
    "T": unit_vec(1, 1, 0.1),
}
TEXTS = {
    "a": "alpha apples",
    "b": "beta bananas bread",
    "c": "gamma cherries",
    "d": "delta dates dunes",
    "P": "fruit a b",
    "Q": "fruit b c",
    "R": "dates",
    "T": "all fruit summary",
}


def build_dag() -> tuple[HierarchyStore, dict[str, int]]:
    store = HierarchyStore()
    idx = {}
    for name in "abcd":
        idx[name] = store.add_node(f"n-{name}", TEXTS[name], VECTORS[name], 0, units=(f"u-{name}",))
    idx["P"] = store.add_node("n-P", TEXTS["P"], VECTORS["P"], 1, children=(idx["a"], idx["b"]))
    idx["Q"] = store.add_node("n-Q", TEXTS["Q"], VECTORS["Q"], 1, children=(idx["b"], idx["c"]))
    idx["R"] = store.add_node("n-R", TEXTS["R"], VECTORS["R"], 1, children=(idx["d"],))
    idx["T"] = store.add_node("n-T", TEXTS["T"], VECTORS["T"], 2, children=(idx["P"], idx["Q"]))
    store.add_edge(idx["P"], idx["Q"], 0.7)
    return store, idx


class TableEmbedder:
    """Embeds a text as the vector of the first known name or text it contains (unknown: zero vector)."""

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        out = []
        for t in texts:
            key = next((k for k, v in TEXTS.items() if v == t), None) or next(
                (k for k in VECTORS if k == t), None
            )
            out.append(VECTORS[key] if key else np.zeros(3, np.float32))
        return np.stack(out)


class PairMemory(HierarchicalMemory):
    """An offline toy system on the core: atoms are the units, one parent per two consecutive atoms."""

    online = False
    name = "pairs"

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        label: str = "pair",
        **core: Any,
    ) -> None:
        super().__init__(llm=llm, embedder=embedder, tokenizer=tokenizer, **core)
        self.label = label

    def build(self, units: Sequence[Unit]) -> None:
        from memharness.memsys.hierarchy.store import HierarchyStore

        self.store = HierarchyStore()
        vectors = self.embedder.embed([u.text for u in units])
        atoms = self.store.add_nodes(
            [u.id for u in units],
            [u.text for u in units],
            vectors,
            0,
            units=[(u.id,) for u in units],
        )
        for i in range(0, len(atoms) - 1, 2):
            pair = atoms[i : i + 2]
            vec = vectors[i] + vectors[i + 1]
            self.store.add_node(
                f"{self.label}-{i}",
                " + ".join(self.store.texts[a] for a in pair),
                vec / max(np.linalg.norm(vec), 1e-9),
                1,
                children=pair,
            )


class FakeLogprobBackend:
    """Scores text at -1 nat per word, or -0.25 per word after a prefix holding a summary."""

    model_id = "fake-logprob"
    max_concurrency = None

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, request: Any) -> Completion:
        return Completion(text="")

    def logprob(self, request: Any) -> tuple[float, int]:
        self.calls += 1
        words = len(request.text.split())
        per_word = 0.25 if request.prefix.startswith("Summary") else 1.0
        return -per_word * words, words
