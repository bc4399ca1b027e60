"""Test-only doubles: datasets and memories with planted problems, and a chat backend with log-probs.

The general-purpose doubles (scripted chat, hashing embedder, word tokenizer) live in
memharness.memsys.testing.doubles; ScriptedChat is re-exported here for ``_target_: fakes.ScriptedChat``
(tests/conf/llm/fake.yaml). The real embedded models are exercised by the ``slow`` tests.
"""

from __future__ import annotations

from memharness.baselines.full_context import FullContext
from memharness.memsys.testing.doubles import ScriptedChat

__all__ = [
    "DegradingMemory",
    "FailingMemory",
    "LeakyMemory",
    "ScriptedChat",
    "ScriptedChatWithLogprobs",
    "ScriptedJudge",
    "dataset_with_problems",
]


def dataset_with_problems(path: str | None = None, parts: object = None):
    """A loader result with one empty unit and evidence pointing at a missing source."""
    from memharness.data_prep.base import Dataset
    from memharness.memsys.types import Episode, Evidence, Question, units_from_texts

    units = units_from_texts(["The tram line opens in March.", ""], source_id="doc")
    question = Question(
        id="q",
        text="When does the tram open?",
        answers=("March",),
        position=2,
        evidence=(Evidence(source_id="missing-doc"),),
    )
    return Dataset(name="problems", episodes=[Episode(id="ep", units=units, questions=[question])])


class FailingMemory(FullContext):
    """A full-context memory whose insert raises when a unit contains ``fail_on``."""

    def __init__(self, fail_on: str = "", **services) -> None:
        super().__init__(**services)
        self.fail_on = fail_on

    def add(self, units) -> None:
        if any(self.fail_on in u.text for u in units):
            raise RuntimeError(f"cannot insert a unit containing {self.fail_on!r}")
        super().add(units)


class ScriptedChatWithLogprobs(ScriptedChat):
    """ScriptedChat that also scores prompt tokens: -1 nat per word, -0.25 after a "Summary" prefix."""

    def logprob(self, request) -> tuple[float, int]:
        words = len(request.text.split())
        return -(0.25 if request.prefix.startswith("Summary") else 1.0) * words, words


class DegradingMemory(FullContext):
    """A full-context memory that records a degradation (as a failed summary would) for every
    inserted unit containing ``degrade_on``."""

    def __init__(self, degrade_on: str = "", **services) -> None:
        super().__init__(**services)
        self.degrade_on = degrade_on

    def add(self, units) -> None:
        self.degrade("summary_failed", sum(self.degrade_on in u.text for u in units))
        super().add(units)


class ScriptedJudge:
    """A judge= model whose replies are given in order (``seen`` keeps every request)."""

    model_id = "scripted"

    def __init__(self, replies: list[str], ok: bool = True):
        self.replies, self.seen, self.ok = list(replies), [], ok

    def complete(self, requests, desc=""):
        from types import SimpleNamespace

        self.seen += requests
        return [SimpleNamespace(text=self.replies.pop(0), ok=self.ok) for _ in requests]


class LeakyMemory(FullContext):
    """A full-context memory whose forget does nothing: what a forgetting metric must catch."""

    def drop_units(self, unit_ids) -> str:
        return "ignored"
