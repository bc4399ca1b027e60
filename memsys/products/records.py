"""What crosses the worker protocol: the units sent (``ingest``) and the hits received (``search``),
checked, and the folder an episode's store lives in."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from memharness.memsys.base import RUN_FOLDER
from memharness.memsys.types import RetrievedItem, Unit, content_id


def unit_record(unit: Unit) -> dict[str, Any]:
    """What the worker receives of a unit (protocol ``ingest``)."""
    meta = unit.metadata or {}
    return {
        "id": unit.id,
        "text": unit.text,
        "speaker": meta.get("speaker"),
        "timestamp": unit.timestamp,
        "session": meta.get("session", unit.source_id),
    }


def retrieved_item(
    item: Any, product: str, known: set[str], counters: Counter[str]
) -> RetrievedItem | None:
    """A worker's search hit as a ``RetrievedItem`` (level 1: a product memory, not a raw unit,
    unless the worker says ``level``); None (counted ``items_invalid``) when it is not an object
    with a string ``text``, a numeric ``score`` and an integer ``level``. ``source_ids`` must be a
    list of ids of units sent in this episode: another shape counts ``items_bad_source_ids`` and
    an unknown id ``source_ids_unknown``; neither is used as evidence."""
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        counters["items_invalid"] += 1
        return None
    score, level = item.get("score"), item.get("level", 1)
    if not isinstance(score, int | float | None) or not isinstance(level, int):
        counters["items_invalid"] += 1
        return None
    raw = item.get("source_ids")
    if raw is None:
        raw = []
    if not isinstance(raw, list):  # a string would be split into characters
        counters["items_bad_source_ids"] += 1
        raw = []
    sources = tuple(s for s in raw if isinstance(s, str) and s in known)
    counters["source_ids_unknown"] += len(raw) - len(sources)
    text = item["text"]
    return RetrievedItem(
        text=text,
        score=float(score or 0.0),
        node_id=str(item.get("id") or content_id(product, text, sources, prefix=f"{product}-")),
        level=level,
        source_unit_ids=sources,
    )


def store_folder(product: str) -> Path:
    """A new folder for one episode's store: under ``<run>/product_stores/`` in a run, else in
    the system temp folder."""
    run = RUN_FOLDER.get()
    root = Path(run) / "product_stores" if run is not None else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{product}-", dir=root))
