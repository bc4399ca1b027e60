"""``memharness rescore OLD NEW``: a format-2 folder rebuilt as format 3 through the call cache,
with no backend call; refused when OLD is not format 2, NEW exists or a judge reply is missing."""

from __future__ import annotations

import json

import pytest
import records
from memharness.eval.cli import rescore
from memharness.eval.metrics import registry
from memharness.eval.record import read, schema
from memharness.eval.run.runner import run


@pytest.fixture
def format_2(make_cfg, tmp_path):
    """A scripted run (judge on, three questions) and its copy written as run format 2."""
    out = run(make_cfg("memory=full_context", "dataset.limit=3"), tmp_path / "run")
    assert out["counts"]["judge_parsed"] > 0
    return records.as_format_2(tmp_path / "run", tmp_path / "old")


def test_rescore_rebuilds_the_metrics_with_zero_backend_calls(format_2, tmp_path, monkeypatch):
    made = []
    real = rescore.CacheOnly.__init__

    def spy(self, model_id):
        real(self, model_id)
        made.append(self)

    monkeypatch.setattr(rescore.CacheOnly, "__init__", spy)
    new = rescore.rescore(format_2, tmp_path / "new")
    assert made and sum(b.calls for b in made) == 0  # every judge reply came from the cache
    assert new["rescored_from"]["calls"] == 0
    original = json.loads((tmp_path / "run" / "metrics.json").read_text())
    rebuilt = read.read_metrics(tmp_path / "new")
    assert rebuilt["format"] == schema.FORMAT == 3
    # latency and ingestion are measured while a run builds and answers: a format-2 folder kept
    # neither, and rescoring cannot measure them again
    measured = {n for n in original["metrics"] if registry.in_section(n, "latency")}
    measured |= {n for n in original["metrics"] if registry.in_section(n, "ingestion")}
    assert measured and not measured & set(rebuilt["metrics"])
    original["metrics"] = {k: v for k, v in original["metrics"].items() if k not in measured}
    for groups in original["breakdowns"].values():
        for cell in groups.values():
            for name in measured & set(cell):
                del cell[name]
    for key in ("counts", "metrics", "breakdowns", "outcome"):
        assert rebuilt[key] == original[key], key
    originals = list(read.iter_samples(tmp_path / "run"))
    for sample in originals:  # format 2 kept no gold-item highlight: rescore cannot invent one
        sample["scores"]["evidence_recall"]["details"] = {}
        for name in measured:  # nor the latencies measured while the run answered
            sample["scores"].pop(name, None)
    assert list(read.iter_samples(tmp_path / "new")) == originals


def test_rescore_refuses_a_missing_reply_a_format_3_folder_and_an_existing_new(format_2, tmp_path):
    with pytest.raises(rescore.RescoreError, match=r"^\d+ judge replies .* not in the call cache"):
        rescore.rescore(format_2, tmp_path / "new", str(tmp_path / "empty.sqlite"))
    assert not (tmp_path / "new").exists()  # nothing written, nothing guessed
    with pytest.raises(rescore.RescoreError, match="rescore converts run format 2 only"):
        rescore.rescore(tmp_path / "run", tmp_path / "new2")
    (tmp_path / "taken").mkdir()
    assert rescore.main([str(format_2), str(tmp_path / "taken")]) == 2


def test_a_format_2_folder_is_refused_naming_rescore(format_2):
    with pytest.raises(schema.RunFormatError, match="memharness rescore OLD NEW"):
        read.read_metrics(format_2)
