"""``memharness bench rehearsal`` (issue 46 item 4): the figure arithmetic, the data it grows, the
bench command's on-demand flags, and one tiny end-to-end run that prints the table."""

from __future__ import annotations

import json
import math

import pytest
from memharness.eval.bench import ON_DEMAND
from memharness.eval.bench._rehearsal_data import fixture_longmemeval, make_data
from memharness.eval.bench._rehearsal_run import (
    Child,
    backend_bound_s,
    fit_exponent,
    folder_bytes,
    per,
    relative_gap,
    system_figures,
)


@pytest.mark.parametrize(("exponent"), [0.5, 1.0, 1.3, 2.0])
def test_fit_exponent_recovers_the_power_of_a_power_law(exponent):
    xs = [128_000, 1_000_000, 10_000_000]
    ys = [3.0 * x**exponent for x in xs]
    assert fit_exponent(xs, ys) == pytest.approx(exponent, abs=1e-9)


def test_fit_exponent_is_the_least_squares_slope_of_noisy_points():
    xs, ys = [1, 10, 100], [1, 20, 100]  # logs: (0,0), (1, 1.301), (2, 2)  -> slope 1.0
    assert fit_exponent(xs, ys) == pytest.approx(1.0, abs=1e-9)
    xs, ys = [1, 10, 100], [1, 5, 100]  # (0,0), (1, 0.699), (2, 2): slope 1.0 too (middle off line)
    assert fit_exponent(xs, ys) == pytest.approx(1.0, abs=1e-9)
    assert fit_exponent([1, 10], [2, 200]) == pytest.approx(2.0)


def test_fit_exponent_refuses_fewer_than_two_sizes():
    with pytest.raises(ValueError, match="two points"):
        fit_exponent([1000, 1000], [1.0, 2.0])
    with pytest.raises(ValueError, match="two points"):
        fit_exponent([1000, 2000], [0.0, 2.0])  # a zero has no logarithm: one point left


def test_backend_bound_is_requests_times_latency_over_in_flight():
    assert backend_bound_s(12_413, 0.020, 32) == pytest.approx(12_413 * 0.02 / 32)
    assert backend_bound_s(100, 0.0, 4) == 0.0
    with pytest.raises(ValueError, match="in_flight"):
        backend_bound_s(10, 0.02, 0)


def test_ratios_say_nothing_rather_than_zero_when_there_is_nothing_to_divide_by():
    assert per(3.0, 2) == 1.5 and per(3.0, 0) is None
    assert relative_gap(115, 100) == pytest.approx(0.15)
    assert relative_gap(85, 100) == pytest.approx(0.15)
    assert relative_gap(0, 0) == 0.0 and relative_gap(5, 0) is None


def _run(**kw):
    base = dict(
        calls=90,
        embed_requests=10,
        prompt_tokens=1000,
        completion_tokens=100,
        build_s=2.0,
        in_flight=32,
        questions=4,
        units=0,
    )
    return {**base, **kw}


def test_system_figures_subtract_the_startup_and_divide_by_requests_units_questions():
    child = Child(wall_s=10.0, cpu_s=3.5, peak_rss_bytes=2_000_000_000, returncode=0)
    startup = Child(wall_s=3.0, cpu_s=3.0, peak_rss_bytes=300_000_000, returncode=0)
    estimate = {
        "sizes": {"full": {"units": 250}},
        "total": {"calls": 99, "prompt_tokens": 1200, "completion_tokens": 100},
    }
    disk = {"run": 2_000_000, "snapshots": 0, "call_cache": 500_000}
    f = system_figures(_run(), child, estimate, disk, latency_s=0.32, startup=startup)
    assert f["backend_bound_s"] == pytest.approx(100 * 0.32 / 32)  # chat + embedding requests
    assert f["bound_over_wall"] == pytest.approx(0.1)
    assert f["cpu_ms_per_request"] == pytest.approx(500 / 100)  # 0.5 s over 100 requests
    assert f["cpu_ms_per_unit"] == pytest.approx(2.0)  # 250 units from the estimate's sizes
    assert f["cpu_ms_per_question"] == pytest.approx(125.0)
    assert f["peak_rss_gb"] == pytest.approx(2.0)
    assert f["rss_above_startup_gb"] == pytest.approx(1.7)
    assert f["disk_run_mb"] == 2.0 and f["disk_call_cache_mb"] == 0.5
    assert f["estimate_gap_calls"] == pytest.approx(0.1)
    assert f["estimate_gap_prompt_tokens"] == pytest.approx(0.2)


def test_system_figures_without_an_estimate_leave_the_gaps_out():
    child = Child(wall_s=1.0, cpu_s=1.0, peak_rss_bytes=1, returncode=0)
    f = system_figures(_run(calls=0, embed_requests=0), child, None, {}, 0.0)
    assert f["cpu_ms_per_request"] is None  # no request: n/a, not 0 ms
    assert not any(k.startswith("estimate") for k in f)


