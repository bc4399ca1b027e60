"""The MemorySystem contract: offline rebuilds, budgets, full-context recency."""

from __future__ import annotations

from memharness.baselines.full_context import FullContext
from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.types import RetrievedItem, units_from_texts


class CountingOffline(MemorySystem):
    online = False

    def __init__(self) -> None:
        super().__init__(tokenizer=get_tokenizer())
        self.built_with: list[int] = []

    def build(self, units):
        self.built_with.append(len(units))

    def search(self, question, budget_tokens):
        return [
            RetrievedItem(text=u.text, score=1.0, node_id=u.id, source_unit_ids=(u.id,))
            for u in self.units
        ]


def test_offline_system_builds_on_first_retrieve_after_inserts_and_records_rebuilds():
    mem = CountingOffline()
    units = units_from_texts(["a", "b", "c"], source_id="d")
    mem.insert(units[:2])
    mem.insert([])
    assert mem.built_with == []  # inserts only buffer
    mem.retrieve("q", 100)
    mem.retrieve("q", 100)
    assert mem.built_with == [2]  # one build for two retrievals
    mem.insert(units[2:])
    mem.retrieve("q", 100)
    assert mem.built_with == [2, 3]
    assert [r["units"] for r in mem.stats()["rebuilds"]] == [2, 3]


def test_fill_budget_skips_or_stops_at_overflow():
    tok = get_tokenizer()
    items = [
        RetrievedItem(text=t, score=1.0, node_id=t)
        for t in ("one two three", "four five six seven eight", "nine")
    ]
    assert [i.node_id for i in fill_budget(items, 4, tok)] == ["one two three", "nine"]
    assert [i.node_id for i in fill_budget(items, 4, tok, stop_at_first_overflow=True)] == [
        "one two three"
    ]
    kept = fill_budget(items, 100, tok)
    assert [i.tokens for i in kept] == [3, 5, 1]


def test_full_context_keeps_the_most_recent_units_within_budget():
    tok = get_tokenizer()
    mem = FullContext(tokenizer=tok)
    units = units_from_texts([f"round {i} text" for i in range(10)], source_id="chat")
    mem.insert(units[:6])
    mem.insert(units[6:])
    per_unit = tok.count(units[0].text)
    kept = mem.retrieve("anything", budget_tokens=3 * per_unit)
    assert [i.node_id for i in kept] == [u.id for u in units[7:]]  # the last three, in order
    assert all(i.source_unit_ids == (i.node_id,) for i in kept)
    assert len(mem.retrieve("anything", 10_000)) == 10
    assert mem.stats()["total_tokens"] == 10 * per_unit
