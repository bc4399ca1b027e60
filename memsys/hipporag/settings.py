"""HippoRAG's settings, one group per concern: the sections of ``conf/memory/hipporag.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``), as
GraphRAG's (``memsys/graphrag/settings.py``; the ``Chunks`` group of the shared text units,
``memsys/extraction/chunks.py``, is reused: the passages are GraphRAG-lite's text units;
``memsys.settings.group`` builds each object). ``HippoRAG`` takes one object per group; every key is
documented in the YAML file, and the defaults here are the constructor's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memharness.memsys.settings import Placeholders, Range


@dataclass(frozen=True)
class Indexing:
    """``indexing``: NER + OpenIE output caps and the synonym edges (extract.py, graph.py)."""

    extract_max_tokens: Annotated[int, Range(1)] = 1024
    synonym_threshold: Annotated[float, Range(-1, 1)] = 0.8
    synonym_max_neighbours: Annotated[int, Range(0)] = 100


@dataclass(frozen=True)
class Retrieval:
    """``retrieval``: PPR seeding and passage scoring, query NER and v2's filter (rank.py)."""

    damping: Annotated[float, Range(0, 1, hi_open=True)] = 0.5
    specificity: bool = True
    passage_score: Literal["facts", "phrases"] = "facts"
    query_ner_max_tokens: Annotated[int, Range(1)] = 300
    linking_top_k: Annotated[int, Range(1)] = 5
    passage_node_weight: Annotated[float, Range(0)] = 0.05
    filter_max_tokens: Annotated[int, Range(1)] = 512


@dataclass(frozen=True)
class Prompts:
    """``prompts``: the four prompts, as ``str.format`` templates (the file's are HippoRAG's)."""

    ner_prompt: Annotated[str, Placeholders("passage")] = "{passage}"
    triple_prompt: Annotated[str, Placeholders("passage", "named_entity_json")] = (
        "{passage}\n{named_entity_json}"
    )
    query_ner_prompt: Annotated[str, Placeholders("question")] = "{question}"
    filter_prompt: Annotated[str, Placeholders("question", "fact_before_filter")] = (
        "{question}\n{fact_before_filter}"
    )
