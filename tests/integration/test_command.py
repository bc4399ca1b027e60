"""The one ``memharness`` command: subcommands reach their modules, a bare override list is a
run, and the pre-rooms ``python -m`` paths still run (with a note) for one release."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from memharness.eval.cli import aliases, command

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


def test_the_installed_command_and_an_old_path_run(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "memharness")
    proc = subprocess.run([exe, "judge-report", "--help"], capture_output=True, text=True, env=ENV)
    assert proc.returncode == 0 and "usage:" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "memharness.eval.judge_report", "--help"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert proc.returncode == 0 and "usage:" in proc.stdout
    assert "memharness.eval.judge_report is now memharness.eval.report.judge_report" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "memharness.eval.report", "--help"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert proc.returncode == 0 and "--baseline" in proc.stdout and "alias" in proc.stderr


def test_every_old_path_names_an_existing_module():
    import importlib.util

    for _old, (new, sub) in aliases.OLD_PATHS.items():
        assert importlib.util.find_spec(new) is not None, new
        assert sub in command.SUBCOMMANDS, sub
