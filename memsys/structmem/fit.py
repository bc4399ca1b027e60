"""The prompts structural memory sends, checked from its settings before anything loads:
``settings_problems`` finds a prompt or output cap the chosen structure and retrieval need but lack;
``prompt_needs`` estimates the longest prompt of each call kind.


A backend with a fixed context (llama.cpp's ``n_ctx``) cuts a prompt that does not fit in the middle
(counted as ``prompt_cuts``); a rerank batch or a thought prompt cut that way loses documents silently.
``prompt_needs`` gives, per call kind, the prompt tokens its worst case needs and the settings that
size it, so the run check (``eval/run/validate.py``) can refuse a configuration that cannot fit.
Counts use the run's tokenizer, not the model's: an estimate, with the question allowed
``QUESTION_TOKENS``, each numbered line ``LINE_TOKENS`` of numbering, a chunk the dataset's chunk size
(or ``extraction.chunk_tokens``), a summary its output cap and a triple or fact ``LINE_UNIT_TOKENS``. Whatever
still does not fit is cut by the backend and counted (``prompt_cuts`` in metrics.json).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from memharness.memsys.structmem.extraction import LLM_KINDS, kinds_of

QUESTION_TOKENS = 100  # allowed for the question in rerank and thought prompts
LINE_TOKENS = 4  # "Document 12:\n" or "12. " around each unit
LINE_UNIT_TOKENS = 64  # one triple or atomic fact: one reply line (the prompts ask for short ones)


def _template(prompt: str, count: Callable[[str], int]) -> int:
    return count(re.sub(r"\{[a-z_]+\}", "", prompt or ""))


def _section(settings: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """A group's YAML section (``extraction``, ``rerank``, ``iterative``); null: its defaults."""
    return settings.get(name) or {}


def unit_tokens(settings: Mapping[str, Any], dataset: Mapping[str, Any]) -> int | None:
    """The longest source chunk: ``extraction.chunk_tokens``, else the dataset's chunk size (None:
    unknown)."""
    chunk_tokens = _section(settings, "extraction").get("chunk_tokens")
    sizes = [chunk_tokens, (dataset.get("loader") or {}).get("chunk_size")]
    known = [int(s) for s in sizes if isinstance(s, int) and not isinstance(s, bool)]
    return min(known) if known else None


def prompt_needs(
    settings: Mapping[str, Any], dataset: Mapping[str, Any], count: Callable[[str], int]
) -> Iterator[tuple[str, str, int, int]]:
    """(call kind, the settings that size it, prompt tokens, output tokens) for each LLM call kind."""
    prompts = settings.get("prompts") or {}
    caps = _section(settings, "extraction").get("max_tokens") or {}
    chunk = unit_tokens(settings, dataset)
    kinds = kinds_of(settings.get("structure", "chunks"))
    for kind in (k for k in kinds if k in LLM_KINDS and chunk is not None):
        prompt = _template(prompts.get(kind, ""), count) + chunk
        yield (
            f"{kind} extraction",
            "memory.extraction.chunk_tokens",
            prompt,
            int(caps.get(kind, 512)),
        )
    sizes = [
        chunk if k == "chunks" else caps.get(k, 512) if k == "summaries" else LINE_UNIT_TOKENS
        for k in kinds
    ]
    largest = None if None in sizes else max(int(s) for s in sizes)  # the longest memory unit
    retrieval = settings.get("retrieval", "single")
    if retrieval == "rerank" and largest is not None:
        rerank = _section(settings, "rerank")
        fmt = (rerank.get("formats") or {}).get(rerank.get("format", "json"), "")
        batch = int(rerank.get("batch", 10))
        prompt = _template(prompts.get("rerank", ""), count) + count(fmt) + QUESTION_TOKENS
        prompt += batch * (largest + LINE_TOKENS)
        yield (
            f"rerank batches ({batch} units of up to {largest} tokens)",
            "memory.rerank.batch or memory.extraction.chunk_tokens",
            prompt,
            int(rerank.get("max_tokens", 256)),
        )
    if retrieval == "iterative":
        iterative = _section(settings, "iterative")
        budget = iterative.get("thought_budget_tokens")
        units = int(settings.get("top_t", 50)) * int(settings.get("turns", 4))
        if budget is None and largest is not None:
            budget = units * largest
        if budget is not None:
            prompt = _template(prompts.get("thought", ""), count) + QUESTION_TOKENS
            prompt += int(budget) + LINE_TOKENS * min(units, int(budget))
            yield (
                f"thought prompts ({budget} tokens of units)",
                "memory.iterative.thought_budget_tokens",
                prompt,
                int(iterative.get("thought_max_tokens", 256)),
            )


def settings_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, problem) for each prompt or output cap the chosen structure and retrieval need but lack
    (structural memory's cross-field rules)."""
    prompts = settings.get("prompts") or {}
    caps = _section(settings, "extraction").get("max_tokens")
    known = (*LLM_KINDS, "rerank", "thought")
    for name in sorted(set(prompts) - set(known)):  # a typo would otherwise be ignored
        yield (
            f"prompts.{name}",
            f"is not a prompt of structural memory; known: {', '.join(known)}",
        )
    for name in sorted(set(caps or {}) - set(LLM_KINDS)):
        yield (
            f"extraction.max_tokens.{name}",
            f"is not an extraction kind; known: {', '.join(LLM_KINDS)}",
        )
    for kind in kinds_of(settings.get("structure", "chunks")):
        if kind in LLM_KINDS:
            yield from _placeholders(f"prompts.{kind}", prompts.get(kind, ""), ("text",))
            if caps is not None and kind not in caps:
                yield (
                    "extraction.max_tokens",
                    f"has no entry for {kind!r} (structure={settings.get('structure')})",
                )
    retrieval = settings.get("retrieval", "single")
    if retrieval == "rerank":
        yield from _placeholders(
            "prompts.rerank",
            prompts.get("rerank", ""),
            ("question", "documents", "output_format"),
        )
        rerank = _section(settings, "rerank")
        fmt = rerank.get("format", "json")
        if fmt not in (rerank.get("formats") or {}):
            yield "rerank.formats", f"has no entry for rerank.format={fmt!r}"
    if retrieval == "iterative":
        yield from _placeholders(
            "prompts.thought", prompts.get("thought", ""), ("context", "question")
        )


def _placeholders(name: str, prompt: str, needed: tuple[str, ...]):
    missing = [p for p in needed if "{" + p + "}" not in (prompt or "")]
    if missing:
        yield name, f"must contain the placeholder(s) {', '.join('{' + p + '}' for p in missing)}"
