"""The rehearsal backend's replies, one builder per prompt family (rehearsal_families.FAMILIES).

Each builder reads an ``Ask`` (the recognised prompt's placeholder values, the request's messages,
``max_tokens`` and ``choices``) and writes a reply in the format that prompt asks for, from the
prompt's own words: no model, a pure function of the request. The graph builders (GraphRAG-lite,
HippoRAG) are in rehearsal_graphs.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from memharness.memsys.testing.rehearsal_graphs import (
    fact_filter,
    graph_glean,
    graph_json,
    graph_map,
    graph_records,
    graph_report,
    ner,
    openie,
)
from memharness.memsys.testing.rehearsal_text import (
    Ask,
    answer_words,
    best_sentence,
    content_words,
    entities,
    extractive_summary,
    overlap,
    sentences,
)

_OPTION = re.compile(r"^\s*\(?([A-Z])[\).:]\s*(.+)$", re.MULTILINE)
_NUMBERED = re.compile(
    r"(?:Passage|Document)\s+(\d+):\s*(.*?)(?=(?:Passage|Document)\s+\d+:|\Z)", re.S
)


def _summary(a: Ask) -> str:
    text = "\n".join(v for k, v in a.fields.items() if len(v) > 20 and k != "max_length")
    return extractive_summary(text or a.messages[-1][1], a.summary_share, a.words) or "(empty)"


def _numbered_triples(a: Ask) -> str:
    lines = []
    for s in sentences(a.get("text")):
        words = [w for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-]*", s) if content_words(w)]
        if len(words) >= 3:
            lines.append(f"{len(lines) + 1}. {words[0]}; {words[1]}; {' '.join(words[2:5])}")
    return "\n".join(lines[: max(1, a.words // 8)]) or "1. text; has; no facts"


def _atomic_facts(a: Ask) -> str:
    lines = []
    for s in sentences(a.get("text")):
        keys = [w for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-]*", s) if content_words(w)][:4]
        if keys:
            lines.append(f"{len(lines) + 1}. {' '.join(s.split()[:25])} | " + " | ".join(keys))
    return "\n".join(lines[: max(1, a.words // 30)]) or "1. The text states nothing. | text"


def _rerank(a: Ask) -> str:
    q = content_words(a.question())
    docs = _NUMBERED.findall(a.get("documents"))
    scores = {int(n): 1 + min(9, round(18 * overlap(q, content_words(t)))) for n, t in docs}
    ranked = sorted(scores, key=lambda d: (-scores[d], d))
    if "JSON" in a.get("output_format"):
        ratings = [{"document": d, "relevance_score": scores[d]} for d in ranked]
        return json.dumps({"ratings": ratings})
    return "\n".join(f"Doc: {d}, Relevance Score: {scores[d]}" for d in ranked)


def _thought(a: Ask) -> str:
    context, question = a.get("context"), a.question()
    return (
        f"{best_sentence(context, question)} So the answer is: {answer_words(context, question)}."
    )


def _rating(a: Ask) -> str:
    text = a.get("memory")
    return str(min(10, 1 + len(set(content_words(text))) // 4 + len(entities(text, 3)) // 2))


def _passages(text: str) -> list[tuple[int, str]]:
    return [(int(n), t) for n, t in _NUMBERED.findall(text)]


def _selection(a: Ask) -> str:
    q = content_words(a.question())
    scored = [(overlap(q, content_words(t)), n) for n, t in _passages(a.get("passages"))]
    picked = sorted(n for s, n in sorted(scored, reverse=True)[:3] if s > 0)
    return str(picked or [min((n for _, n in scored), default=1)])


def _page_break(a: Ask) -> str:
    """The offered label between the two paragraphs that share the fewest content words."""
    text = "\n".join(a.fields.get(k, "") for k in ("previous", "passage", "next"))
    parts = re.split(r"<(\d+)>", text)
    labels = [(int(parts[i]), parts[i - 1], parts[i + 1]) for i in range(1, len(parts) - 1, 2)]
    if not labels:
        return "Break point: <1>\nBecause the passage ends there."
    best = min(labels, key=lambda x: (overlap(content_words(x[1]), content_words(x[2])), -x[0]))
    return f"Break point: <{best[0]}>\nBecause the topic changes there."


def _lookup(a: Ask) -> str:
    pages = re.split(r"<Page (\d+)>", a.get("gists"))
    q = content_words(a.question())
    scored = sorted(
        (
            (overlap(q, content_words(pages[i + 1])), int(pages[i]))
            for i in range(1, len(pages) - 1, 2)
        ),
        reverse=True,
    )
    read = a.get("read").strip().lower()
    if "sequential" in a.extras.get("key", "") and read not in ("", "none"):
        return "STOP"
    cap = (
        1
        if "sequential" in a.extras.get("key", "")
        else max(1, min(2, int(a.get("max_pages") or 2)))
    )
    picked = [n for _, n in scored[:cap]] or [0]
    return f"I want to look up Page {picked} to check the details."


def _queued(content: str) -> list[dict[str, Any]]:
    """The MemGPT queue entries in a user message (JSON lines written by memsys/memgpt/agent.py
    packaged; consecutive ones are joined into one message), or the plain text as one."""
    entries = []
    for line in content.split("\n"):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries or [{"type": "user_message", "message": content}]


def _agent_call(a: Ask) -> str:
    """MemGPT's loop: for the latest user message, search recall for its longest word; once a
    function result has come back, send an answer from the results."""
    entries = [e for r, c in a.messages if r == "user" for e in _queued(c)]
    asked = [i for i, e in enumerate(entries) if e.get("type") == "user_message"]
    last = asked[-1] if asked else 0
    question = str(entries[last].get("message") or "") if entries else ""
    results = [str(e.get("message") or "") for e in entries[last + 1 :] if "status" in e]
    if not results:
        words = sorted(
            set(re.findall(r"[A-Za-z]{4,}", question)) - {"What", "When", "Where", "Which"},
            key=lambda w: (len(w), w),
        )
        args = {"query": words[-1] if words else "memory", "page": 0, "request_heartbeat": True}
        call = {"function": "conversation_search", "arguments": args}
        return json.dumps({"thought": "I should search my history.", **call})
    message = answer_words("\n".join(results), question)
    return json.dumps(
        {"thought": "I found it.", "function": "send_message", "arguments": {"message": message}}
    )


def _answer(a: Ask) -> str:
    context = a.get("context", "report_data", "history", "summary")
    return " ".join(answer_words(context, a.question()).split()[: a.words])


def _answer_cot(a: Ask) -> str:
    context, question = a.get("context"), a.question()
    return f"The nearest result says: {best_sentence(context, question)}\nAnswer: {answer_words(context, question)}"


def _choice(a: Ask) -> str:
    context = content_words(a.get("context", "report_data"))
    options = _OPTION.findall(a.get("options"))
    letter, text = max(
        options, key=lambda o: overlap(context, content_words(o[1])), default=("A", "")
    )
    return letter if a.choices else f"Answer: ({letter}) {text.strip()}"


def _claim(a: Ask) -> str:
    near = overlap(content_words(a.get("claim")), content_words(a.get("context")))
    return "faithful" if near >= 0.05 else "unfaithful"


def _agrees(a: Ask) -> float:
    """How much of the reference the prediction says (recall of its content words)."""
    ref = content_words(a.get("reference", "second"))
    pred = set(content_words(a.get("prediction", "first")))
    return sum(w in pred for w in ref) / len(ref) if ref else 0.0


def _verdict_digit(a: Ask) -> str:
    return "1" if _agrees(a) >= 0.5 else "0"


def _verdict_label(a: Ask) -> str:
    return "CORRECT" if _agrees(a) >= 0.5 else "WRONG"


def _verdict_yes_no(a: Ask) -> str:
    return "yes" if _agrees(a) >= 0.5 else "no"


_DECLINES = (
    "not know",
    "don't know",
    "no idea",
    "not mentioned",
    "not available",
    "cannot",
    "can't",
)


def _verdict_abstain(a: Ask) -> str:
    """1 when the answer declines (a few fixed phrases), else 0: the forget abstain judge's digit."""
    said = a.get("prediction", "first").lower()
    return "1" if any(p in said for p in _DECLINES) else "0"


