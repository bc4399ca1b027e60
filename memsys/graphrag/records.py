"""GraphRAG-lite's build and search records: counters and the build's provenance summary."""

from __future__ import annotations

from typing import Any

from memharness.memsys.extraction.entities import EXTRACTION_FAILURES


def build_provenance(build: dict[str, Any]) -> dict[str, Any]:
    """What a build's numbers rest on, in one place: the graph (Leiden) seed and backend, the
    community levels and their sizes, and the extraction failure counts (every key, zeros included)."""
    leiden = build.get("communities", {})
    counts = build.get("failures", {}).get("counts", {})
    return {
        "graph_seed": leiden.get("seed"),
        "leiden_backend": leiden.get("backend"),
        "community_levels": leiden.get("levels", 0),
        "communities_per_level": dict(leiden.get("per_level", {})),
        "extraction_calls": {
            k: v for k, v in build.get("llm_calls", {}).items() if k in ("extract", "glean", "loop")
        },
        "extraction_failures": {k: int(counts.get(k, 0)) for k in EXTRACTION_FAILURES},
    }


def bump(record: dict[str, Any], key: str, n: int = 1) -> None:
    """Add ``n`` to the counter ``key`` of a search or build record."""
    record[key] = record.get(key, 0) + n
