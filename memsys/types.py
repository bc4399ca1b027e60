"""The data model shared by every dataset, memory system and metric.

An *episode* is one memory scope (an MSC session, a QuALITY article, the whole
MultiHop-RAG corpus). It holds an ordered stream of units to insert and the
questions asked about them; each question carries the stream position at which
it is asked (offline datasets ask everything after the last insert, online ones
such as MSC-E interleave questions with inserts).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal


def content_id(*parts: Any, prefix: str = "", length: int = 16) -> str:
    """A stable id derived from content (sha256 of the JSON of ``parts``)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]
    return f"{prefix}{digest}"


@dataclass(frozen=True)
class Unit:
    """One piece of content to insert into memory (a dialogue round, a chunk)."""

    id: str
    text: str
    source_id: str  # the document / session the unit comes from
    position: int  # 0-based index in the episode's insert stream
    timestamp: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The unit as a JSON object (what offline memories save to rebuild after a load)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Unit:
        return cls(**data)


@dataclass(frozen=True)
class Evidence:
    """A pointer to the source that supports an answer."""

    source_id: str
    text: str = ""  # the supporting fact, when the dataset gives one
    position: int | None = None  # insert-stream position of the evidence
    # Exclusive end of the stream positions the evidence spans ([position, end)). When set, the
    # evidence is those units (MSC-E evidence rounds, a dialogue round); when None it is every unit
    # of ``source_id`` (a MultiHop-RAG article). Evidence recall matches retrieved units this way.
    end: int | None = None


@dataclass(frozen=True)
class Update:
    """The gold of a question about a fact the stream later deleted or corrected (issue 45,
    docs/forgetting.md): what must be gone from retrieval, and the value that is no longer true."""

    kind: Literal["deletion", "correction"]
    forgotten_units: tuple[str, ...] = ()  # a forget request removed them: never to be retrieved
    superseded_units: tuple[str, ...] = ()  # they state the old value a correction replaced
    current_units: tuple[str, ...] = ()  # they state the value that holds now
    superseded_answer: str = ""  # the old value (the forgotten fact, or the corrected one)


# A unit whose metadata carries this key is a forget request, not content: ``MemorySystem.insert``
# calls ``forget`` with the unit ids it lists, in stream order, and stores nothing of it.
FORGET_KEY = "forget"
FORGET_METHOD_KEY = "forget_method"  # optional: "own" (default) or "rebuild" (MemorySystem.forget)

OPTION_LETTERS = "ABCDEFGHIJ"  # multiple-choice options are lettered A..J


def option_letters(n_options: int, question_id: str = "?") -> str:
    """The letters of ``n_options`` options; more options than letters is refused, naming the question."""
    if n_options > len(OPTION_LETTERS):
        raise ValueError(
            f"question {question_id} has {n_options} options; multiple-choice answers are letters "
            f"{OPTION_LETTERS[0]}-{OPTION_LETTERS[-1]}, so at most {len(OPTION_LETTERS)} options are supported"
        )
    return OPTION_LETTERS[:n_options]


@dataclass(frozen=True)
class Question:
    """A question asked after the first ``position`` units were inserted."""

    id: str
    text: str
    answers: tuple[str, ...]
    position: int
    options: tuple[str, ...] | None = None
    gold_option: int | None = None  # 0-based index into options
    categories: dict[str, str] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    # The date the data says the question is asked (LongMemEval's question_date), as the dataset
    # writes it; the answer prompt shows it as the current date (eval.answer.now_line). None: no date.
    asked_at: str | None = None
    # A rubric of nuggets the answer is judged against one by one (BEAM's probing questions); empty
    # for datasets without one.
    rubric: tuple[str, ...] = ()
    update: Update | None = None  # the fact asked about was deleted or corrected in the stream

    @property
    def evidence_position(self) -> int | None:
        """Earliest stream position of the evidence, if the dataset gives one."""
        positions = [e.position for e in self.evidence if e.position is not None]
        return min(positions) if positions else None


@dataclass
class Episode:
    """One memory scope: units in insertion order plus the questions about them."""

    id: str
    units: list[Unit]
    questions: list[Question]
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i, unit in enumerate(self.units):
            if unit.position != i:
                raise ValueError(
                    f"episode {self.id}: unit {unit.id} has position {unit.position}, expected {i}"
                )
        for q in self.questions:
            if not 0 <= q.position <= len(self.units):
                raise ValueError(
                    f"episode {self.id}: question {q.id} asked at {q.position}, "
                    f"outside 0..{len(self.units)}"
                )

    def events(
        self,
    ) -> Iterator[tuple[Literal["insert"], list[Unit]] | tuple[Literal["ask"], Question]]:
        """Yield ("insert", batch) and ("ask", question) in stream order.

        Units between two question positions form one batch; questions asked at
        the same position keep their dataset order.
        """
        asks = sorted(enumerate(self.questions), key=lambda iq: (iq[1].position, iq[0]))
        cursor = 0
        for _, q in asks:
            if q.position > cursor:
                yield "insert", self.units[cursor : q.position]
                cursor = q.position
            yield "ask", q
        if cursor < len(self.units):
            yield "insert", self.units[cursor:]

    @property
    def is_online(self) -> bool:
        """True when some question is asked before the last unit is inserted."""
        return any(q.position < len(self.units) for q in self.questions)


@dataclass(frozen=True)
class RetrievedItem:
    """What a memory system returns for a query, with provenance."""

    text: str
    score: float
    node_id: str
    level: int = 0  # 0 = leaf / raw unit; higher = more abstract
    source_unit_ids: tuple[str, ...] = ()
    tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["source_unit_ids"] = list(self.source_unit_ids)
        return d


def units_from_texts(
    texts: Sequence[str],
    source_id: str,
    start: int = 0,
    timestamp: str | None = None,
    cut: bool = False,
    **metadata: Any,
) -> list[Unit]:
    """Make units with content-addressed ids from consecutive texts of one source.

    ``cut``: the texts are consecutive cuts of one text (token windows, which may end mid-word);
    every unit after the first is marked ``metadata["continues"] = True`` so that a memory that
    rejoins a document's units (``rejoin_separator``) restores the text exactly."""
    return [
        Unit(
            id=content_id(source_id, start + i, t, prefix="u-"),
            text=t,
            source_id=source_id,
            position=start + i,
            timestamp=timestamp,
            metadata={**metadata, **({"continues": True} if cut and i > 0 else {})},
        )
        for i, t in enumerate(texts)
    ]


def rejoin_separator(previous: str, unit: Unit, default: str = " ") -> str:
    """What goes between ``previous`` text and ``unit`` when a document's units are read as one
    text: nothing when the unit continues a cut (``units_from_texts(cut=True)``) or either side
    already has whitespace at the joint, ``default`` otherwise."""
    if unit.metadata.get("continues") or not previous or previous[-1].isspace():
        return ""
    return "" if unit.text[:1].isspace() else default
