"""The bench's figure lines: the target beside each figure, a miss flagged."""

from __future__ import annotations

import pytest
from memharness.eval.bench import misses, print_figures


@pytest.mark.parametrize(
    ("value", "target", "missed"),
    [
        (0.91, ">= 0.9", False),
        (0.891, ">= 0.9", True),
        (0.05, "<= 0.05", False),
        (0.076, "<= 0.05", True),
        (0, "== 0", False),
        (3, "== 0", True),
        ("n/a", ">= 0.9", False),  # not a number: nothing to compare
    ],
)
def test_misses_compares_the_figure_with_its_target(value, target, missed):
    assert misses(value, target) is missed


def test_print_figures_flags_only_the_misses(capsys):
    print_figures(
        {"held": 0.95, "missed": 1.88, "free": 2.0}, {"held": ">= 0.9", "missed": "<= 1.5"}
    )
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "(target >= 0.9)" in lines["held"] and "MISS" not in lines["held"]
    assert lines["missed"].endswith("(target <= 1.5)  MISS")
    assert "target" not in lines["free"]


def test_an_unknown_bench_module_is_one_clear_line_naming_the_known_ones():
    from memharness.eval.bench.__main__ import main

    with pytest.raises(SystemExit) as info:
        main(["backends", "nosuch"])
    assert "no benchmark module nosuch" in str(info.value)
    assert "backends" in str(info.value) and "raptor" in str(info.value)
