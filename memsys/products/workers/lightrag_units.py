"""The LightRAG worker's data handling, without the product: units -> documents of lines, chunks ->
the units they hold, LightRAG's query context -> protocol items (stdlib only; beside the worker)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SECTIONS = ("entities", "relations", "chunks")  # the parts of LightRAG's query context
EDGE = 40  # characters of a line's start or end that identify it in a chunk that cut it


def unit_line(unit: dict[str, Any]) -> str:
    """One unit as one line: ``[timestamp] speaker: text`` (parts the data lacks left out)."""
    if not unit.get("id") or not isinstance(unit.get("text"), str):
        raise ValueError(f"unit {unit.get('id')!r}: needs a non-empty 'id' and a string 'text'")
    text = " ".join(unit["text"].split())  # one line per unit, whatever the data's newlines
    speaker = unit.get("speaker")
    line = f"{speaker}: {text}" if speaker else text
    return f"[{unit['timestamp']}] {line}" if unit.get("timestamp") else line


def documents(units: list[dict[str, Any]], per: str) -> list[dict[str, Any]]:
    """Units -> LightRAG documents ``{id, text, lines: [(unit id, line)]}``: one per unit, one per
    run of consecutive units of the same session, or one for all (``per`` = unit | session | batch)."""
    docs: list[dict[str, Any]] = []
    for unit in units:
        line = unit_line(unit)
        session = str(unit.get("session"))
        joins = per == "batch" or (per == "session" and docs and docs[-1]["session"] == session)
        if joins and docs:
            docs[-1]["lines"].append((str(unit["id"]), line))
            continue
        docs.append({"id": f"doc-{unit['id']}", "session": session, "lines": [(unit["id"], line)]})
    for doc in docs:
        doc["text"] = "\n".join(line for _, line in doc["lines"])
    return docs


def units_in(content: str, lines: list[tuple[str, str]]) -> list[str]:
    """The ids of the units whose line a chunk holds, whole or cut at the chunk's edge."""
    found = []
    for unit_id, line in lines:
        whole = line in content
        cut = len(line) > EDGE and (line[:EDGE] in content or line[-EDGE:] in content)
        if whole or cut:
            found.append(unit_id)
    return found


def place(
    docs: list[dict[str, Any]],
    doc_lines: dict[str, list[tuple[str, str]]],
    doc_of_text: dict[str, str],
) -> tuple[list[dict[str, Any]], int, int]:
    """Which documents to insert: (new ones, units already inserted, units merged). LightRAG refuses
    a document whose text it already holds (a failed duplicate), so such a document's unit lines are
    added to the first copy's instead: its chunks then name those units too. Updates both maps."""
    fresh, duplicates, merged = [], 0, 0
    for doc in docs:
        if doc["id"] in doc_lines:
            duplicates += len(doc["lines"])
        elif doc["text"] in doc_of_text:
            doc_lines[doc_of_text[doc["text"]]].extend(doc["lines"])
            merged += len(doc["lines"])
        else:
            doc_of_text[doc["text"]] = doc["id"]
            doc_lines[doc["id"]] = list(doc["lines"])
            fresh.append(doc)
    return fresh, duplicates, merged


def split_sources(value: Any) -> list[str]:
    """LightRAG's ``<SEP>``-joined source chunk ids as a list."""
    return [s for s in str(value or "").split("<SEP>") if s]


def context_items(
    data: dict[str, Any], sections: list[str], chunk_units: Callable[[list[str]], list[str]]
) -> list[dict[str, Any]]:
    """``aquery_data``'s ``data`` -> protocol items, section by section in ``sections`` order.
    Scores fall with the rank in LightRAG's context (it returns no similarity)."""
    rendered: dict[str, list[tuple[str, str, list[str], int]]] = {s: [] for s in SECTIONS}
    for e in data.get("entities") or []:
        text = f"{e.get('entity_name')} ({e.get('entity_type')}): {e.get('description', '')}"
        rendered["entities"].append(
            (f"entity:{e.get('entity_name')}", text, split_sources(e.get("source_id")), 1)
        )
    for r in data.get("relationships") or []:
        text = f"{r.get('src_id')} -> {r.get('tgt_id')}: {r.get('description', '')}"
        key = f"relation:{r.get('src_id')}->{r.get('tgt_id')}"
        rendered["relations"].append((key, text, split_sources(r.get("source_id")), 1))
    for c in data.get("chunks") or []:
        rendered["chunks"].append(
            (str(c.get("chunk_id")), c.get("content", ""), [c["chunk_id"]], 0)
        )
    items = []
    for section in sections:
        for key, text, chunk_ids, level in rendered[section]:
            items.append({"id": key, "text": text, "source_ids": chunk_units(chunk_ids)})
            items[-1]["level"] = level
    for rank, item in enumerate(items):
        item["score"] = 1.0 / (1 + rank)
    return items
