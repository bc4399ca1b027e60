"""Reading and writing a sample's ``scores`` (run format 3): one ``Score`` per metric key, each
with its value, the scorer that filled it and the scorer's own details."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def put(
    record: dict[str, Any], name: str, value: float | int | None, kind: str, **details: Any
) -> None:
    """Set metric ``name`` of a sample record (replacing an earlier value of it)."""
    record.setdefault("scores", {})[name] = {"value": value, "kind": kind, "details": details}


def value(sample: Mapping[str, Any], name: str) -> float | int | None:
    """The value of metric ``name``; None when the sample has no such score or no value."""
    return ((sample.get("scores") or {}).get(name) or {}).get("value")


def values(sample: Mapping[str, Any]) -> dict[str, float | int | None]:
    """Every metric value of a sample by key (what format 2 called the sample's ``metrics``)."""
    return {name: score.get("value") for name, score in (sample.get("scores") or {}).items()}


def detail(sample: Mapping[str, Any], name: str, key: str) -> Any:
    """One of the details the scorer of ``name`` wrote (None when absent)."""
    return (((sample.get("scores") or {}).get(name) or {}).get("details") or {}).get(key)


def status(sample: Mapping[str, Any], name: str) -> str | None:
    """The scorer's status of metric ``name`` (parsed, judge_failed, mc_unparsed, ...)."""
    return detail(sample, name, "status")


def memory_flag(sample: Mapping[str, Any], key: str) -> Any:
    """What the memory system flagged about the question (answered_by, degraded, partial, ...)."""
    return (sample.get("memory") or {}).get(key)
