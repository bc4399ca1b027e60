"""ReadAgent's settings, one group per step: the sections of ``conf/memory/readagent.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``): the run
check validates ``memory.lookup.max_pages`` like any other setting, and ``ReadAgent`` takes one
object per group (``memsys.settings.group`` builds it from the YAML section). The page bounds
(``min_words``, ``max_words``) stay top-level keys. Every key is documented in the YAML file; the
prompts' defaults here are bare placeholders, the YAML holds the real ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memharness.memsys.settings import Placeholders, Range


@dataclass(frozen=True)
class Pagination:
    """``pagination``: pages ending at natural pause points (Sec. 3.1; pagination.py)."""

    breaks: Literal["paragraphs", "units"] = "paragraphs"
    last_page_words: Annotated[int, Range(0)] = 350
    prompt: Annotated[str, Placeholders("passage", optional=("previous", "next"))] = "{passage}"
    max_tokens: Annotated[int, Range(1)] = 64


@dataclass(frozen=True)
class Gists:
    """``gists``: one shortened page per page (Sec. 3.2)."""

    prompt: Annotated[str, Placeholders("page")] = "{page}"
    max_tokens: Annotated[int, Range(1)] = 512
    # merge pages until the gists fill at most window_share of window_tokens (App. H; merging.py)
    window_tokens: Annotated[int, Range(1)] | None = None
    window_share: Annotated[float, Range(0, 1, lo_open=True)] = 0.5


@dataclass(frozen=True)
class Lookup:
    """``lookup``: the pages re-read per question (Sec. 3.3; lookup.py); retrieval only."""

    mode: Literal["parallel", "sequential"] = "parallel"
    max_pages: Annotated[int, Range(1)] = 5
    prompt: Annotated[str, Placeholders("gists", "question", optional=("max_pages",))] = (
        "{gists}\n{question}"
    )
    sequential_prompt: Annotated[
        str, Placeholders("gists", "question", optional=("max_pages", "read"))
    ] = "{gists}\n{question}"
    max_tokens: Annotated[int, Range(1)] = 64
    options_prompt: Annotated[str, Placeholders("question", "options")] = "{question}\n{options}"


@dataclass(frozen=True)
class Settings:
    """Every setting of one ReadAgent memory: its three groups and the top-level keys."""

    pagination: Pagination
    gists: Gists
    lookup: Lookup
    min_words: int
    max_words: int
    answer_page_tags: bool
    temperature: float
