"""MemoryStream: a flat table of embedded memories (Park et al., Generative Agents).

Default retrieval is plain cosine top-k over the embedding table. With
``scoring: generative_agents`` (Park et al.'s retrieval; one LLM importance
rating per insertion, as MemTree's Table A.2 counts for its MemoryStream
baseline, so the MemTree experiments use it) each memory is scored by a
weighted sum of min-max normalised recency, importance and relevance:

- recency (``recency``, paper and released code differ, both exposed):
  ``paper`` (default): ``recency_decay ** age``, exponential decay (0.995) per
  game hour since last access, so recently accessed memories score higher.
  Age is counted on the data's clock (``clock: data``): hours since last access,
  where a memory is accessed when inserted (at its unit's ``timestamp``) or
  returned by a retrieval (at the latest time inserted so far: the stream's
  "now"). LoCoMo, LongMemEval and MultiHop-RAG units carry timestamps. When a
  unit has none, or the times go backwards in insert order (no clock that moves
  forward), age falls back to insert positions since the last access, as with
  ``clock: steps``; ``stats()["recency_clock"]`` says which clock ran.
  ``released_code`` (``retrieve.py``, ``new_retrieve``): the memories sorted
  ascending by last access get ``recency_decay ** i`` for rank i = 1..N (the
  code's decay is 0.99), a per-step decay that gives the *least* recently
  accessed memory the highest recency. The paper is the default because it is
  the method as described, and the code's ordering reverses its stated intent.
- importance: an LLM rating from 1 (mundane) to 10 (very significant), asked
  once per memory at insert time with ``importance_prompt``. A reply that is
  not a number in 1..10 is counted in ``stats()["importance_unparsed"]`` and
  the memory gets the neutral ``importance_default``.
- relevance: cosine similarity with the query.

The decay and the three weights left unset (None) follow the recency mode:
``paper`` 0.995 and weights 1 / 1 / 1; ``released_code`` 0.99 and the code's
hard-coded global weights 0.5 (recency), 3 (relevance), 2 (importance). A
value that is set wins in either mode.

When all candidates share one value of a component, min-max normalisation sets
it to 0.5 for all (as in the public code).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.settings import Placeholders, Range
from memharness.memsys.types import RetrievedItem, Unit


def min_max(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant vector becomes all 0.5."""
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-12:
        return np.full_like(values, 0.5, dtype=np.float64)
    return (values - lo) / (hi - lo)


RECENCIES = ("paper", "released_code")
CLOCKS = ("data", "steps")
EPOCH = datetime(1970, 1, 1)
# Per recency mode: (decay, recency weight, importance weight, relevance weight). The released code
# (retrieve.py) multiplies its 1 / 1 / 1 weights by the global weights [0.5, 3, 2] in the order
# recency, relevance, importance.
MODE_CONSTANTS = {"paper": (0.995, 1.0, 1.0, 1.0), "released_code": (0.99, 0.5, 2.0, 3.0)}


def recency_scores(last_access: Sequence[int], now: int, decay: float, mode: str) -> np.ndarray:
    """Recency of each memory (see the module doc): ``paper`` decays per step since last access,
    ``released_code`` per rank in ascending last-access order (ties in memory order)."""
    last = np.asarray(last_access, dtype=np.float64)
    if mode == "paper":
        return decay ** (now - last)
    if mode != "released_code":
        raise ValueError(f"memory.recency must be one of {' | '.join(RECENCIES)}, got {mode!r}")
    out = np.empty(len(last), dtype=np.float64)
    out[np.argsort(last, kind="stable")] = decay ** np.arange(1, len(last) + 1, dtype=np.float64)
    return out


def hours_of(timestamp: str | None, unit_id: str) -> float | None:
    """Hours since 1970 of an ISO timestamp (naive = UTC); None without one. A timestamp that is
    not ISO is refused in one line."""
    if timestamp is None:
        return None
    try:
        when = datetime.fromisoformat(str(timestamp))
    except ValueError:
        raise ValueError(
            f"memorystream: unit {unit_id} has timestamp {timestamp!r}, not ISO 8601; "
            "set memory.clock=steps to decay by insert positions"
        ) from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return (when - EPOCH).total_seconds() / 3600.0