def test_folder_bytes_adds_every_file_below(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "x").write_bytes(b"12345")
    (tmp_path / "a" / "b" / "y").write_bytes(b"123")
    assert folder_bytes(tmp_path) == 8 and folder_bytes(tmp_path / "missing") == 0


def test_the_grown_fixture_keeps_the_schema_the_gold_and_reaches_the_size(tmp_path):
    info = fixture_longmemeval(tmp_path, questions=9, tokens=6000, seed=3)
    records = json.loads((tmp_path / "longmemeval_s_cleaned.json").read_text())
    assert len(records) == 9 and len({r["question_id"] for r in records}) == 9
    for r in records:
        n = len(r["haystack_sessions"])
        assert len(r["haystack_session_ids"]) == len(r["haystack_dates"]) == n
        assert set(r["answer_session_ids"]) <= set(r["haystack_session_ids"])  # gold kept
        words = sum(len(m["content"].split()) for s in r["haystack_sessions"] for m in s)
        assert 6000 * 0.75 * 0.9 <= words <= 6000 * 0.75 * 1.1
    assert sum(r["question_id"].endswith("_abs") for r in records) >= 1
    assert info["overrides"][0] == "dataset=longmemeval" and info["questions"] == 9
    again = tmp_path / "again"
    fixture_longmemeval(again, questions=9, tokens=6000, seed=3)
    assert (again / "longmemeval_s_cleaned.json").read_bytes() == (
        tmp_path / "longmemeval_s_cleaned.json"
    ).read_bytes()  # seeded: the same bytes


def test_the_grown_fixture_loads_with_the_real_loader(tmp_path):
    from memharness.data_prep.longmemeval import load

    fixture_longmemeval(tmp_path, questions=3, tokens=4000, seed=0)
    ds = load(path=str(tmp_path / "longmemeval_s_cleaned.json"), split="s")
    assert len(ds.episodes) == 3
    assert all(len(e.units) > 20 for e in ds.episodes)


def test_an_unknown_data_maker_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown data maker"):
        make_data("hub", tmp_path, 1, 100, 0)


def test_growth_fits_build_and_memory_exponents_over_the_measured_points(capsys):
    from memharness.eval.bench.rehearsal import _exponents

    points = [
        {"tokens": t, "units": u, "build_s": 0.01 * u, "rss_above_startup_gb": 1e-6 * u**1.5}
        for t, u in [(128_000, 500), (1_000_000, 4_000), (10_000_000, 40_000)]
    ]
    points.append({"tokens": 10, "estimate": "dry run: 5 LLM calls"})  # an estimate: not fitted
    fig = _exponents("x", points)
    assert fig["build_exponent"] == pytest.approx(1.0)
    assert fig["memory_exponent"] == pytest.approx(1.5)
    lines = capsys.readouterr().out.splitlines()
    assert any("x_memory_exponent" in line and line.endswith("MISS") for line in lines)
    assert not any("x_build_exponent" in line and "MISS" in line for line in lines)
    assert math.isfinite(fig["build_exponent"])


def test_the_systems_that_rebuild_globally_are_the_offline_designs():
    from memharness.eval.bench.rehearsal import memory_systems, rebuilds_globally

    offline = {s for s in memory_systems() if rebuilds_globally(s)}
    assert {"raptor", "graphrag", "hipporag"} <= offline
    assert not offline & {"full_context", "memorystream", "memtree", "structmem", "cam", "mem0"}


def test_flags_go_to_one_on_demand_bench_only():
    from memharness.eval.bench.__main__ import main

    assert "rehearsal" in ON_DEMAND
    with pytest.raises(SystemExit, match="on-demand"):
        main(["scaling", "--questions", "2"])


@pytest.mark.slow
@pytest.mark.doubles
def test_rehearsal_prints_its_table_for_two_systems(tmp_path, monkeypatch, capsys):
    """Two systems, two questions, the scripted backend: each system runs in its own process and
    the table shows both with its figures (growth is left out to keep it short; its arithmetic and
    choices are tested above)."""
    from memharness.eval.bench.rehearsal import main

    monkeypatch.chdir(tmp_path)
    figures = main(
        [
            "--questions=2",
            "--tokens=1500",
            "--systems=full_context,memtree",
            "--llm=scripted",
            "--embedder=hashing",
            "--data=fixture",
            "--no-growth",
            f"--keep={tmp_path / 'work'}",
        ]
    )
    out = capsys.readouterr().out
    table = out[out.index("system ") :].splitlines()
    assert table[0].split()[:3] == ["system", "wall", "s"]
    rows = {line.split()[0]: line.split() for line in table[1:3]}
    assert set(rows) == {"full_context", "memtree"}
    for name in ("full_context", "memtree"):
        f = figures["systems"][name]
        assert f["calls"] > 0 and f["peak_rss_gb"] > 0.05 and f["wall_s"] > 0
        assert f["estimated_calls"] > 0 and f["failed"] == 0
        assert int(rows[name][6]) == f["calls"]
    assert figures["systems"]["memtree"]["embed_requests"] > 0
    assert "growth" not in figures


