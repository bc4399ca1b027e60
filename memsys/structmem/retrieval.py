"""LLM reranking and iterative retrieval over a single-step retriever (Zeng et al., 2024, Sec. 3.2).

Reranking: the top-K candidates go to the LLM in batches of ``batch_size`` (10, as the released
code), each batch one request that rates *every* document from 1 to 10; the best R are kept.
Documents are numbered 1..n within their batch (the released code numbers them from 0 across
the whole candidate list). Output is structured: a JSON object
``{"ratings": [{"document": n, "relevance_score": s}, ...]}`` requested with ``json_output``
(the released code's structured-output schema), or strict lines ``Doc: n, Relevance Score: s``
(the released parser for open models). A document without a valid score (missing, out of
range, a failed call) is counted and ranks after every scored one, in retrieval order; ties
keep retrieval order.

Iterative retrieval: turn 1 retrieves the top-T units with the question, turn j > 1 with
``question + " " + last thought``; after each turn a chain-of-thought step writes a thought over
every unit gathered so far (numbered, best score first). Each unit keeps its best score across
turns. ``final="best_score"`` (the released code; the issue's spec) returns the top-K gathered
units by that score after N turns: the N-th thought could not change them, so it is not
requested (the released code requests and discards it). ``final="final_query"`` is a hybrid: the
released code's refinement (thoughts over every unit gathered, query = question + thought) ending
in the paper's final step ("the final refined query q_N is used to retrieve the Top-K"): N
thoughts, then the top-K with the last query. The paper's refinement itself (q_j = LLM(M_j), from
the turn's own top-T) is not implemented. A failed or empty thought ends the loop early (the
next query would repeat the last one), recorded in ``stopped``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.services.types import ChatRequest

Ranked = list[tuple[int, float]]
FINALS = ("best_score", "final_query")
RERANK_FORMATS = ("json", "lines")
_LINE = re.compile(
    r"Doc(?:ument)?\s*:?\s*#?(\d+)\s*,\s*Relevance\s+Score\s*:\s*(\d+(?:\.\d+)?)", re.IGNORECASE
)


def _valid(doc: Any, score: Any, n: int) -> bool:
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (doc, score))
    return numeric and float(doc).is_integer() and 1 <= doc <= n and 1 <= score <= 10


def parse_rerank_json(reply: str, n: int) -> dict[int, float]:
    """``{"ratings": [{"document": d, "relevance_score": s}]}`` -> {d: s} for 1 <= d <= n, 1 <= s <= 10."""
    start, end = reply.find("{"), reply.rfind("}")
    try:
        data = json.loads(reply[start : end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        return {}
    ratings = data.get("ratings") if isinstance(data, dict) else None
    out: dict[int, float] = {}
    for r in ratings if isinstance(ratings, list) else []:
        if isinstance(r, dict) and _valid(r.get("document"), r.get("relevance_score"), n):
            out.setdefault(int(r["document"]), float(r["relevance_score"]))
    return out


def parse_rerank_lines(reply: str, n: int) -> dict[int, float]:
    """``Doc: d, Relevance Score: s`` lines -> {d: s}; the first score of a document wins."""
    out: dict[int, float] = {}
    for doc, score in _LINE.findall(reply):
        if _valid(int(doc), float(score), n):
            out.setdefault(int(doc), float(score))
    return out


def documents_block(texts: Sequence[str]) -> str:
    """``Document 1:\\n<text>\\n\\nDocument 2:\\n...``, numbered from 1."""
    return "\n\n".join(f"Document {i}:\n{t}" for i, t in enumerate(texts, start=1))


@dataclass
class RerankResult:
    ranked: Ranked  # the best R as (node, LLM score); unscored nodes carry 0.0
    scores: list[float | None]  # per candidate, in retrieval order
    requests: int = 0
    failed: int = 0  # calls that failed after their retries
    unparsed: int = 0  # documents in answered batches without a valid score


def rerank(
    llm: Any,
    question: str,
    candidates: Ranked,
    texts: Sequence[str],
    *,
    top_r: int,
    prompt: str,
    output_format: str,
    fmt: str = "json",
    batch_size: int = 10,
    max_tokens: int = 256,
    sampling: dict[str, Any] | None = None,
) -> RerankResult:
    """Score ``candidates`` (node indices into ``texts``) in concurrent batches; keep the best ``top_r``.
    ``sampling`` holds the requests' temperature and seed."""
    if fmt not in RERANK_FORMATS:
        raise ValueError(
            f"memory.rerank.format must be one of {' | '.join(RERANK_FORMATS)}, got {fmt!r}"
        )
    batches = [candidates[i : i + batch_size] for i in range(0, len(candidates), batch_size)]
    requests = [
        ChatRequest.user(
            prompt.format(
                question=question,
                output_format=output_format,
                documents=documents_block([texts[v] for v, _ in batch]),
            ),
            max_tokens=max_tokens,
            json_output=fmt == "json",
            **(sampling or {}),
        )
        for batch in batches
    ]
    completions = llm.complete(requests, desc="rerank") if requests else []
    parse = parse_rerank_json if fmt == "json" else parse_rerank_lines
    result = RerankResult(ranked=[], scores=[], requests=len(requests))
    for batch, completion in zip(batches, completions, strict=False):
        if not completion.ok:
            result.failed += 1
            result.scores.extend([None] * len(batch))
            continue
        parsed = parse(completion.text, len(batch))
        result.unparsed += len(batch) - len(parsed)
        result.scores.extend(parsed.get(i) for i in range(1, len(batch) + 1))
    order = sorted(
        range(len(candidates)),
        key=lambda i: (result.scores[i] is None, -(result.scores[i] or 0.0), i),
    )
    result.ranked = [(candidates[i][0], result.scores[i] or 0.0) for i in order[: max(0, top_r)]]
    return result


