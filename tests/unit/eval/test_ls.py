"""``memharness ls``: every config group's YAML files and every registered metric, from the
installed package wherever the command runs."""

from __future__ import annotations

import pytest
from memharness.eval.cli import command, listing
from memharness.eval.metrics.registry import METRICS
from paths import ROOT


def run_ls(capsys, *argv: str) -> tuple[int, str, str]:
    status = command.dispatch(["ls", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_ls_lists_every_memory_dataset_experiment_and_metric(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the configs come from the installed package, not the cwd
    status, out, _ = run_ls(capsys)
    assert status == 0
    lines = out.splitlines()
    for group in ["memory", "dataset", "experiment", "llm", "judge", "debug"]:
        assert any(line.startswith(f"{group} ({group}=<name>)") for line in lines), group
        names = {p.stem for p in (ROOT / "conf" / group).glob("*.yaml")}
        assert names, group
        for name in names:
            assert any(line.split()[:1] == [name] for line in lines), (group, name)
    for metric in METRICS:
        shown = f"{metric.name}<k>" if metric.prefix else metric.name
        assert any(line.split()[:1] == [shown] for line in lines), shown
    assert "per_memory" not in out and "per_dataset" not in out


def test_ls_one_group_lists_only_that_group_with_descriptions(capsys):
    status, out, _ = run_ls(capsys, "memory")
    assert status == 0
    rows = dict(line.split(maxsplit=1) for line in out.splitlines()[1:] if line.strip())
    assert set(rows) == {p.stem for p in (ROOT / "conf" / "memory").glob("*.yaml")}
    assert rows["oracle"] == 'Gold-evidence oracle (MemTree Table 4\'s "Human Annotated Evidence")'
    assert "dataset (" not in out


def test_ls_metrics_says_which_way_is_better_and_the_kind(capsys):
    status, out, _ = run_ls(capsys, "metrics")
    assert status == 0
    rows = {line.split()[0]: line.split()[1:3] for line in out.splitlines()[1:] if line.strip()}
    assert rows["judge"] == ["higher", "accuracy"]
    assert rows["context_tokens"] == ["lower", "cost"]
    assert rows["evidence_units"] == ["-", "retrieval"]
    assert len(rows) == len(METRICS)


def test_ls_unknown_group_is_one_line_and_exit_2(capsys):
    status, out, err = run_ls(capsys, "memorys")
    assert status == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("memharness ls: unknown group 'memorys' (one of: memory, dataset,")


@pytest.mark.parametrize(
    ("comment", "sentence"),
    [
        (
            "# A-Mem (Xu et al. 2025, x): as a product. More.\nname: a\n",
            "A-Mem (Xu et al. 2025, x)",
        ),
        ("# @package _global_\n# CAM, Fig. 3a, the numbers. Then\n", "CAM, Fig. 3a, the numbers"),
        ("# Offline stand-in: no model\n# at all.\n", "Offline stand-in"),
        ("name: no_comment\n", ""),
    ],
)
def test_the_description_is_the_first_sentence_of_the_opening_comment(comment, sentence):
    assert listing.first_sentence(comment) == sentence


def test_help_names_ls_and_the_debug_smoke_run(capsys):
    assert command.dispatch(["--help"]) == 0
    out = capsys.readouterr().out
    assert "  ls " in out and "memharness run debug=default" in out
