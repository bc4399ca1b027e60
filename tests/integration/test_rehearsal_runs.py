"""Every memory system against the rehearsal backend (llm=rehearsal embedder=rehearsal) on the sample
builds a structure of real shape: tree levels, clusters, entities and communities, triples and
synonym edges, pages with gists, parsed ratings; every prompt is recognised. A run against
``memharness test-backend`` over HTTP gives the same samples as in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _servers import rehearsal_backend, stats
from memharness.eval.run.runner import run
from memharness.memsys.services.factory import _instantiate_backend

BASE = ("llm=rehearsal", "embedder=rehearsal", "dataset.limit=2", "snapshots.enabled=false")


def rehearse(make_cfg, out: Path, *overrides: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run with the rehearsal backends; (memory_stats.json, the chat backend's stats)."""
    made: dict[str, Any] = {}

    def make(section: Any, group: str) -> Any:
        return made.setdefault(group, _instantiate_backend(section, group))

    run(make_cfg(*BASE, *overrides, fake=False), out, make_backend=make)
    memory_stats = json.loads((out / "memory_stats.json").read_text())
    return {k: v for k, v in memory_stats.items() if isinstance(v, dict)}, made["llm"].stats()


def levels(ep: dict) -> dict[str, int]:
    return {k: v["nodes"] for k, v in ep["levels"].items()}


def check_memtree(eps: dict) -> None:
    # internal nodes below the root: a summary level above the leaves, and leaves at depth 2
    assert any(
        levels(ep).get("1", 0) >= 1 and ep["structure"]["depth_max"] >= 2 for ep in eps.values()
    )
    assert all(ep["insertion"]["aggregation_failures"] == 0 for ep in eps.values())


def check_raptor(eps: dict) -> None:
    layers = [ep["raptor"]["last_build"]["layers"] for ep in eps.values()]
    assert any(len(levels(ep)) >= 2 for ep in eps.values()) and any(layers)
    assert all(ep["raptor"]["summary_failures_total"] == 0 for ep in eps.values())


def check_cam(eps: dict) -> None:
    def merged(ep: dict) -> bool:  # a community of two or more chunks at the first level
        level0 = ep["batches"][0]["levels"][0]
        return level0["communities"] < level0["nodes"]

    assert any(merged(ep) and levels(ep).get("1", 0) >= 1 for ep in eps.values())


def check_graphrag(eps: dict) -> None:
    for ep in eps.values():
        build = ep["graphrag"]["build"]
        assert build["graph"]["entities"] >= 10 and build["graph"]["relationships"] >= 10
        assert build["communities"]["communities"] >= 1 and build["reports"]["unparsed"] == 0
        assert build["failures"]["counts"] == {}


def check_hipporag(eps: dict) -> None:
    for ep in eps.values():
        build = ep["hipporag"]["build"]
        assert build["extraction"]["triples"] > 0 and build["graph"]["edges"]["synonym"] > 0
        assert build["extraction"]["openie_status"]["unparsed"] == 0


def check_structmem(eps: dict) -> None:
    for ep in eps.values():
        units = ep["units_by_kind"]
        assert min(units["triples"], units["atomic_facts"], units["summaries"]) > 0
        assert sum(ep["extraction"]["malformed_lines"].values()) == 0


def check_readagent(eps: dict) -> None:
    assert any(ep["pages"] >= 2 for ep in eps.values())
    for ep in eps.values():
        assert ep["gists"] == ep["pages"] and ep["gist_failed"] == 0
        assert ep["pagination"]["unparsed"] == ep["pagination"]["out_of_range"] == 0
        assert ep["lookup"]["unparsed"] == 0 and ep["lookup"]["pages_expanded"] >= 1


def check_memorystream(eps: dict) -> None:
    for ep in eps.values():
        assert ep["importance_unparsed"] == 0 and ep["importance_failed"] == 0
    # ratings derived from each text, not the fallback 5 everywhere
    assert {ep["importance_mean"] for ep in eps.values()} != {5.0}


def check_memgpt(eps: dict) -> None:
    for ep in eps.values():
        agent = ep["agent"]
        assert agent["answered"] == agent["questions"] and agent["malformed_total"] == 0
        assert agent["functions"]["conversation_search"] >= 1


SYSTEMS = {
    "memtree": ((), check_memtree),
    "raptor": (("run.cpu_workers=1",), check_raptor),  # in the thread: no pool to start in a test
    "cam": ((), check_cam),
    "graphrag": ((), check_graphrag),
    "graphrag-json": (("memory.extraction.format=json",), check_graphrag),
    "hipporag": ((), check_hipporag),
    "structmem": (("memory.structure=mixed",), check_structmem),
    "readagent": (
        ("memory.min_words=60", "memory.max_words=150", "memory.pagination.last_page_words=40"),
        check_readagent,
    ),
    "memorystream": (("memory.scoring=generative_agents",), check_memorystream),
    "memgpt": ((), check_memgpt),
}


# RAPTOR's first UMAP fit compiles numba code (~40 s on this machine, once per process): slow, doubles
PARAMS = [
    pytest.param(m, marks=[pytest.mark.slow, pytest.mark.doubles]) if m == "raptor" else m
    for m in sorted(SYSTEMS)
]


@pytest.mark.parametrize("memory", PARAMS)
def test_each_system_builds_a_real_structure(memory, make_cfg, tmp_path):
    overrides, check = SYSTEMS[memory]
    name = memory.split("-")[0]
    eps, chat = rehearse(make_cfg, tmp_path / "run", f"memory={name}", *overrides)
    assert chat["unrecognised"] == 0 and chat["requests"] > 0
    check(eps)


def test_http_backend_gives_the_samples_of_the_in_process_run(make_cfg, tmp_path):
    """GraphRAG (extraction, gleaning, reports, answers, judge) through ``memharness test-backend``."""
    rehearse(make_cfg, tmp_path / "local", "memory=graphrag", f"cache.path={tmp_path / 'a.sqlite'}")
    with rehearsal_backend(tmp_path, "--latency-ms", "2", "--capacity", "4") as url:
        run(
            make_cfg(
                "memory=graphrag",
                "dataset.limit=2",
                "snapshots.enabled=false",
                f"cache.path={tmp_path / 'b.sqlite'}",
                "llm=openai",
                f"llm.backend.base_url={url}",
                "llm.backend.api_key_env=null",
                "llm.backend.structured=guided_choice",
                "llm.max_in_flight=8",
                "embedder=openai",
                f"embedder.backend.base_url={url}",
                "embedder.backend.api_key_env=null",
                fake=False,
            ),
            tmp_path / "http",
        )
        served = stats(url)
    assert served["rehearsal"]["chat"]["unrecognised"] == 0
    assert served["rehearsal"]["chat"]["peak_in_flight"] <= 4 and served["chat_ok"] > 20

    def samples(folder: str) -> list[tuple]:
        rows = [json.loads(line) for line in (tmp_path / folder / "samples.jsonl").open()]
        return sorted(
            (r["question_id"], r["prediction"], r["status"], r["scores"]["judge"]["value"])
            for r in rows
        )

    assert samples("http") == samples("local") and len(samples("local")) == 2
