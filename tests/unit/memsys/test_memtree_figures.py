"""eval.memtree_figures on synthetic run folders built from fake-model trees."""

from __future__ import annotations

import json

import numpy as np
import pytest
import records
from memharness.eval.report import memtree_figures as mf
from memtree_fakes import make_tree, unit

TABLE = {"a1": [1, 0, 0], "a2": [1, 0.2, 0], "b": [0, 1, 0], "c": [0.6, 0, 0.8]}


def _run(root, name, acc, **settings):
    tree = make_tree(TABLE, **settings)
    for i, t in enumerate(["a1", "a2", "b", "c"]):
        tree.insert_unit(unit(t, i))
    folder = root / "memtree-sample" / name
    records.write(folder, records.metrics("memtree", metrics={"judge": {"mean": acc, "n": 4}}), [])
    (folder / "memory_stats.json").write_text(json.dumps({"ep": tree.stats()}))
    (folder / "config.yaml").write_text("dataset:\n  name: sample\n")
    return tree


def test_accuracy_lookup():
    assert mf.accuracy({"metrics": {"judge": {"mean": 0.5}, "f1": {"mean": 0.2}}}) == 0.5
    assert mf.accuracy({"metrics": {"f1": {"mean": 0.2}}}) == 0.2
    assert mf.accuracy({"metrics": {"judge": {"mean": 0.5}, "f1": {"mean": 0.2}}}, "f1") == 0.2
    assert mf.accuracy({}) is None


def test_figures_and_order_spread(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    k = 0
    for theta in (0.1, 0.4):
        for rate in (0.25, 0.5):
            _run(runs, f"t{k}", 0.5 + 0.1 * k, base_threshold=theta, rate=rate)
            k += 1
    for i, (mode, topk) in enumerate([("collapsed", 1), ("top_down", 1), ("top_down", 3)]):
        _run(runs, f"r{i}", 0.3, traversal=mode, top_k=topk)
    accs = [0.2, 0.4, 0.9]
    trees = [
        _run(runs, f"o{i}", a, insert_order_seed=s)
        for i, (a, s) in enumerate(zip(accs, [1, 2, 3], strict=False))
    ]
    out = tmp_path / "fig"
    figures = []
    real_save = mf.save
    monkeypatch.setattr(
        mf,
        "save",
        lambda fig, path, dpi=120: figures.append((path.name, fig)) or real_save(fig, path, dpi),
    )
    written = {p.name for p in mf.main([str(runs), "--out", str(out)])}
    assert {
        "fig_a6_depth_distribution.png",
        "fig_a7_threshold_accuracy.png",
        "fig_a4_retrieval_ablation.png",
        "order_spread.md",
        "order_spread.json",
    } <= written
    assert sum(n.startswith("fig4_") and n.endswith(".png") for n in written) == 4 + 3 + 3
    assert {n[:-4] for n in written if n.endswith(".png")} == {
        n[:-4] for n in written if n.endswith(".pdf")
    }
    assert (out / "sample" / "fig_a7_threshold_accuracy.pdf").read_bytes()[:4] == b"%PDF"
    heatmap = dict(figures)["fig_a7_threshold_accuracy.png"]
    cells = sorted(t.get_text() for t in heatmap.axes[0].texts)
    assert cells == [
        "50.0\nn=4",
        "60.0\nn=4",
        "70.0\nn=4",
        "80.0\nn=4",
    ]  # the score and its n in every cell
    spread = json.loads((out / "sample" / "order_spread.json").read_text())
    # the default-order run with θ0=0.4, λ=0.5 (t3, accuracy 0.8) is one of the orders too
    assert spread["accuracy"]["n"] == 4
    assert spread["accuracy"]["mean"] == pytest.approx(np.mean(accs + [0.8]))
    assert spread["accuracy"]["max"] == pytest.approx(0.9)
    nodes = [t.n_nodes - 1 for t in trees]
    assert spread["nodes"]["min"] <= min(nodes) and spread["nodes"]["max"] >= max(nodes)


def test_no_runs_writes_nothing(tmp_path):
    assert mf.main([str(tmp_path), "--out", str(tmp_path / "out")]) == []
