"""The config is validated once per run, at the command line, before anything loads: the preflight
checks a single run (before Hydra writes its folder) and ``run_command`` takes its verdict; each job
of a multirun is checked once by ``run_command``; the runner does not check again."""

from __future__ import annotations

import sys

import pytest
from memharness.eval.cli import hydra_main, run_command
from memharness.eval.run import validate
from paths import TESTS


@pytest.fixture
def count_validations(monkeypatch, tmp_path):
    """Run the ``memharness`` command in this process; return how often the config was checked."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run_command, "_exit_codes", [])
    checks: list[int] = []
    real = validate.config_problems

    def counted(cfg):
        checks.append(1)
        return real(cfg)

    monkeypatch.setattr(validate, "config_problems", counted)

    def command(*args: str) -> int:
        argv = [
            "memharness",
            *args,
            f"hydra.searchpath=[file://{TESTS / 'conf'}]",
            "llm=fake",
            "embedder=fake",
            "memory=full_context",
            f"cache.path={tmp_path / 'cache.sqlite'}",
            f"data_dir={tmp_path / 'data'}",
            "progress=false",
        ]
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as done:
            hydra_main.main()
        assert done.value.code == 0
        return len(checks)

    return command


def test_a_single_run_is_validated_once(count_validations, tmp_path):
    assert count_validations(f"hydra.run.dir={tmp_path / 'run'}", "dataset.limit=2") == 1
    assert (tmp_path / "run" / "metrics.json").is_file()


def test_each_job_of_a_multirun_is_validated_once(count_validations, tmp_path):
    sweep = tmp_path / "runs"
    assert count_validations("-m", f"hydra.sweep.dir={sweep}", "dataset.limit=1,2") == 2
    assert len(list(sweep.rglob("metrics.json"))) == 2
