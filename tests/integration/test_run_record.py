"""The run record: a run through the runner writes what the schema declares, readers refuse any
other format in one line, and docs/run-format.md is the schema's own rendering."""

from __future__ import annotations

import json

import pytest
import records
from memharness.eval.metrics import run_format
from memharness.eval.record import read, schema
from memharness.eval.record.scores import value
from memharness.eval.report.comparison import main as report_main
from memharness.eval.run.runner import run
from paths import ROOT


def test_docs_run_format_is_the_schema_rendered():
    assert (ROOT / "docs" / "run-format.md").read_text() == run_format.markdown(), (
        "regenerate: python -m memharness.eval.metrics.run_format > docs/run-format.md"
    )


def test_a_real_run_writes_the_declared_record(make_cfg, tmp_path):
    out = tmp_path / "r"
    run(make_cfg("memory=memorystream", "dataset.limit=4"), out)
    metrics = read.read_metrics(out)
    samples = list(read.iter_samples(out))
    assert metrics["format"] == schema.FORMAT and len(samples) == metrics["counts"]["questions"]
    assert set(metrics) <= set(schema.Metrics.model_fields)
    assert all(set(s) <= set(schema.Sample.model_fields) for s in samples)


def test_another_format_is_refused_in_one_line(make_cfg, tmp_path):
    out = tmp_path / "runs" / "r"
    run(make_cfg("memory=full_context", "dataset.limit=2"), out)
    doc = json.loads((out / "metrics.json").read_text())
    for found, shown in (
        (None, "run format 1"),
        (2, "memharness rescore OLD NEW"),
        (4, "format 4"),
    ):
        if found is None:
            doc.pop("format", None)
        else:
            doc["format"] = found
        (out / "metrics.json").write_text(json.dumps(doc))
        with pytest.raises(schema.RunFormatError) as err:
            read.load_run(out)
        message = str(err.value)
        assert "\n" not in message and shown in message and "reads run format 3" in message
        with pytest.raises(SystemExit) as stop:
            report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "t"), "--name", "x"])
        assert str(stop.value.code).startswith("error: ") and shown in str(stop.value.code)


def test_writers_refuse_a_record_the_schema_does_not_declare(tmp_path):
    bad = records.sample("q0", surprise=1)
    with pytest.raises(schema.RunFormatError, match="sample 0: .*surprise: Extra inputs"):
        records.write(tmp_path, records.metrics("m"), [bad])
    with pytest.raises(schema.RunFormatError, match="metrics.json: .*seed: Input should be"):
        records.write(tmp_path, records.metrics("m", seed="0"), [])


def test_a_reused_run_folder_keeps_nothing_of_the_earlier_run(make_cfg, tmp_path):
    out = tmp_path / "run"
    run(make_cfg("memory=memtree", "dataset.limit=4"), out)
    before = sorted(p.name for p in (out / "memory").iterdir())
    assert len(before) >= 2
    (out / "memory" / "planted-old-episode").mkdir()
    run(make_cfg("memory=memtree", "dataset.limit=1"), out)
    after = sorted(p.name for p in (out / "memory").iterdir())
    assert len(after) == 1 and after[0] in before  # only this run's episode has a view


def _strict(text: str) -> object:
    """Parse as a browser's JSON.parse would: NaN / Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_run_with_nan_scores_writes_valid_json_and_counts_the_nulls(
    make_cfg, tmp_path, monkeypatch
):
    """A NaN score (here a metric that returns one) is written as null and counted; every file of
    the run folder stays valid JSON."""
    from memharness.eval.metrics import registry

    real = registry.answer_scores
    monkeypatch.setattr(
        registry, "answer_scores", lambda *a: {**real(*a), "f1": float("nan"), "em": float("inf")}
    )
    out = tmp_path / "r"
    metrics = run(make_cfg("memory=full_context", "dataset.limit=3"), out)
    lines = (out / "samples.jsonl").read_text().splitlines()
    samples = [_strict(line) for line in lines]
    doc = _strict((out / "metrics.json").read_text())
    _strict((out / "memory_stats.json").read_text())
    assert len(samples) == 3 and all(value(s, "f1") is None for s in samples)
    assert all(value(s, "em") is None for s in samples)
    assert doc["outcome"]["nonfinite_nulled"] == metrics["outcome"]["nonfinite_nulled"] == 6
    assert doc["outcome"]["exit_code"] == 0


def test_the_json_writers_never_write_nan(tmp_path):
    from memharness.eval.record import folder
    from memharness.memsys.services import files
    from memharness.memsys.services.formats import html_page

    doc = {"a": float("nan"), "b": [1.5, float("-inf")], "c": {"d": 2}}
    _strict(files.write_json(tmp_path / "x.json", doc).read_text())
    assert json.loads((tmp_path / "x.json").read_text()) == {
        "a": None,
        "b": [1.5, None],
        "c": {"d": 2},
    }
    page = html_page("t", "", "", doc, "")
    _strict(page.split("id='data'>")[1].split("</script>")[0])
    metrics = records.metrics("m", time={"total_s": float("nan")})
    folder.write_metrics(tmp_path, metrics)
    assert _strict((tmp_path / "metrics.json").read_text())["outcome"]["nonfinite_nulled"] == 1
