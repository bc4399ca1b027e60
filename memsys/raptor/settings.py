"""RAPTOR's settings, one group per build step: the sections of ``conf/memory/raptor.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``): the run
check validates ``memory.clustering.max_clusters`` like any other setting, and ``Raptor`` takes one
object per group (``memsys.settings.group`` builds it from the YAML section). Every key is
documented in the YAML file; the defaults here are those of the file, except the summary system
message (none here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memharness.memsys.settings import Placeholders, Range

# The paper's summarisation instruction (summarise, keeping as many key details as possible) in our
# own words; conf/memory/raptor.yaml holds the same text (a test keeps the two equal).
SUMMARY_PROMPT = (
    "Summarise the passages below in one text. Keep as many of their key details as you can: "
    "names, numbers, dates, places, events and how they relate. Reply with the summary only."
    "\n\nPassages:\n{context}"
)


@dataclass(frozen=True)
class Chunks:
    """``chunks``: α, the leaves (chunker.py)."""

    chunker: Literal["sentences", "units"] = "sentences"
    max_tokens: Annotated[int, Range(1)] = 100
    keep_punctuation: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "keep_punctuation", bool(self.keep_punctuation))


INTEGERS = (
    "num_layers",
    "reduction_dimension",
    "max_clusters",
    "local_n_neighbors",
    "max_length_in_cluster",
)


@dataclass(frozen=True)
class Clustering:
    """``clustering``: π, the layers and their UMAP + Gaussian-mixture clusters (clustering.py)."""

    num_layers: Annotated[int, Range(0)] = 5
    reduction_dimension: Annotated[int, Range(1)] = 10
    threshold: Annotated[float, Range(0, 1, lo_open=True, hi_open=True)] = 0.1
    max_clusters: Annotated[int, Range(2)] = 50
    local_n_neighbors: Annotated[int, Range(2)] = 10
    max_length_in_cluster: Annotated[int, Range(1)] = 3500
    umap_metric: Literal["cosine", "euclidean"] = "cosine"

    def __post_init__(self) -> None:
        for name in INTEGERS:
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "threshold", float(self.threshold))


@dataclass(frozen=True)
class Summaries:
    """``summaries``: ρ, one LLM summary per cluster (memory.py)."""

    prompt: Annotated[str, Placeholders("context")] = SUMMARY_PROMPT
    system: str | None = None
    max_tokens: Annotated[int, Range(1)] = 100
    failure: Literal["excerpt", "raise"] = "excerpt"
    temperature: Annotated[float, Range(0, 2)] = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "system", self.system or None)
        object.__setattr__(self, "max_tokens", int(self.max_tokens))
        object.__setattr__(self, "temperature", float(self.temperature))
