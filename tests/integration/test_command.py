"""The one ``memharness`` command: subcommands reach their modules, a bare override list is a
run; the pre-rooms ``python -m`` paths are gone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from memharness.eval.cli import command

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def test_help_lists_every_subcommand(capsys):
    assert command.dispatch(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in command.SUBCOMMANDS)


@pytest.mark.parametrize("name", sorted(set(command.SUBCOMMANDS) - {"run"}))
def test_every_subcommand_module_has_a_main(name):
    import importlib

    assert callable(importlib.import_module(command.SUBCOMMANDS[name][0]).main)


def test_a_subcommand_runs_its_module_with_the_rest_of_the_arguments(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        command.dispatch(["report", str(tmp_path), "--out", str(tmp_path / "t")])
    assert "no run folders" in str(stop.value.code)


def test_the_installed_command_runs_and_the_pre_rooms_paths_are_gone():
    exe = os.path.join(os.path.dirname(sys.executable), "memharness")
    proc = subprocess.run([exe, "judge-report", "--help"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0 and "usage:" in proc.stdout
    for old in ["memharness.eval.judge_report", "memharness.eval.report"]:
        proc = subprocess.run(
            [sys.executable, "-m", old, "--help"], capture_output=True, text=True, env=ENV
        )
        assert proc.returncode != 0 and "usage:" not in proc.stdout, old
