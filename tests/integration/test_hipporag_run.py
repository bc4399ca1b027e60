"""memory=hipporag through the runner with the scripted chat (provenance, its own diagnostics in
memory_stats.json, a snapshot reused across retrieval settings), then run.py with the real embedded
model (slow)."""

from __future__ import annotations

import csv
import json

import pytest
from memharness.data_prep.sample import load as load_sample
from memharness.eval.papers.report import build_report
from memharness.eval.run.runner import run
from paths import ROOT
from processes import run_py

NER = '{\\"named_entities\\": [\\"Maria\\", \\"Lisbon\\"]}'
TRIPLES = '{\\"triples\\": [[\\"Maria\\", \\"moved to\\", \\"Lisbon\\"]]}'
SCRIPT = (
    f'[["Find the named entities","{NER}"],["Build an RDF","{TRIPLES}"],'
    f'["You extract entities","{NER}"]]'
)


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_hipporag_run_records_passages_with_provenance_and_reuses_its_snapshot(make_cfg, tmp_path):
    cfg = make_cfg("memory=hipporag", f"llm.backend.script={SCRIPT}", "dataset.limit=3")
    run(cfg, tmp_path / "a")
    units = {e.id: {u.id for u in e.units} for e in load_sample().episodes}
    samples = _samples(tmp_path / "a")
    assert samples and all(s["status"] == "scored" for s in samples)
    for s in samples:
        assert s["retrieved"] and all(
            i["source_unit_ids"] and set(i["source_unit_ids"]) <= units[s["episode_id"]]
            for i in s["retrieved"]
        )
    stats = json.loads((tmp_path / "a" / "memory_stats.json").read_text())
    for episode in stats.values():
        build = episode["hipporag"]["build"]
        assert build["llm_calls"]["ner"] == build["llm_calls"]["triples"] == build["passages"] > 0
        assert build["extraction"]["extraction_failure_rate"] == 0.0
        assert build["graph"] == {
            "phrase_nodes": 2,
            "passage_nodes": 0,
            "facts": 1,
            "edges": {"triple": 1, "synonym": 0, "passage": 0},
            "mean_passages_per_phrase": build["passages"],
        }
        assert episode["hipporag"]["search"]["mode_ppr"] == episode["hipporag"]["search"]["queries"]
    again = make_cfg(
        "memory=hipporag",
        f"llm.backend.script={SCRIPT}",
        "dataset.limit=3",
        "memory.retrieval.damping=0.3",
    )
    run(again, tmp_path / "b")
    reloaded = json.loads((tmp_path / "b" / "memory_stats.json").read_text())
    assert {e["snapshot"]["action"] for e in reloaded.values()} == {"loaded"}


def test_cam_table2_sweep_point_fills_hipporags_row(make_cfg, tmp_path):
    """experiment=cam_table2's hipporag point on the MultiHop-RAG fixture: the report's HippoRAG row
    (published beside reproduced) is filled, no longer "not in harness"."""
    cfg = make_cfg(
        "experiment=cam_table2",
        "memory=hipporag",
        "dataset=multihop",
        f"dataset.loader.path={ROOT / 'tests/fixtures/multihop'}",
        f"llm.backend.script={SCRIPT}",
    )
    run(cfg, tmp_path / "runs" / "hipporag-multihop" / "2026-01-01_00-00-00")
    written = build_report([tmp_path / "runs"], tmp_path / "out", "cam_2025", "2", plot=False)
    with open(written["csv"], newline="") as f:
        rows = {(r["row"], r["column"]): r for r in csv.DictReader(f)}
    for column in ("mh_em", "mh_f1"):
        assert rows[("hipporag", column)]["status"] == "ok", rows[("hipporag", column)]["reason"]
    assert rows[("hipporag", "novelqa_acc")]["status"] == "not_run"
    assert rows[("memgpt", "mh_em")]["status"] == "not_run"  # a harness system, not swept here


@pytest.mark.slow
def test_hipporag_runs_on_the_sample_with_the_embedded_model(tmp_path):
    """The pipeline, not quality (SmolLM2-135M): the dialogues only, short extraction replies."""
    proc = run_py(
        tmp_path,
        "memory=hipporag",
        "dataset=sample",
        "dataset.loader.parts=[dialogues]",
        "dataset.limit=1",
        "memory.chunks.size=512",  # the 9 dialogue units in a few 512-token passages: fewer calls
        "memory.indexing.extract_max_tokens=128",
        "llm=local_tiny",
        "eval.judge.calibration_max=0",
        timeout=3600,  # five model calls; a busy shared machine took over 15 minutes
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    samples = _samples(out)
    assert len(samples) == 1 and samples[0]["status"] == "scored"
    stats = json.loads((out / "memory_stats.json").read_text())
    for episode in stats.values():
        build = episode["hipporag"]["build"]
        extraction = build["extraction"]
        assert build["llm_calls"]["total"] == 2 * build["passages"] > 0
        # whatever the tiny model writes, every passage has an outcome and the rate is a number
        assert sum(extraction["openie_status"].values()) == build["passages"]
        assert 0.0 <= extraction["extraction_failure_rate"] <= 1.0
        assert episode["hipporag"]["search"]["queries"] == 1
