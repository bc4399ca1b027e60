"""GraphRAG-lite's settings, one group per build step: the sections of ``conf/memory/graphrag.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``): the run
check validates ``memory.extraction.max_gleanings`` like any other setting, and ``GraphRAG`` takes
one object per group (``group`` builds it from the YAML section). Every key is documented in the
YAML file; the defaults here are those of the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from memharness.memsys.settings import NonEmpty, Placeholders, Range

DELIMITERS = ("entity_types", "tuple_delimiter", "record_delimiter", "completion_delimiter")
Prompt = Annotated[str, Placeholders()] | None  # null: the prompt of conf/memory/graphrag.yaml


@dataclass(frozen=True)
class Extraction:
    """``extraction``: entities and relationships with gleaning (extract.py, merge.py)."""

    entity_types: Annotated[list[str], NonEmpty()] = ("organization", "person", "geo", "event")
    entity_types_case: Literal["upper", "as_given"] = "upper"
    format: Literal["records", "json"] = "records"
    max_gleanings: Annotated[int, Range(0)] = 1
    max_tokens: Annotated[int, Range(1)] = 1500
    tuple_delimiter: Annotated[str, NonEmpty()] = "<|>"
    record_delimiter: Annotated[str, NonEmpty()] = "##"
    line_records: bool = True
    completion_delimiter: Annotated[str, NonEmpty()] = "<|COMPLETE|>"
    missing_endpoint: Literal["drop", "create"] = "drop"


@dataclass(frozen=True)
class Summaries:
    """``summaries``: merged descriptions and their LLM summaries (merge.py)."""

    threshold_tokens: Annotated[int, Range(0)] = 500
    max_input_tokens: Annotated[int, Range(1)] = 4000
    max_words: Annotated[int, Range(1)] = 500
    max_tokens: Annotated[int, Range(1)] = 700
    separator: str = "\n"


@dataclass(frozen=True)
class Communities:
    """``communities``: hierarchical Leiden (communities.py)."""

    max_cluster_size: Annotated[int, Range(1)] = 10
    use_lcc: bool = True
    seed: Annotated[int, Range(0)] | None = None  # null: the memory's seed
    resolution: Annotated[float, Range(0, lo_open=True)] = 1.0
    iterations: Annotated[int, Range(1)] = 1
    backend: Literal["igraph", "leidenalg"] = "igraph"
    randomness: Annotated[float, Range(0, lo_open=True)] = 0.001


@dataclass(frozen=True)
class Reports:
    """``reports``: community reports (reports.py)."""

    max_input_tokens: Annotated[int, Range(1)] = 8000
    max_words: Annotated[int, Range(1)] = 2000
    max_tokens: Annotated[int, Range(1)] = 1500
    relationships: Literal["all", "per_entity"] = "all"
    substitution: bool = True


@dataclass(frozen=True)
class Prompts:
    """``prompts``: every prompt, as ``str.format`` templates (null: the one in graphrag.yaml)."""

    extract_prompt: Annotated[str, Placeholders("input_text", optional=DELIMITERS)] | None = None
    extract_json_prompt: (
        Annotated[str, Placeholders("input_text", optional=("entity_types",))] | None
    ) = None
    continue_prompt: Prompt = None
    loop_prompt: Prompt = None
    summarize_prompt: (
        Annotated[str, Placeholders("description_list", optional=("entity_name", "max_length"))]
        | None
    ) = None
    report_prompt: (
        Annotated[str, Placeholders("input_text", optional=("max_report_length",))] | None
    ) = None
    map_prompt: Annotated[str, Placeholders("context_data", optional=("max_length",))] | None = None
    reduce_prompt: (
        Annotated[str, Placeholders("report_data", optional=("response_type", "max_length"))] | None
    ) = None
    reduce_mc_prompt: Annotated[str, Placeholders("report_data", "options")] | None = None
