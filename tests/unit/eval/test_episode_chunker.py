from __future__ import annotations

import pytest
from memharness.memsys.services.tokens import chunk_text, get_tokenizer
from memharness.memsys.types import Episode, Evidence, Question, content_id, units_from_texts


def _episode(question_positions):
    units = units_from_texts([f"unit {i}" for i in range(5)], source_id="doc")
    questions = [
        Question(id=f"q{i}", text=f"question {i}", answers=("a",), position=p)
        for i, p in enumerate(question_positions)
    ]
    return Episode(id="ep", units=units, questions=questions)


def test_offline_episode_inserts_everything_then_asks():
    events = list(_episode([5, 5]).events())
    assert [k for k, _ in events] == ["insert", "ask", "ask"]
    assert len(events[0][1]) == 5
    assert not _episode([5]).is_online


def test_online_episode_interleaves_in_stream_order():
    ep = _episode([2, 0, 2, 4])
    kinds = [(k, len(p) if k == "insert" else p.id) for k, p in ep.events()]
    assert kinds == [
        ("ask", "q1"),
        ("insert", 2),
        ("ask", "q0"),
        ("ask", "q2"),
        ("insert", 2),
        ("ask", "q3"),
        ("insert", 1),
    ]
    assert ep.is_online


def test_episode_rejects_bad_positions():
    units = units_from_texts(["a", "b"], source_id="d")
    with pytest.raises(ValueError, match="outside"):
        Episode(
            id="e", units=units, questions=[Question(id="q", text="?", answers=("x",), position=3)]
        )
    shuffled = [units[1], units[0]]
    with pytest.raises(ValueError, match="position"):
        Episode(id="e", units=shuffled, questions=[])


def test_content_ids_are_stable_and_content_addressed():
    a = units_from_texts(["hello"], source_id="s")[0]
    b = units_from_texts(["hello"], source_id="s")[0]
    c = units_from_texts(["hullo"], source_id="s")[0]
    assert a.id == b.id != c.id
    assert content_id("x", 1) == content_id("x", 1) != content_id("x", 2)


def test_evidence_position_is_the_earliest():
    q = Question(
        id="q",
        text="?",
        answers=("a",),
        position=3,
        evidence=(Evidence("d", position=7), Evidence("e", position=2), Evidence("f")),
    )
    assert q.evidence_position == 2
    assert Question(id="q", text="?", answers=("a",), position=0).evidence_position is None


def test_chunker_sizes_and_overlap():
    tok = get_tokenizer()
    text = " ".join(f"word{i}" for i in range(300))
    n = tok.count(text)
    chunks = chunk_text(text, tok, size=50)
    assert [tok.count(c) for c in chunks[:-1]] == [50] * (len(chunks) - 1)
    assert sum(tok.count(c) for c in chunks) == n
    assert "".join(chunks) == text  # no overlap: the chunks tile the text
    overlapped = chunk_text(text, tok, size=50, overlap=10)
    first, second = tok.encode(overlapped[0]), tok.encode(overlapped[1])
    assert first[-10:] == second[:10]
    assert len(overlapped) > len(chunks)


def test_chunker_edge_cases():
    tok = get_tokenizer()
    assert chunk_text("   ", tok, 10) == []
    assert chunk_text("short text", tok, 512) == ["short text"]
    with pytest.raises(ValueError):
        chunk_text("x", tok, 10, overlap=10)
    with pytest.raises(ValueError):
        chunk_text("x", tok, 0)


def test_tokenizer_is_cl100k():
    tok = get_tokenizer("cl100k_base")
    # cl100k_base splits "hello world" into two tokens with ids 15339 and 1917.
    assert tok.encode("hello world") == [15339, 1917]
    assert tok.truncate("one two three four", 2) == "one two"