def test_the_served_backend_carries_chat_and_embeddings_and_the_in_flight_budget():
    from memharness.eval.bench.rehearsal import backend_overrides, parse

    args = parse(["--server", "--in-flight=16", "--set=run.cpu_workers=1"])
    served = backend_overrides(args, "http://127.0.0.1:9/v1")
    assert "llm.backend.base_url=http://127.0.0.1:9/v1" in served
    assert "embedder.backend.base_url=http://127.0.0.1:9/v1" in served
    assert "llm.max_in_flight=16" in served and served[-1] == "run.cpu_workers=1"
    local = backend_overrides(parse(["--llm=scripted", "--embedder=hashing"]))
    assert local == ["llm=scripted", "embedder=hashing"]


def test_the_subcommands_of_the_other_items_are_found_by_asking_the_command():
    from memharness.eval.bench._rehearsal_data import cli_has

    assert cli_has("bench") and cli_has("estimate")
    assert not cli_has("usage:") and not cli_has("no-such-subcommand")


def test_a_global_rebuilder_prints_its_pilot_dry_run_scaled_by_tokens():
    from memharness.eval.bench.rehearsal import _scaled_estimate

    pilot = (128_000, {"calls": 300.0, "prompt_tokens": 1e6})
    line = _scaled_estimate(pilot, 1_280_000)
    assert line == "dry run at 128,000 tokens x 10.0: 3,000 LLM calls, 10,000,000 prompt tokens"
    assert "failed" in _scaled_estimate((128_000, None), 1_000_000)


def test_growth_says_n_a_where_a_figure_never_rose_above_zero():
    from memharness.eval.bench.rehearsal import _exponents

    points = [
        {"tokens": 1, "units": 16, "build_s": 0.001, "rss_above_startup_gb": 0.0},
        {"tokens": 2, "units": 33, "build_s": 0.002, "rss_above_startup_gb": 0.0},
    ]
    fig = _exponents("y", points)
    assert fig["build_exponent"] == pytest.approx(1 / (math.log(33 / 16) / math.log(2)))
    assert fig["memory_exponent"].startswith("n/a")


def test_the_in_process_rehearsal_backend_waits_the_latency_the_bound_assumes():
    """Without --server, --latency-ms used to reach the bound only: the in-process backend answered
    at once, so wall vs bound compared a 0 ms backend against a 20 ms bound."""
    from memharness.eval.bench.rehearsal import backend_overrides, parse

    local = backend_overrides(parse(["--latency-ms=20", "--in-flight=8"]))
    assert local[:2] == ["llm=rehearsal", "embedder=rehearsal"]
    assert "llm.backend.base_ms=20" in local and "llm.backend.capacity=8" in local
    assert "llm.max_in_flight=8" in local


def test_the_served_test_backend_serves_as_many_at_once_as_the_harness_sends(tmp_path):
    """--server starts ``memharness test-backend`` on 127.0.0.1 with --in-flight as its capacity
    (it used to keep its own default of 32 whatever --in-flight said)."""
    import urllib.request

    from memharness.eval.bench._rehearsal_run import served_backend

    log = tmp_path / "server.log"
    with served_backend(5, log, capacity=3) as url:
        with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=5) as r:
            stats = json.loads(r.read())
    assert url.startswith("http://127.0.0.1:")
    assert "capacity 3" in log.read_text(encoding="utf-8")
    assert stats["rehearsal"]["chat"]["capacity"] == 3


def test_auto_data_is_the_synth_generator_and_its_overrides(tmp_path):
    data = make_data("auto", tmp_path / "d", questions=1, tokens=2500, seed=0)
    assert data["maker"] == "synth"
    written = json.loads((tmp_path / "d" / "synth.json").read_text(encoding="utf-8"))
    assert data["overrides"] == written["overrides"]
    assert "dataset=longmemeval" in data["overrides"]


def test_cam_grows_online_in_batches_not_as_one_haystack_sized_batch(tmp_path, monkeypatch):
    """Growth used to hand CAM each haystack as one insert batch: units x units similarity
    matrices (memory exponent 2.1 from 128K to 1M tokens, OOM-killed at 10M). Its growth runs now
    carry an insert batch size; the other systems' runs do not."""
    from memharness.eval.bench import rehearsal

    seen: dict[str, list[str]] = {}

    def fake_run_system(name, data, backend, work, estimate, startup, extra=()):
        seen[name] = list(extra)
        return {"error": "not run"}

    monkeypatch.setattr(rehearsal, "run_system", fake_run_system)
    monkeypatch.setattr(rehearsal, "make_data", lambda *a: {"overrides": []})
    args = rehearsal.parse(["--growth-tokens=1000"])
    rehearsal.growth(["cam", "memtree"], [1000], args, [], tmp_path, None)
    assert seen["cam"] == ["dataset.insert_batch_size=64"]
    assert seen["memtree"] == []
