"""Test doubles for GraphRAG-lite: an LLM that answers each GraphRAG step from hand-written replies,
a chat backend that does the same for whole runs, and a memory that answers its own questions."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable

from memharness.baselines.full_context import FullContext
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.types import Unit, content_id


def unit(text: str, position: int, source: str = "doc") -> Unit:
    return Unit(
        id=content_id("t", position, text, prefix="u-"),
        text=text,
        source_id=source,
        position=position,
    )


def step_of(request: ChatRequest) -> str:
    """Which GraphRAG step a request belongs to (read from its prompts)."""
    first, last = request.messages[0][1], request.messages[-1][1]
    if request.choices == ("Y", "N"):
        return "loop"
    if "---Analyst reports---" in first:
        return "reduce"
    if "---Reports---" in first and request.messages[0][0] == "system":
        return "map"
    if "Your last answer missed" in last:
        return "glean"
    if "-Your data-" in first:
        return "extract"
    if "Descriptions:" in last:
        return "summarize"
    if "Report:" in last:
        return "report"
    raise AssertionError(f"unknown GraphRAG step: {last[:200]}")


def input_text(request: ChatRequest) -> str:
    """The text unit an extraction conversation is about."""
    return (
        request.messages[0][1]
        .rsplit("Text:\n", 1)[1]
        .rsplit("\nOutput:", 1)[0]
        .rsplit("\nJSON:", 1)[0]
    )


class StepLLM:
    """``complete`` answers each request with ``respond(step, request)``; a str becomes a completion,
    None a failed call, a ``Completion`` is returned as it is. Every batch is recorded with the
    steps it held."""

    def __init__(self, respond: Callable[[str, ChatRequest], str | Completion | None]) -> None:
        self.respond = respond
        self.batches: list[list[tuple[str, ChatRequest]]] = []

    def complete(self, requests: list[ChatRequest], desc: str | None = None) -> list[Completion]:
        batch = [(step_of(r), r) for r in requests]
        self.batches.append(batch)
        out = []
        for step, r in batch:
            reply = self.respond(step, r)
            if isinstance(reply, Completion):  # usage and finish_reason as the test sets them
                out.append(reply)
                continue
            out.append(
                Completion(text="", error="BackendError: boom")
                if reply is None
                else Completion(text=reply)
            )
        return out

    def steps(self) -> list[str]:
        """One label per batch (the batch's single step, or 'mixed')."""
        return [b[0][0] if len({s for s, _ in b}) == 1 else "mixed" for b in self.batches]

    def calls(self, step: str) -> int:
        return sum(1 for b in self.batches for s, _ in b if s == step)


def report_json(title: str, rating: float = 5.0) -> str:
    return json.dumps(
        {
            "title": title,
            "summary": f"About {title}.",
            "rating": rating,
            "rating_explanation": "test",
            "findings": [{"summary": f"{title} finding", "explanation": "because"}],
        }
    )


def capitalised_records(text: str) -> str:
    """Rule-based extraction reply: capitalised words are entities, neighbours are related."""
    names = list(dict.fromkeys(w.upper() for w in re.findall(r"\b[A-Z][a-z]{2,}\b", text)))
    records = [f'("entity"<|>{n}<|>PERSON<|>{n} appears in the text)' for n in names]
    records += [
        f'("relationship"<|>{a}<|>{b}<|>{a} and {b} appear together<|>2)'
        for a, b in zip(names, names[1:], strict=False)
    ]
    return "\n##\n".join(records) + "\n<|COMPLETE|>"


# A small corpus with two clusters of named things (and one unit without names) and its step replies.
TEXTS = [
    "Ana Ruiz leads Velox Rail in Port Elden.",
    "Velox Rail builds the Elden tram with Ana Ruiz and Mira Chen.",
    "Mira Chen audits Velox Rail for the Elden council.",
    "Tomas Berg coaches the Harbor Hawks in Ridgeway.",
    "The Harbor Hawks beat the Ridge Foxes while Tomas Berg watched.",
    "Ridge Foxes fans met Tomas Berg in Ridgeway.",
    "nothing capitalised here at all.",
]


def responder(map_reply=None):
    """Hand-written replies for every GraphRAG step over TEXTS (map replies from ``map_reply``)."""

    def respond(step, request):
        if step == "extract":
            return capitalised_records(input_text(request))
        if step == "glean":
            return (
                "I found nothing." if input_text(request).startswith("nothing") else "<|COMPLETE|>"
            )
        if step == "summarize":
            return "SUMMARY"
        if step == "report":
            data = request.messages[-1][1].split("Data:\n", 1)[1]
            names = [
                line.split(",")[1]
                for line in data.split("-----Entities-----\n")[-1].splitlines()[1:3]
                if "," in line
            ]
            return report_json(" and ".join(names) or "sub-communities", rating=len(data) % 10)
        if step == "map":
            return map_reply(request) if map_reply else json.dumps({"points": []})
        if step == "reduce":
            return "REDUCED"
        raise AssertionError(step)

    return respond


class GraphChat:
    """A chat backend for whole runs: capitalised-word extraction, fixed summaries and reports, map
    points scored ``map_score`` (0 = every point scored 0), a short reduce answer. ``map_broken``:
    ``all`` makes every map reply unreadable, ``some`` those whose table starts with an even report id."""

    max_concurrency = None

    def __init__(
        self, map_score: int = 60, model_id: str = "fake-graphrag", map_broken: str = "none"
    ) -> None:
        self.map_score, self.model_id, self.map_broken = int(map_score), model_id, map_broken
        self.steps: list[str] = []
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> Completion:
        if not any(
            "-Your data-" in c
            or "---" in c
            or "Descriptions:" in c
            or "Report:" in c
            or "missed" in c
            for _, c in request.messages
        ):
            return Completion(
                text="1" if request.choices == ("0", "1") else "an answer"
            )  # answer / judge prompts
        step = step_of(request)
        with self._lock:
            self.steps.append(step)
        if step == "extract":
            text = capitalised_records(input_text(request))
        elif step == "glean":
            text = "<|COMPLETE|>"
        elif step == "loop":
            text = "N"
        elif step == "summarize":
            text = "A merged description."
        elif step == "report":
            names = re.findall(r"^\d+,([A-Z]+),", request.messages[-1][1], flags=re.M)
            text = report_json(" and ".join(names[:2]) or "community")
        elif step == "map" and self._broken(request):
            text = "not json"
        elif step == "map":
            text = json.dumps(
                {
                    "points": [
                        {"description": "A point [Data: Reports (0)]", "score": self.map_score}
                    ]
                }
            )
        else:
            text = "reduced answer"
        return Completion(text=text, prompt_tokens=10, completion_tokens=5)

    def _broken(self, request: ChatRequest) -> bool:
        if self.map_broken != "some":
            return self.map_broken == "all"
        first_row = request.messages[0][1].split("---Reports---\n", 1)[1].splitlines()[2]
        return int(first_row.split("|")[0]) % 2 == 0


class SelfAnsweringMemory(FullContext):
    """Full context that answers its own questions with one LLM call naming the retrieved items."""

    answers_itself = True

    def __init__(self, fail_on: str = "", **services) -> None:
        super().__init__(**services)
        self.fail_on = fail_on
        self.answered: list[str] = []

    def answer(self, question, items, multiple_choice=False):
        if self.fail_on and self.fail_on in question.text:
            raise RuntimeError("cannot answer")
        self.answered.append(question.id)
        prompt = f"SELF {question.text} over {len(items)} items"
        comp = self.llm.complete([ChatRequest.user(prompt, max_tokens=8)])[0]
        comp.extra = {**comp.extra, "prompt": prompt}
        return comp


class StepChat:
    """A chat backend answering each GraphRAG step with ``respond(step, request)`` (a str), for tests
    that go through the real LLM facade and its meter; ``steps`` lists the steps asked, in order."""

    max_concurrency = None

    def __init__(self, respond: Callable[[str, ChatRequest], str], model_id: str = "step") -> None:
        self.respond, self.model_id = respond, model_id
        self.steps: list[str] = []
        self._lock = threading.Lock()

    def chat(self, request: ChatRequest) -> Completion:
        step = step_of(request)
        with self._lock:
            self.steps.append(step)
        return Completion(text=self.respond(step, request), prompt_tokens=10, completion_tokens=5)
