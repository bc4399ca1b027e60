"""CAM through the runner with seeded fakes, and the runner's ``dataset.insert_batch_size``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memharness.data_prep.sample import load as load_sample
from memharness.eval.record.scores import detail
from memharness.eval.run.runner import run, split_batches
from memharness.memsys.services.types import ConfigError
from paths import TESTS

SCRIPT = '[["List of the helpful passage numbers","[1, 2]"],["Summary:","A short summary."],["| Predicted: ","1"]]'


def _stats(out: Path) -> dict:
    return json.loads((out / "memory_stats.json").read_text())


def _samples(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_cam_runs_on_the_sample_and_saves_its_hierarchy(make_cfg, tmp_path):
    out = tmp_path / "run"
    metrics = run(
        make_cfg("memory=cam", f"llm.backend.script={SCRIPT}", "memory.network.theta=0.4"), out
    )
    dataset = load_sample()
    assert metrics["counts"]["scored"] == dataset.num_questions and metrics["memory"] == "cam"
    stats = _stats(out)
    for episode in dataset.episodes:
        doc = json.loads((out / "memory" / episode.id / "hierarchy.json").read_text())
        assert (
            doc["system"] == "memharness.memsys.cam.CAM"
            and doc["hyperparameters"]["network"]["theta"] == 0.4
        )
        assert (out / "memory" / episode.id / "view.html").exists()
        ep = stats[episode.id]
        assert ep["prune_and_grow"]["questions"] == len(episode.questions)
        assert ep["construction"]["chunks"] == len(episode.units)
        assert ep["insert_batches"] == [{**ep["insert_batches"][0], "units": len(episode.units)}]
    # the selection picked passages 1 and 2, so evidence came from the exploration, not the fallback
    assert all(stats[e.id]["prune_and_grow"]["fallback_to_initial"] == 0 for e in dataset.episodes)
    assert all(s["retrieved"] for s in _samples(out))
    assert metrics["calls"]["retrieve"]["calls"] > 0  # selection calls are metered as retrieval


def test_split_batches():
    assert split_batches(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert split_batches(list(range(7)), None) == [list(range(7))]


def test_insert_batch_size_feeds_online_memories_in_batches(make_cfg, tmp_path):
    out = tmp_path / "cam"
    run(
        make_cfg(
            "memory=cam",
            "dataset.insert_batch_size=4",
            "dataset.loader.parts=[dialogues]",
            f"llm.backend.script={SCRIPT}",
        ),
        out,
    )
    ep = _stats(out)["dlg-garden"]
    assert [b["units"] for b in ep["insert_batches"]] == [4, 4, 1]
    assert [b["units"] for b in ep["batches"]] == [4, 4, 1]
    assert (
        sum(b["llm_requests"] for b in ep["insert_batches"]) == ep["construction"]["summary_calls"]
    )
    tree = tmp_path / "memtree"
    run(
        make_cfg(
            "memory=memtree", "dataset.insert_batch_size=4", "dataset.loader.parts=[dialogues]"
        ),
        tree,
    )
    ep = _stats(tree)["dlg-garden"]
    assert [b["units"] for b in ep["insert_batches"]] == [4, 4, 1]
    assert (
        ep["insertion"]["insertions"] == 9
    )  # MemTree still inserts one unit at a time inside a batch


def test_with_a_batch_size_offline_memories_rebuild_after_every_batch(make_cfg, tmp_path):
    out = tmp_path / "off"
    run(
        make_cfg(
            "memory=cam",
            "memory.construction=offline",
            "dataset.insert_batch_size=4",
            "dataset.loader.parts=[dialogues]",
            f"llm.backend.script={SCRIPT}",
        ),
        out,
    )
    ep = _stats(out)["dlg-garden"]
    assert [r["units"] for r in ep["rebuilds"]] == [4, 8, 9]
    lazy = (
        tmp_path / "lazy"
    )  # without a batch size an offline memory builds once, at the first question
    run(
        make_cfg(
            "memory=cam",
            "memory.construction=offline",
            "dataset.loader.parts=[dialogues]",
            f"llm.backend.script={SCRIPT}",
        ),
        lazy,
    )
    assert [r["units"] for r in _stats(lazy)["dlg-garden"]["rebuilds"]] == [9]


@pytest.mark.parametrize("bad", ["0", "-2", "2.5", "true"])
def test_a_bad_batch_size_is_a_clear_error(make_cfg, tmp_path, bad):
    with pytest.raises(ConfigError, match="dataset.insert_batch_size"):
        run(make_cfg("memory=full_context", f"dataset.insert_batch_size={bad}"), tmp_path / "r")


def test_cam_answers_multiple_choice_through_the_shared_answer_path(make_cfg, tmp_path):
    fixture = TESTS / "fixtures" / "quality"
    cfg = make_cfg(
        "dataset=quality",
        "memory=cam",
        f"dataset.loader.path={fixture}",
        "dataset.loader.mode=multiple_choice",
        'llm.backend.script=[["Options:","B"],["List of the helpful","[1]"],["Summary:","S."]]',
    )
    metrics = run(cfg, tmp_path / "r")
    samples = _samples(tmp_path / "r")
    assert samples and all(
        s["mode"] == "multiple_choice" and detail(s, "mc_accuracy", "predicted_option") == 1
        for s in samples
    )
    assert metrics["counts"]["mc_unparsed"] == 0


def test_online_batches_figure_reads_per_batch_cost_and_accuracy_from_runs(make_cfg, tmp_path):
    from memharness.eval.report.online_batches import main as figures

    for size in (3, 9):
        for memory in ("cam", "memtree"):
            run(
                make_cfg(
                    f"memory={memory}",
                    f"dataset.insert_batch_size={size}",
                    "dataset.loader.parts=[dialogues]",
                    f"llm.backend.script={SCRIPT}",
                ),
                tmp_path / "runs" / f"{memory}-{size}",
            )
    run(
        make_cfg("memory=cam", "dataset.loader.parts=[dialogues]"),
        tmp_path / "runs" / "no-batch-size",
    )
    assert figures([str(tmp_path / "runs"), "--out", str(tmp_path / "fig")]) == 0
    rows = (tmp_path / "fig" / "online_batches.md").read_text().splitlines()[2:]
    assert [r.split(" | ")[1:4] for r in rows] == [
        ["cam", "3", "6"],
        ["cam", "9", "2"],
        ["memtree", "3", "6"],
        ["memtree", "9", "2"],
    ]  # 2 dialogues x 9 units
    assert all(
        r.rstrip(" |").split(" | ")[-1] == "1.000" for r in rows
    )  # the scripted judge says 1
    assert (tmp_path / "fig" / "online_batches.png").stat().st_size > 0
