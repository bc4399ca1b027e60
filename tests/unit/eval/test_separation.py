"""The note under a table saying whether its judge column separates the systems, and why not."""

from __future__ import annotations

from memharness.eval.judge.separation import judge_notes


def run(
    memory: str,
    mean: float,
    low: float,
    high: float,
    cal=(1.0, 1.0),
    n: int = 6,
    dataset: str = "sample",
):
    return {
        "memory": memory,
        "dataset": dataset,
        "metrics": {"judge": {"mean": mean, "ci_low": low, "ci_high": high, "n": n}},
        "judge_reliability": None
        if cal is None
        else {
            "canaries": {
                "accepts_reference": {"rate": cal[0], "n": n},
                "false_accept_other": {"rate": round(1 - cal[1], 6), "n": n},
            }
        },
    }


def test_disjoint_cis_are_named():
    notes = judge_notes(
        [
            run("full_context", 0.33, 0.0, 0.67),
            run("memtree", 1.0, 1.0, 1.0),
            run("ms", 0.83, 0.5, 1.0),
        ]
    )
    assert notes == [
        "sample: the judge separates memtree > full_context (disjoint 95% CIs, n = 6); "
        "other differences are within the CIs."
    ]


def test_overlapping_cis_say_the_column_cannot_separate():
    notes = judge_notes([run("a", 0.5, 0.17, 0.83), run("b", 0.67, 0.33, 1.0)])
    assert len(notes) == 1 and "does not separate" in notes[0] and "n = 6" in notes[0]


def test_a_weak_or_unmeasured_judge_is_the_reason():
    notes = judge_notes(
        [run("a", 1.0, 1.0, 1.0, cal=(1.0, 0.12)), run("b", 0.0, 0.0, 0.0, cal=None)]
    )
    assert len(notes) == 1 and "cannot rank" in notes[0]
    assert "a (1.00/0.12)" in notes[0] and "b (not measured)" in notes[0]


def test_one_note_per_dataset_with_two_judged_runs():
    runs = [
        run("a", 1.0, 1.0, 1.0),
        run("b", 0.0, 0.0, 0.0),
        run("a", 1.0, 1.0, 1.0, dataset="solo"),
    ]
    assert [n.split(":")[0] for n in judge_notes(runs)] == ["sample"]
