"""CAM's settings, one group per concern: the sections of ``conf/memory/cam.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``): the run
check validates ``memory.network.alpha`` like any other setting, and ``CAM`` takes one object per
group (``group`` builds it from the YAML section). The settings the paper tables and experiments
select runs by (``construction``, ``k``, ``traversal``, ``hierarchy``, ``ego_splitting``,
``top_k``) stay top-level keys of the memory. Every key is documented in the YAML file; the
defaults here are the constructor's (the YAML file sets the prompts and α, θ).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from memharness.memsys.settings import Placeholders, Range


@dataclass(frozen=True)
class Chunks:
    """``chunks``: the level-0 chunks (chunking.py)."""

    mode: Literal["units", "pack"] = "units"
    size: Annotated[int, Range(1)] = 512  # pack only: tokens per chunk


@dataclass(frozen=True)
class Network:
    """``network``: the foundational network's eq. 2 edges (network.py)."""

    alpha: Annotated[float, Range(0, 1)] = 0.5
    sigma: Annotated[float, Range(0, lo_open=True)] = 1.0
    theta: Annotated[float, Range(-1, 2)] = 0.5
    clip_cosine: bool = False
    proximity_scope: Literal["source", "episode"] = "source"


@dataclass(frozen=True)
class Clustering:
    """``clustering``: label propagation and the community levels (clustering.py, develop.py)."""

    max_cluster_size: Annotated[int, Range(2)] | None = 12
    max_level: Annotated[int, Range(1)] = 10
    lp_max_rounds: Annotated[int, Range(1)] | None = 100
    online_label_scope: Literal["ripple", "affected", "level"] = "ripple"


@dataclass(frozen=True)
class Summaries:
    """``summaries``: one LLM summary per community (memory.py)."""

    prompt: Annotated[str, Placeholders("passages")] = "{passages}"
    max_tokens: Annotated[int, Range(1)] = 1024


@dataclass(frozen=True)
class Selection:
    """``selection``: Prune-and-Grow's LLM selections and its stop rules (retrieval.py)."""

    prompt: Annotated[str, Placeholders("question", "passages")] = "{question}\n{passages}"
    parse: Literal["lenient", "strict"] = "lenient"
    max_tokens: Annotated[int, Range(1)] = 512
    retry_temperature: Annotated[float, Range(0, 2)] = 0.0
    max_turns: Annotated[int, Range(1)] = 5
    tolerance: Annotated[int, Range(0)] = 2
    stop_when: Literal["no_growth", "candidates_unchanged"] = "no_growth"
    grow_scope: Literal["activated", "picks"] = "activated"


@dataclass(frozen=True)
class Evidence:
    """``evidence``: how Prune-and-Grow's evidence is ordered and merged for the answer (memory.py)."""

    order: Literal["levels_up", "levels_down"] = "levels_up"
    merge_consecutive: bool = True


@dataclass(frozen=True)
class FineGrained:
    """``fine_grained`` (CAM w/ FM): LLM entity extraction and entity links (fine_grained.py)."""

    entity_k: Annotated[int, Range(1)] = 10
    entity_types: Sequence[str] = ("organization", "person", "geo", "event")
    format: Literal["records", "json"] = "records"
    max_gleanings: Annotated[int, Range(0)] = 1
    max_tokens: Annotated[int, Range(1)] = 1500
