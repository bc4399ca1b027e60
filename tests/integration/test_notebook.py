"""The comparison notebook executes top to bottom on real run folders (as CI runs it)."""

from __future__ import annotations

import nbformat
from memharness.eval.run.runner import run
from nbclient import NotebookClient
from paths import ROOT

NOTEBOOK = ROOT / "notebooks" / "compare_runs.ipynb"


def test_notebook_executes_and_tells_runs_of_one_memory_apart(make_cfg, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    for name, extra in (("a", "memory.top_k=1"), ("b", "memory.top_k=3")):
        run(make_cfg("memory=memtree", "dataset.limit=2", extra), runs / name)
    run(make_cfg("memory=full_context", "dataset.limit=2"), runs / "c")
    monkeypatch.setenv("MEMHARNESS_RUNS", str(runs))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "\n".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "3 runs" in text and "memory.top_k" in text
    table = next(o for o in nb.cells[3].outputs if o.get("output_type") == "execute_result")[
        "data"
    ]["text/plain"]
    assert (
        "memory.top_k=1" in table and "memory.top_k=3" in table and "[" in table
    )  # CIs, not raw floats
    assert any("image/png" in o.get("data", {}) for o in nb.cells[7].outputs)
