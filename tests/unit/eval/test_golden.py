"""The golden regression: MemTree Tables 4, 5 and A.2 regenerated from the committed call cache with
zero backend calls, compared with the committed expected numbers (eval/papers/golden/, docs/papers.md)."""

from __future__ import annotations

import copy
import json

import pytest
from memharness.eval.papers import golden_regression as golden
from memharness.memsys.services.backends.replay import (
    ReplayChatBackend,
    ReplayEmbedBackend,
    ReplayMiss,
)
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import ChatRequest


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    return golden.replay(tmp_path_factory.mktemp("golden"))


def test_the_committed_cache_is_small_and_holds_no_weights():
    size = golden.CACHE.stat().st_size
    assert 0 < size < 1_000_000, f"{golden.CACHE} is {size} bytes"
    with open(golden.CACHE, "rb") as f:
        assert f.read(16) == b"SQLite format 3\x00"  # a call cache, not a GGUF / safetensors file


def test_replay_reproduces_the_expected_numbers_with_zero_backend_calls(observed):
    assert set(observed["runs"]) == set(golden.MEMORIES)
    for run in observed["runs"].values():
        assert run["not_from_cache"] == [], run["not_from_cache"]
        assert run["intrinsic"]["calls"] > 0  # the replies were used, served by the cache
    statuses = {k: v["status"] for k, v in observed["cells"].items()}
    assert (
        statuses["memtree_2024:4:memtree:overall"] == "ok"
        and statuses["memtree_2024:5:memtree:nodes"] == "ok"
    )
    expected = json.loads(golden.EXPECTED.read_text())
    assert golden.differences(expected, observed) == []


def test_a_moved_number_fails_the_check(observed, monkeypatch, tmp_path, capsys):
    moved = copy.deepcopy(observed)
    cell = moved["cells"]["memtree_2024:4:memtree:overall"]
    cell["reproduced"] = (cell["reproduced"] or 0) + 0.1
    moved["runs"]["memorystream"]["intrinsic"]["calls"] += 1
    (tmp_path / "expected.json").write_text(json.dumps(moved))
    monkeypatch.setattr(golden, "EXPECTED", tmp_path / "expected.json")
    monkeypatch.setattr(golden, "replay", lambda work: observed)
    assert golden.main([]) == 1
    err = capsys.readouterr().err
    assert "2 number(s) changed" in err
    assert (
        "cells.memtree_2024:4:memtree:overall.reproduced" in err
        and "runs.memorystream.intrinsic.calls" in err
    )
    (tmp_path / "expected.json").write_text(json.dumps(observed))
    assert golden.main([]) == 0


def test_an_unrecorded_request_is_a_counted_failure_not_a_reply(tmp_path):
    meter, cache = Meter(), CallCache(tmp_path / "empty.sqlite")
    llm = LLM(ReplayChatBackend("llama.cpp:x.gguf:ctx4096"), meter=meter, cache=cache)
    [done] = llm.complete([ChatRequest.user("never recorded", max_tokens=8)])
    assert not done.ok and "no recorded reply" in done.error
    total = meter.to_json()["total"]
    assert (total["calls"], total["failures"]) == (0, 1)
    assert golden.served_from_cache({"memory": "m", "calls": {"total": total}}) == [
        "m: failures=1 (expected 0: every reply from the cache)"
    ]
    embedder = Embedder(ReplayEmbedBackend("st:model"), meter=meter, cache=cache)
    with pytest.raises(ReplayMiss, match="without a recorded embedding"):
        embedder.embed(["never embedded"])
