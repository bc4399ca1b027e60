"""What a table can tell apart: the minimum detectable difference line under the scores and the
mark on adjacent ranks the paired test cannot separate (eval/report/resolution.py)."""

from __future__ import annotations

import pytest
from memharness.eval.metrics.power import min_detectable_difference
from memharness.eval.report.comparison import build_report
from test_report import write_full_run


def test_mdd_matches_the_normal_approximation():
    # (1.95996 + 0.84162) * sqrt(2 * 0.25 / 100) = 0.19810
    assert min_detectable_difference(100, 0.5)["mdd"] == pytest.approx(0.19810, abs=1e-5)
    # four times the questions halve it; a skewed accuracy shrinks it
    assert min_detectable_difference(400, 0.5)["mdd"] == pytest.approx(0.09905, abs=1e-5)
    assert min_detectable_difference(100, 0.9)["mdd"] < 0.19810
    # no spread observed: the worst case p = 0.5 is used, and said so
    assert min_detectable_difference(100, 1.0) == min_detectable_difference(100, 0.5)
    assert min_detectable_difference(0, 0.5)["mdd"] is None
    with pytest.raises(ValueError):
        min_detectable_difference(10, 1.5)


def test_the_table_carries_the_mdd_and_marks_inseparable_neighbours(tmp_path):
    qs = [f"q{i}" for i in range(20)]
    runs = tmp_path / "runs"
    # a: all right; b: all wrong (McNemar p = 2^-19: separated); c: b but one more right (not)
    write_full_run(runs, "sys_a", "s", {q: 1.0 for q in qs})
    write_full_run(runs, "sys_b", "s", {q: 0.0 for q in qs})
    write_full_run(runs, "sys_c", "s", {q: float(q == "q0") for q in qs})
    md = build_report([runs], tmp_path / "tables", "cmp")["md"].read_text()
    assert "## What this table can tell apart (judge)" in md
    # pooled mean (1 + 0 + 0.05) / 3 = 0.35 at n = 20
    mdd = min_detectable_difference(20, 0.35)["mdd"]
    assert f"| A | sample | all | 20 | 0.350 | {mdd:.3f} |" in md
    assert "Set A: sys_a 1 > sys_c 0.050 ≈ sys_b 0." in md
