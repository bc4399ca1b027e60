"""CAM's own forget (issue 45): the forgotten chunks leave the foundational network and only the
communities that lost a member are summarised again; nothing retrievable or stored holds them,
and it costs fewer summary calls than the rebuild."""

from __future__ import annotations

import re

import pytest
from cam_fakes import FakeLLM, four_groups, make_cam, unit, units

WORDS = [f"{g}{i}" for g in "abcd" for i in range(1, 5)]


def built(**kw):
    memory = make_cam(four_groups(), traversal="collapsed", top_k=100, **kw)
    planted = units(WORDS)
    memory.insert(planted)
    return memory, planted


def holds(memory, word, unit_id):
    store, pattern = memory.store, re.compile(rf"\b{word}\b")
    return [
        v
        for v in range(len(store))
        if pattern.search(store.texts[v]) or unit_id in store.source_units(v)
    ]


@pytest.mark.parametrize("construction", ["online", "offline"])
def test_cam_own_forget_resummarises_only_the_communities_that_held_the_chunk(construction):
    memory, planted = built(construction=construction)
    memory.ensure_built()
    gone = planted[1].id  # a2
    assert len(holds(memory, "a2", gone)) >= 2  # its chunk and a community summary above it
    untouched = [t for t in memory.store.texts if "(" in t and not re.search(r"\ba\d\b", t)]
    assert untouched  # the summaries of the b, c, d communities
    before = memory.llm.summary_requests()
    record = memory.forget([gone])
    assert record["method"] == "prune_and_resummarise" and record["units"] == 1
    assert holds(memory, "a2", gone) == []
    items = [i for w in WORDS for i in memory.retrieve(w, 10_000)]
    assert items and all(gone not in i.source_unit_ids for i in items)
    resummarised = memory.llm.summary_requests()[len(before) :]
    assert resummarised and all(not {"b2", "c2", "d2"} & set(p) for p in resummarised)
    assert record["calls"] == len(resummarised) == memory.forget_updates[-1]["llm_calls"]
    assert all(t in memory.store.texts for t in untouched)  # kept without a call
    assert memory.stats()["forget_updates"][0]["chunks_removed"] == 1


def test_cam_own_forget_costs_fewer_calls_than_the_rebuild_and_keeps_working():
    records = {}
    for method in ("own", "rebuild"):
        memory, planted = built()
        records[method] = memory.forget([planted[1].id], method=method)
        assert holds(memory, "a2", planted[1].id) == []
    assert 0 < records["own"]["calls"] < records["rebuild"]["calls"]
    memory, planted = built()
    memory.forget([planted[1].id])
    memory.insert([unit("a5", 16)])  # the online update goes on over the pruned network
    assert any(re.search(r"\ba5\b", t) for t in memory.store.texts if t != "a5")


def test_cam_rebuilds_when_a_packed_chunk_mixes_a_forgotten_unit_with_kept_ones():
    memory = make_cam(four_groups(), llm=FakeLLM(), chunks={"mode": "pack", "size": 4})
    planted = units(WORDS)
    memory.insert(planted)
    assert any(len(memory.store.units[v]) > 1 for v in range(len(memory.store)))
    assert memory.forget([planted[0].id])["method"] == "rebuild"
    assert holds(memory, "a1", planted[0].id) == []