@dataclass
class IterativeResult:
    ranked: Ranked
    queries: list[str] = field(default_factory=list)  # the retrieval query of each turn
    thoughts: list[str] = field(default_factory=list)
    requests: int = 0
    failed: int = 0
    empty: int = 0
    stopped: str = "turns"  # turns | thought_failed | thought_empty


def numbered_context(texts: Sequence[str], budget_tokens: int | None, tokenizer: Any) -> str:
    """``1. text`` lines in the given order, skipping texts that would overflow ``budget_tokens``."""
    kept, used = [], 0
    for t in texts:
        n = tokenizer.count(t) if budget_tokens is not None and tokenizer is not None else 0
        if budget_tokens is not None and used + n > budget_tokens:
            continue
        kept.append(t)
        used += n
    return "\n".join(f"{i}. {t}" for i, t in enumerate(kept, start=1))


def iterative(
    rank: Callable[[str, int], Ranked],
    llm: Any,
    question: str,
    texts: Sequence[str],
    *,
    turns: int,
    top_t: int,
    top_k: int,
    prompt: str,
    max_tokens: int = 256,
    final: str = "best_score",
    budget_tokens: int | None = None,
    tokenizer: Any = None,
    sampling: dict[str, Any] | None = None,
) -> IterativeResult:
    """N turns of top-T retrieval and thoughts; each unit keeps its best score; the final top-K."""
    if final not in FINALS:
        raise ValueError(
            f"memory.iterative.final must be one of {' | '.join(FINALS)}, got {final!r}"
        )
    if turns < 1:
        raise ValueError(f"memory.turns (N) must be at least 1, got {turns}")
    best: dict[int, float] = {}
    first: dict[int, int] = {}
    result = IterativeResult(ranked=[])
    query = question
    for turn in range(turns):
        result.queries.append(query)
        for node, score in rank(query, top_t):
            first.setdefault(node, len(first))
            best[node] = max(score, best.get(node, score))
        if final == "best_score" and turn == turns - 1:
            break
        gathered = sorted(best, key=lambda v: (-best[v], first[v]))
        context = numbered_context([texts[v] for v in gathered], budget_tokens, tokenizer)
        completion = llm.complete(
            [
                ChatRequest.user(
                    prompt.format(context=context, question=question),
                    max_tokens=max_tokens,
                    **(sampling or {}),
                )
            ],
            desc="thought",
        )[0]
        result.requests += 1
        thought = completion.text.strip() if completion.ok else ""
        if not completion.ok or not thought:
            result.failed += not completion.ok
            result.empty += completion.ok
            result.stopped = "thought_failed" if not completion.ok else "thought_empty"
            break
        result.thoughts.append(thought)
        query = f"{question} {thought}"
    if final == "final_query":
        result.queries.append(query)
        result.ranked = rank(query, top_k)
    else:
        order = sorted(best, key=lambda v: (-best[v], first[v]))[: max(0, top_k)]
        result.ranked = [(v, best[v]) for v in order]
    return result
