"""Answer generation from retrieved items only (MemTree App. A.2.2); the judge's request is in
``eval/judge/prompt.py``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.eval.metrics.claims import LABELS
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import OPTION_LETTERS, Question, RetrievedItem, option_letters

LETTERS = OPTION_LETTERS


def format_context(items: Sequence[RetrievedItem]) -> str:
    """Number the retrieved items; an empty retrieval says so explicitly."""
    if not items:
        return "(no search results)"
    return "\n\n".join(f"[{i + 1}] {item.text}" for i, item in enumerate(items))


def format_options(options: Sequence[str], question_id: str = "?") -> str:
    """``(A) first`` ... one line per option; more than 10 options is refused (``option_letters``)."""
    letters = option_letters(len(options), question_id)
    return "\n".join(f"({letters[i]}) {opt}" for i, opt in enumerate(options))


MODES = ("auto", "generative", "multiple_choice", "claim_verification")
CLAIM_TASK = "claim_verification"  # the ``task`` category of a claim to verify (FABLES)


def is_claim(question: Question, mode: str) -> bool:
    """A claim to answer faithful / unfaithful: ``mode`` says so, or ``auto`` and the question's
    ``task`` category is ``claim_verification``."""
    if mode not in MODES:
        raise ValueError(f"eval.answer.mode must be {' | '.join(MODES)}, got {mode!r}")
    return mode == CLAIM_TASK or (mode == "auto" and question.categories.get("task") == CLAIM_TASK)


def is_multiple_choice(question: Question, mode: str) -> bool:
    if mode not in MODES:
        raise ValueError(f"eval.answer.mode must be {' | '.join(MODES)}, got {mode!r}")
    if is_claim(question, mode):
        return False
    if mode == "multiple_choice" and not question.options:
        raise ValueError(
            f"eval.answer.mode=multiple_choice but question {question.id} has no options"
        )
    chosen = bool(question.options) and (
        mode == "multiple_choice"
        or (mode == "auto" and question.gold_option is not None and not question.answers)
    )
    if chosen:
        option_letters(
            len(question.options), question.id
        )  # refuses more options than letters, clearly
    return chosen


def with_now(template: str, question: Question, cfg: Any) -> str:
    """``template`` with ``eval.answer.now_line`` (the data's date of the question) on its own line
    just before the line holding ``{question}``; unchanged when the question has no date. The date
    comes from the data only, never from the clock."""
    now_line = cfg.get("now_line") if hasattr(cfg, "get") else None
    if question.asked_at is None or not now_line:
        return template
    lines = template.split("\n")
    at = next((i for i, line in enumerate(lines) if "{question}" in line), len(lines))
    escaped = str(now_line).format(now=question.asked_at).replace("{", "{{").replace("}", "}}")
    return "\n".join([*lines[:at], escaped, *lines[at:]])


def question_with_hint(question: Question, cfg: Any) -> str:
    """The question's text with the instruction ``eval.answer.question_hints[<category>][<value>]``
    appended for the first of its categories that has one (LoCoMo's official QA script appends a
    date instruction to temporal questions); the text alone when none applies."""
    hints = cfg.get("question_hints") if hasattr(cfg, "get") else None
    for name, value in question.categories.items():
        hint = (hints or {}).get(name, {}).get(str(value))
        if hint:
            return f"{question.text} {hint}"
    return question.text


def answer_request(question: Question, items: Sequence[RetrievedItem], cfg: Any) -> ChatRequest:
    """The prompt sees only the question (and options, and its category's hint), its date when the
    data gives one, and the retrieved items."""
    context = format_context(items)
    text = question_with_hint(question, cfg)
    if is_multiple_choice(question, cfg.mode):
        prompt = with_now(cfg.mc_prompt, question, cfg).format(
            question=text,
            options=format_options(question.options, question.id),
            context=context,
        )
        if not cfg.get(
            "mc_constrained", True
        ):  # a free reply in the prompt's own format, parsed by parse_choice
            return ChatRequest.user(prompt, max_tokens=int(cfg.get("mc_max_tokens", 32)))
        letters = tuple(option_letters(len(question.options), question.id))
        return ChatRequest.user(prompt, max_tokens=2, choices=letters)
    if is_claim(question, cfg.mode):  # the reply is one of the two labels (grammar / guided choice)
        template = cfg.get("claim_prompt")
        if not template:
            raise ValueError(
                f"question {question.id} is a claim to verify but eval.answer.claim_prompt is not set"
            )
        prompt = template.format(claim=question.text, context=context)
        return ChatRequest.user(
            prompt, max_tokens=int(cfg.get("claim_max_tokens", 8)), choices=LABELS
        )
    prompt = with_now(cfg.prompt, question, cfg).format(question=text, context=context)
    return ChatRequest.user(prompt, max_tokens=int(cfg.max_tokens))


def final_answer(reply: str, cfg: Any) -> str | None:
    """The scored answer of a reply: the whole reply stripped, or with ``eval.answer.final_marker``
    (a chain-of-thought prompt) the text after the last line starting with it; None when the reply
    has no such line (the caller records it as a counted failure, never a guess)."""
    marker = cfg.get("final_marker") if hasattr(cfg, "get") else None
    text = reply.strip()
    if not marker:
        return text
    lines = [line.strip() for line in text.splitlines()]
    found = [line[len(marker) :].strip() for line in lines if line.startswith(marker)]
    return found[-1] if found else None
