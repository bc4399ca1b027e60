"""Settings refused at the command line before anything loads (issue 43 cases 8 and 9): a missing or
broken product virtualenv, HippoRAG's passage windows that cannot advance."""

import os
import sys

from memharness.eval.run.validate import config_problems
from processes import run_py


def test_a_missing_product_venv_names_its_make_target(make_cfg, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMHARNESS_VENVS", str(tmp_path / "venvs"))
    assert config_problems(make_cfg("memory=mem0")) == [
        f"memory.product: the product's virtualenv is not installed ({tmp_path}/venvs/mem0/bin/python "
        "is missing); install it with `make product-mem0` (or set memory.python)"
    ]
    assert config_problems(make_cfg("memory=mem0", f"memory.python={sys.executable}")) == []


def test_a_broken_product_venv_says_rebuild(make_cfg, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMHARNESS_VENVS", str(tmp_path / "venvs"))
    (tmp_path / "venvs" / "amem" / "bin").mkdir(parents=True)
    python = tmp_path / "venvs" / "amem" / "bin" / "python"
    python.write_text("")  # not executable: every start would fail with PermissionError
    (line,) = config_problems(make_cfg("memory=amem"))
    assert line.startswith(f"memory.product: {python} is not an executable file")
    assert f"remove {tmp_path}/venvs/amem and run `make product-amem`" in line
    python.unlink()
    os.symlink(tmp_path / "gone" / "python3", python)  # the base interpreter was removed
    (line,) = config_problems(make_cfg("memory=amem"))
    assert "points to a missing interpreter" in line and "make product-amem" in line


def test_hipporag_windows_that_cannot_advance_are_refused(make_cfg):
    (line,) = config_problems(
        make_cfg("memory=hipporag", "memory.chunks.size=50", "memory.chunks.overlap=100")
    )
    assert line == "memory.chunks.overlap: must be smaller than chunks.size (50)"
    assert config_problems(make_cfg("memory=hipporag", "memory.chunks.size=150")) == []


def test_the_command_line_exits_2_in_one_line_before_the_run_folder(tmp_path):
    done = run_py(
        tmp_path,
        "memory=hipporag",
        "memory.chunks.size=50",
        "memory.chunks.overlap=100",
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: memory.chunks.overlap: must be smaller than chunks.size (50)"
    ]
    assert not (tmp_path / "run").exists()


def test_a_worker_that_dies_on_start_points_at_rebuilding_the_venv(tmp_path):
    """A venv whose python runs but whose packages are gone: the worker dies importing them."""
    import pytest
    from memharness.memsys.products.adapter import ProductMemory, WorkerError
    from memharness.memsys.services.embed import Embedder
    from memharness.memsys.services.llm import LLM
    from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat
    from memharness.memsys.types import Unit

    worker = tmp_path / "broken_worker.py"
    worker.write_text("import mem0_not_installed_here\n")
    llm = LLM(ScriptedChat(default="ok"), progress=False)
    mem = ProductMemory(
        llm, Embedder(HashingEmbedder(dim=4)), product="mem0", worker=str(worker),
        python=sys.executable,
    )  # fmt: skip
    with pytest.raises(WorkerError, match=r"ModuleNotFoundError.*rebuild it: .*make product-mem0"):
        mem.insert([Unit(id="u", text="t", source_id="s", position=0)])
    mem.close()
    llm.close()
