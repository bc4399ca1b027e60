"""The bundled sample dataset, written by this project (``sample_data.json``).

Two parts, loaded through the same episode model as the real datasets:

- ``dialogues``: multi-session chats (MSC-like). One episode per dialogue; each
  round (one turn per speaker) is a unit labelled with its session; questions
  about earlier sessions are asked after the last round.
- ``news``: a dozen short invented news articles (MultiHop-RAG-like) in one
  shared episode, one unit per chunk with title, source and date prepended;
  inference / comparison / temporal questions whose evidence facts point at
  their articles.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from memharness.data_prep import hub
from memharness.data_prep.base import Dataset, DatasetError, sha256_file
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Evidence, Question, Unit, content_id

BUNDLED = Path(__file__).with_name("sample_data.json")
PARTS = ("dialogues", "news")


def load(
    path: hub.LocalPath = None,
    parts: Sequence[Literal["dialogues", "news"]] = PARTS,
    chunk_size: hub.ChunkSize = 256,
) -> Dataset:
    """Load the sample (or a file in the same format) as a ``Dataset``."""
    file = Path(path) if path else BUNDLED
    if not file.is_file():
        raise DatasetError(
            f"dataset.loader.path={str(file)!r}: the sample dataset file is not found"
        )
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise DatasetError(
            f"dataset.loader.parts has unknown parts {sorted(unknown)}; valid: {list(PARTS)}"
        )
    raw = hub.read_json(file)
    if not isinstance(raw, dict):
        raise DatasetError(
            f"{file}: expected a JSON object with 'dialogues' and 'news', got {type(raw).__name__}"
        )
    episodes: list[Episode] = []
    if "dialogues" in parts:
        episodes.extend(dialogue_episode(d, file) for d in _field(raw, "dialogues", file, list))
    if "news" in parts:
        episodes.append(news_episode(_field(raw, "news", file, dict), file, chunk_size))
    return Dataset(
        name="sample",
        episodes=episodes,
        files={str(file): sha256_file(file)},
        revision=f"v{raw.get('version', 0)}",
        metadata={"parts": list(parts)},
    )


def _field(
    obj: Any, key: str, file: Path, kind: type | tuple[type, ...] = object, where: str = ""
) -> Any:
    """``obj[key]`` checked for presence and type; the error names the file, the record and the field."""
    return hub.need(obj, key, kind, f"{file}{': ' + where if where else ''}")


def dialogue_episode(dialogue: dict[str, Any], file: Path) -> Episode:
    """One unit per round: ``[Session s] Speaker 1: ... / Speaker 2: ...``."""
    ep_id = _field(dialogue, "id", file, str, "a dialogue")
    units, round_position = [], {}
    for s, session in enumerate(_field(dialogue, "sessions", file, list, f"dialogue {ep_id}")):
        for r, pair in enumerate(session if isinstance(session, list) else [None]):
            if not (
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(t, str) for t in pair)
            ):
                raise DatasetError(
                    f"{file}: dialogue {ep_id} sessions[{s}][{r}] should be two strings "
                    "(Speaker 1, Speaker 2)"
                )
            first, second = pair
            text = f"[Session {s + 1}]\nSpeaker 1: {first}\nSpeaker 2: {second}"
            round_position[(s, r)] = len(units)
            units.append(
                Unit(
                    id=content_id(ep_id, s, r, text, prefix="u-"),
                    text=text,
                    source_id=f"{ep_id}/s{s + 1}",
                    position=len(units),
                    metadata={"session": s + 1, "round": r + 1},
                )
            )
    questions = []
    for i, q in enumerate(_field(dialogue, "questions", file, list, f"dialogue {ep_id}")):
        where = f"dialogue {ep_id} questions[{i}]"
        for key, kind in (("session", int), ("round", int), ("q", str), ("a", str)):
            _field(q, key, file, kind, where)
        pos = round_position.get((q["session"], q["round"]))
        if pos is None:
            raise DatasetError(
                f"{file}: {ep_id} question {i} points at a missing round "
                f"(session {q['session']}, round {q['round']})"
            )
        questions.append(
            Question(
                id=content_id(ep_id, q["q"], prefix="q-"),
                text=q["q"],
                answers=(q["a"],),
                position=len(units),
                categories={"type": "dialogue"},
                evidence=(
                    Evidence(
                        source_id=units[pos].source_id,
                        text=units[pos].text,
                        position=pos,
                        end=pos + 1,
                    ),
                ),
            )
        )
    return Episode(id=ep_id, units=units, questions=questions, metadata={"kind": "dialogue"})


def news_episode(news: dict[str, Any], file: Path, chunk_size: int) -> Episode:
    """All articles in one shared episode; evidence facts point at their articles."""
    tokenizer = get_tokenizer()
    units: list[Unit] = []
    first_position: dict[str, int] = {}
    facts: dict[str, str] = {}
    for i, art in enumerate(_field(news, "articles", file, list, "news")):
        for key in ("title", "source", "published_at", "body", "category"):
            _field(art, key, file, str, f"news.articles[{i}]")
        header = f"{art['title']}\n{art['source']}, {art['published_at']}\n"
        first_position[art["title"]] = len(units)
        facts[art["title"]] = art.get("fact", "")
        for piece in chunk_text(art["body"], tokenizer, chunk_size):
            text = header + piece
            units.append(
                Unit(
                    id=content_id(art["title"], len(units), text, prefix="u-"),
                    text=text,
                    source_id=art["title"],
                    position=len(units),
                    timestamp=art["published_at"],
                    metadata={"source": art["source"], "category": art["category"]},
                )
            )
    questions = []
    for i, q in enumerate(_field(news, "questions", file, list, "news")):
        for key, kind in (
            ("query", str),
            ("answer", str),
            ("question_type", str),
            ("evidence", list),
        ):
            _field(q, key, file, kind, f"news.questions[{i}]")
        missing = [t for t in q["evidence"] if t not in first_position]
        if missing:
            raise DatasetError(f"{file}: question {q['query']!r} cites unknown articles {missing}")
        evidence = tuple(
            Evidence(source_id=t, text=facts[t], position=first_position[t]) for t in q["evidence"]
        )
        questions.append(
            Question(
                id=content_id("news", q["query"], prefix="q-"),
                text=q["query"],
                answers=(q["answer"],),
                position=len(units),
                categories={"type": q["question_type"]},
                evidence=evidence,
            )
        )
    return Episode(id="news", units=units, questions=questions, metadata={"kind": "news"})