def data_clock_fallback(hours: Sequence[float | None]) -> str | None:
    """Why the data's times cannot be the clock (None when they can): a unit without a time, or a
    time earlier than one inserted before it."""
    if any(h is None for h in hours):
        return "a unit without a timestamp"
    if any(b < a for a, b in zip(hours, hours[1:], strict=False)):
        return "timestamps go backwards in insert order"
    return None


def parse_importance(reply: str) -> int | None:
    """The first integer in the reply if it lies in 1..10, else None."""
    match = re.search(r"\d+", reply)
    if not match:
        return None
    value = int(match.group())
    return value if 1 <= value <= 10 else None


class MemoryStream(MemorySystem):
    """Flat embedding table with cosine top-k, or Generative Agents scoring."""

    name = "memorystream"
    retrieval_settings = (
        "top_k",
        "recency_decay",
        "recency_weight",
        "importance_weight",
        "relevance_weight",
        "update_access",
    )

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        top_k: Annotated[int, Range(1)] = 3,
        scoring: Literal["cosine", "generative_agents"] = "cosine",
        recency: Literal["paper", "released_code"] = "paper",
        clock: Literal["data", "steps"] = "data",
        recency_decay: Annotated[float, Range(0, 1, lo_open=True)] | None = None,
        recency_weight: Annotated[float, Range(0)] | None = None,
        importance_weight: Annotated[float, Range(0)] | None = None,
        relevance_weight: Annotated[float, Range(0)] | None = None,
        importance_default: Annotated[int, Range(1, 10)] = 5,
        importance_prompt: Annotated[str, Placeholders(optional=("memory",))] = "",
        importance_max_tokens: Annotated[int, Range(1)] = 4,
        update_access: bool = True,
    ) -> None:
        super().__init__(llm, embedder, tokenizer)
        self.top_k = top_k
        self.scoring = scoring
        if recency not in MODE_CONSTANTS:
            raise ValueError(
                f"memory.recency must be one of {' | '.join(RECENCIES)}, got {recency!r}"
            )
        given = (recency_decay, recency_weight, importance_weight, relevance_weight)
        decay, *weights = (
            default if value is None else float(value)
            for value, default in zip(given, MODE_CONSTANTS[recency], strict=True)
        )
        if clock not in CLOCKS:
            raise ValueError(f"memory.clock must be one of {' | '.join(CLOCKS)}, got {clock!r}")
        self.recency, self.recency_decay, self.clock = recency, decay, clock
        self.weights = tuple(weights)  # recency, importance, relevance
        self.importance_default = importance_default
        self.importance_prompt = importance_prompt
        self.importance_max_tokens = importance_max_tokens
        self.update_access = update_access
        self._vectors: list[np.ndarray] = []
        self._importance: list[float] = []
        self._last_access: list[int] = []  # insert position of the last access
        self._hours: list[float | None] = []  # each memory's data time (hours), None without one
        self._last_access_hours: list[float] = []  # data time of the last access (data clock)
        self._latest_hours = float("-inf")  # the latest data time of a forgotten unit
        self.importance_unparsed = 0
        self.importance_failed = 0

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """Cross-field rule: Generative Agents scoring rates importance with the prompt."""
        if settings.get("scoring") == "generative_agents" and "{memory}" not in settings.get(
            "importance_prompt", ""
        ):
            yield (
                "importance_prompt",
                "must contain the placeholder {memory} when scoring=generative_agents",
            )

    def add(self, units: Sequence[Unit]) -> None:
        self._vectors.extend(self.embedder.embed([u.text for u in units]))
        self._last_access.extend(u.position for u in units)
        if self.scoring == "generative_agents" and self.clock == "data":
            hours = [hours_of(u.timestamp, u.id) for u in units]
            self._hours.extend(hours)
            self._last_access_hours.extend(h if h is not None else 0.0 for h in hours)
        if self.scoring == "generative_agents":
            self._importance.extend(self._rate_importance(units))

    def _rate_importance(self, units: Sequence[Unit]) -> list[float]:
        requests = [
            ChatRequest.user(
                self.importance_prompt.format(memory=u.text), max_tokens=self.importance_max_tokens
            )
            for u in units
        ]
        ratings = []
        for completion in self.llm.complete(requests, desc="importance"):
            value = parse_importance(completion.text) if completion.ok else None
            if not completion.ok:
                self.importance_failed += 1
                self.degrade("importance_failed")
            elif value is None:
                self.importance_unparsed += 1
                self.degrade("importance_unparsed")
            ratings.append(float(value if value is not None else self.importance_default))
        return ratings

    def scores(self, query_vector: np.ndarray) -> np.ndarray:
        """Score every memory for a query (cosine, or the weighted Generative Agents sum)."""
        relevance = np.stack(self._vectors) @ query_vector
        if self.scoring == "cosine":
            return relevance
        if self.recency_clock() == "data_hours":
            last, now = self._last_access_hours, self._now_hours()
        else:
            last, now = self._last_access, self.now
        recency = recency_scores(last, now, self.recency_decay, self.recency)
        w_rec, w_imp, w_rel = self.weights
        return (
            w_rec * min_max(recency)
            + w_imp * min_max(np.asarray(self._importance))
            + w_rel * min_max(relevance)
        )

    def recency_clock(self) -> str:
        """``data_hours`` when ``clock: data`` and every memory's time moves forward, else
        ``insert_steps``."""
        usable = self.clock == "data" and data_clock_fallback(self._hours) is None
        return "data_hours" if usable and self._hours else "insert_steps"

    def _now_hours(self) -> float:
        """The stream's now: the latest data time inserted so far (forgotten units included)."""
        return max([self._latest_hours, *(h for h in self._hours if h is not None)])

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        if not self._vectors:
            return []
        scores = self.scores(self.embedder.embed_one(question))
        order = np.argsort(-scores, kind="stable")[: self.top_k]
        items = [
            RetrievedItem(
                text=self.units[i].text,
                score=float(scores[i]),
                node_id=self.units[i].id,
                level=0,
                source_unit_ids=(self.units[i].id,),
            )
            for i in order
        ]
        kept = fill_budget(items, budget_tokens, self.tokenizer)
        if self.update_access and self.scoring == "generative_agents":
            kept_ids = {k.node_id for k in kept}
            now_hours = self._now_hours() if self.recency_clock() == "data_hours" else None
            for i in order:
                if self.units[i].id in kept_ids:
                    self._last_access[i] = self.now
                    if now_hours is not None:
                        self._last_access_hours[i] = now_hours
        return kept

    @property
    def now(self) -> int:
        """The step the stream has reached: every unit inserted so far, forgotten ones included."""
        return len(self.units) + self.forgotten_units

    def drop_units(self, unit_ids: set[str]) -> str:
        """Forget: each unit is one record, nothing is derived from it; drop its rows (no call)."""
        keep = self.remove_units(unit_ids)
        rows = [i for i, k in enumerate(keep) if k]
        self._vectors = [self._vectors[i] for i in rows]
        self._last_access = [self._last_access[i] for i in rows]
        if self._importance:
            self._importance = [self._importance[i] for i in rows]
        if self._hours:  # the data clock's now stays the latest time seen, forgotten units included
            self._latest_hours = max(self._latest_hours, self._now_hours())
            self._hours = [self._hours[i] for i in rows]
            self._last_access_hours = [self._last_access_hours[i] for i in rows]
        return "drop"

    def state(self) -> dict[str, Any]:
        """The embedded table and the ratings (a snapshot of the built memory)."""
        return {
            "vectors": np.stack(self._vectors) if self._vectors else np.zeros((0, 0), np.float32),
            "importance": list(self._importance),
            "last_access": list(self._last_access),
            "hours": list(self._hours),
            "last_access_hours": list(self._last_access_hours),
            "importance_unparsed": self.importance_unparsed,
            "importance_failed": self.importance_failed,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self._vectors = list(np.asarray(state["vectors"], dtype=np.float32))
        self._importance, self._last_access = list(state["importance"]), list(state["last_access"])
        self._hours, self._last_access_hours = (
            list(state["hours"]),
            list(state["last_access_hours"]),
        )
        self.importance_unparsed, self.importance_failed = (
            state["importance_unparsed"],
            state["importance_failed"],
        )

    def stats(self) -> dict[str, Any]:
        out = {**super().stats(), "memories": len(self._vectors), "scoring": self.scoring}
        if self.scoring == "generative_agents":
            out.update(
                recency=self.recency,
                recency_decay=self.recency_decay,
                recency_clock=self.recency_clock(),
                clock_fallback=data_clock_fallback(self._hours) if self.clock == "data" else None,
                weights=dict(
                    zip(("recency", "importance", "relevance"), self.weights, strict=True)
                ),
                importance_unparsed=self.importance_unparsed,
                importance_failed=self.importance_failed,
                importance_mean=float(np.mean(self._importance)) if self._importance else None,
            )
        return out
