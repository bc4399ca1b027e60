"""Rehearsal replies of the graph builders: GraphRAG-lite's records (with gleaning), JSON
extraction, community reports and map points; HippoRAG's NER, OpenIE triples and fact filter.
Entities are the capitalised names and frequent words of the prompt's own text."""

from __future__ import annotations

import json
import re

from memharness.memsys.testing.rehearsal_text import (
    Ask,
    content_words,
    entities,
    extractive_summary,
    overlap,
    sentences,
)


def _types(a: Ask) -> list[str]:
    raw = a.get("entity_types") or "ORGANIZATION,PERSON,GEO,EVENT"
    return [t.strip().strip("[]'\" ").upper() for t in raw.split(",") if t.strip()]


def _describe(name: str, text: str) -> str:
    low = name.lower()
    sents = sentences(text)
    return next((s for s in sents if low in s.lower()), sents[0] if sents else name)


def _relations(names: list[str], text: str) -> list[tuple[str, str, str, int]]:
    """Pairs of names sharing a sentence (strength = shared sentences), plus the chain of names."""
    sents = [s.lower() for s in sentences(text)]
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = [s for s in sents if a.lower() in s and b.lower() in s]
            if shared or b == names[i + 1]:
                out[(a, b)] = (
                    a,
                    b,
                    (shared or [f"{a} and {b} appear in one text"])[0],
                    len(shared),
                )
    return [(a, b, d[:200], min(10, 2 + 2 * n)) for a, b, d, n in out.values()]


def _records(a: Ask, names: list[str], text: str) -> str:
    td = a.get("tuple_delimiter") or "<|>"
    rd = a.get("record_delimiter") or "##"
    end = a.get("completion_delimiter") or "<|COMPLETE|>"
    types = _types(a)
    recs = [
        f'("entity"{td}{n.upper()}{td}{types[len(n) % len(types)]}{td}{_describe(n, text)[:200]})'
        for n in names
    ]
    recs += [
        f'("relationship"{td}{s.upper()}{td}{t.upper()}{td}{d}{td}{w})'
        for s, t, d, w in _relations(names, text)
    ]
    return f"\n{rd}\n".join(recs) + f"\n{end}"


def graph_records(a: Ask) -> str:
    text = a.get("input_text")
    return _records(a, entities(text, 6), text)


def graph_glean(a: Ask) -> str:
    """The gleaning turn: names of the first extraction's text not yet written, in that
    extraction's format (records or JSON; none new: the end marker or an empty object)."""
    first = a.extras.get("first_fields", {})
    text = first.get("input_text", "")
    # the first reply wrote 6 names, each gleaning round 3 more
    rounds = sum(r == "assistant" and c.strip() not in ("Y", "N") for r, c in a.messages)
    new = entities(text, 6 + 3 * rounds)[6 + 3 * (rounds - 1) :]
    ask = Ask(first, a.messages, a.max_tokens)
    if a.extras.get("first_family") == "graph_json":
        return _json(ask, new, text)
    return (
        _records(ask, new, text) if new else (first.get("completion_delimiter") or "<|COMPLETE|>")
    )


def _json(a: Ask, names: list[str], text: str) -> str:
    types = _types(a)
    return json.dumps(
        {
            "entities": [
                {
                    "name": n.upper(),
                    "type": types[len(n) % len(types)],
                    "description": _describe(n, text),
                }
                for n in names
            ],
            "relationships": [
                {"source": s.upper(), "target": t.upper(), "description": d, "strength": w}
                for s, t, d, w in _relations(names, text)
            ],
        }
    )


def graph_json(a: Ask) -> str:
    text = a.get("input_text")
    return _json(a, entities(text, 6), text)


def graph_report(a: Ask) -> str:
    text = a.get("input_text")
    names = entities(text, 3)
    findings = [
        {"summary": " ".join(s.split()[:10]), "explanation": s}
        for s in sorted(sentences(text), key=lambda s: -len(s.split()))[:5]
    ]
    return json.dumps(
        {
            "title": " and ".join(names) or "Community",
            "summary": extractive_summary(text, a.summary_share, min(a.words // 2, 200)),
            "rating": float(min(10, 1 + len(set(content_words(text))) // 20)),
            "rating_explanation": f"The community links {len(names)} named entities.",
            "findings": findings,
        }
    )


def graph_map(a: Ask) -> str:
    question, table = a.question(), a.get("context_data")
    q = content_words(question)
    rows = sorted(sentences(table), key=lambda s: -overlap(q, content_words(s)))[:3]
    points = [
        {"description": " ".join(s.split()[:60]), "score": int(100 * overlap(q, content_words(s)))}
        for s in rows
    ]
    # the best row always counts a little (a served model rarely scores every point 0), the rest if relevant
    points = [p for i, p in enumerate(points) if p["score"] > 0 or i == 0]
    if points:
        points[0]["score"] = max(1, points[0]["score"])
    return json.dumps({"points": points or [{"description": "Nothing relevant.", "score": 0}]})


def ner(a: Ask) -> str:
    return json.dumps({"named_entities": entities(a.get("passage", "question"), 8)})


def openie(a: Ask) -> str:
    passage = a.get("passage")
    try:
        names = json.loads(a.get("named_entity_json") or "{}").get("named_entities") or []
    except (json.JSONDecodeError, AttributeError):
        names = []
    names = [str(n) for n in names] or entities(passage, 6)
    triples = [[s, "related to", t] for s, t, _, _ in _relations(names, passage)][:6]
    for n in names:  # each name with two content words of its sentence, as "the <word>" phrases
        words = [w for w in re.findall(r"[A-Za-z]+", _describe(n, passage)) if content_words(w)]
        for w in [w for w in words if w.lower() not in n.lower()][:2]:
            triples.append([n, "mentions", f"the {w.lower()}"])
    return json.dumps({"triples": triples[:12]})


def fact_filter(a: Ask) -> str:
    try:
        facts = json.loads(a.get("fact_before_filter") or "{}").get("fact") or []
    except (json.JSONDecodeError, AttributeError):
        facts = []
    q = content_words(a.question())
    kept = [f for f in facts if overlap(q, content_words(" ".join(map(str, f)))) > 0][:3]
    return json.dumps({"fact": kept})