def _nugget(a: Ask) -> str:
    score = 1.0 if _agrees(a) >= 0.5 else 0.5 if _agrees(a) >= 0.2 else 0.0
    return json.dumps({"score": score, "reason": "word overlap of the response with the criterion"})


def _wrong_answer(a: Ask) -> str:
    ref = set(content_words(a.get("reference")))
    words = [
        w
        for w in re.findall(r"[A-Za-z]{3,}", a.question())
        if content_words(w) and content_words(w)[0] not in ref
    ]
    return " ".join(words[:3]) or "none of them"


def _dialogue(a: Ask) -> str:
    lines = sentences(a.get("recent_chat_hist")) or ["Hello there."]
    n = max(1, int(a.get("n_rounds") or 1))
    return "\n".join(
        f"{'Alex' if i % 2 == 0 else 'Bob'}: {lines[i % len(lines)]}" for i in range(2 * n)
    )


def _qa_pairs(a: Ask) -> str:
    said = [
        s.split(":", 1)[1].strip() for s in sentences(a.get("chat_hist")) if s.startswith("Alex:")
    ]
    n = max(1, int(a.get("n_q") or 1))
    return json.dumps(
        [
            {"question": f"What did you say about {' '.join(content_words(s)[:2])}?", "response": s}
            for s in said[:n]
        ]
    )


def _unrecognised(a: Ask) -> str:
    return extractive_summary(a.messages[-1][1], a.summary_share, a.words) or "(empty)"


REPLIES: dict[str, Callable[[Ask], str]] = {
    "summary": _summary,
    "graph_records": graph_records,
    "graph_json": graph_json,
    "graph_glean": graph_glean,
    "graph_loop": lambda a: "N",
    "graph_report": graph_report,
    "graph_map": graph_map,
    "ner": ner,
    "openie": openie,
    "fact_filter": fact_filter,
    "numbered_triples": _numbered_triples,
    "atomic_facts": _atomic_facts,
    "rerank": _rerank,
    "thought": _thought,
    "rating": _rating,
    "selection": _selection,
    "page_break": _page_break,
    "lookup": _lookup,
    "agent_call": _agent_call,
    "answer": _answer,
    "answer_cot": _answer_cot,
    "choice": _choice,
    "claim": _claim,
    "verdict_digit": _verdict_digit,
    "verdict_label": _verdict_label,
    "verdict_yes_no": _verdict_yes_no,
    "verdict_abstain": _verdict_abstain,
    "nugget_score": _nugget,
    "wrong_answer": _wrong_answer,
    "dialogue": _dialogue,
    "qa_pairs": _qa_pairs,
    "unrecognised": _unrecognised,
}


def constrain(text: str, choices: tuple[str, ...] | None) -> str:
    """A reply held to the request's allowed outputs: the choice it equals (case aside) or starts
    with, else the first choice."""
    if not choices:
        return text
    low = text.strip().lower()
    exact = [c for c in choices if c.lower() == low]
    starts = [c for c in choices if c and low.startswith(c.lower())]
    return (exact or starts or [choices[0]])[0]
