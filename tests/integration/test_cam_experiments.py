"""The CAM experiment configs compose, and each sweep point gives the intended memory settings."""

from __future__ import annotations

import pytest
from memharness.eval.papers.names import PENDING_SYSTEMS
from memharness.eval.run.runner import build_memory
from memharness.eval.run.validate import config_problems
from omegaconf import OmegaConf
from paths import ROOT

CONF = ROOT / "conf"


def sweep(name: str) -> dict[str, list[str]]:
    params = OmegaConf.load(CONF / "experiment" / f"{name}.yaml").hydra.sweeper.params
    return {k: str(v).split(",") for k, v in params.items()}


@pytest.mark.parametrize(
    "name", ["cam_table2", "cam_table3", "cam_fig3a", "online_batches", "cam_grid"]
)
def test_every_swept_memory_exists(name):
    """Or is a system another branch of its issue is adding (checked by name until it lands)."""
    memories = set(sweep(name).get("memory", ["cam"]))
    present = {p.stem for p in (CONF / "memory").glob("*.yaml")}
    assert memories <= present | set(PENDING_SYSTEMS)


@pytest.mark.parametrize("dataset", ["novelqa", "multihop", "fables"])
def test_table2_and_table7_sweep_every_column_dataset(dataset):
    assert sweep("cam_table2")["dataset"] == [
        "novelqa",
        "qmsum",
        "fables",
        "multihop",
        "odsum_story",
        "odsum_meeting",
    ]
    assert sweep("cam_table7") == {
        "memory": ["raptor", "hipporag", "cam", "cam_fm"],
        "dataset": ["hotpotqa", "twowiki", "musique"],
    }


@pytest.mark.parametrize("dataset", ["novelqa", "multihop", "fables"])
@pytest.mark.parametrize("memory", ["cam", "raptor", "graphrag", "memtree", "full_context"])
def test_table2_points_compose_with_512_token_chunks(make_cfg, memory, dataset):
    assert memory in sweep("cam_table2")["memory"]
    cfg = make_cfg("experiment=cam_table2", f"memory={memory}", f"dataset={dataset}")
    assert (
        cfg.memory.name == memory
        and cfg.dataset.name == dataset
        and cfg.dataset.loader.chunk_size == 512
    )
    assert config_problems(cfg) == []
    # only CAM gets the offline construction of the main results (conf/per_memory/cam_table2/cam.yaml)
    assert cfg.memory.get("construction") == ("offline" if memory == "cam" else None)


@pytest.mark.parametrize("dataset", ["hotpotqa", "twowiki", "musique"])
def test_table7_points_use_the_shared_corpus(make_cfg, dataset):
    cfg = make_cfg("experiment=cam_table7", "memory=cam", f"dataset={dataset}")
    assert cfg.dataset.loader.protocol == "shared_corpus" and cfg.dataset.loader.sample_size == 1000
    assert cfg.memory.construction == "offline" and config_problems(cfg) == []
    raptor = make_cfg("experiment=cam_table7", "memory=raptor", f"dataset={dataset}")
    assert raptor.memory.get("construction") is None and config_problems(raptor) == []


@pytest.mark.parametrize(
    "variant,expected",
    [
        ("full", ("prune_and_grow", True, True)),
        ("hierarchical_traversal", ("top_down", True, True)),
        ("global_retrieval", ("collapsed", True, True)),
        ("no_hierarchy", ("prune_and_grow", False, True)),
        ("no_flexibility", ("prune_and_grow", True, False)),
    ],
)
def test_table3_variants_are_settings_of_one_cam(make_cfg, variant, expected):
    assert variant in sweep("cam_table3")["variant"]
    cfg = make_cfg("experiment=cam_table3", f"variant={variant}", "dataset=multihop")
    memory = build_memory(cfg, _Services())
    assert (memory.traversal, memory.hierarchy, memory.ego_splitting) == expected
    assert (
        cfg.dataset.loader.chunk_size == 512 and memory.construction == "offline"
    )  # the main results' setting
    assert config_problems(cfg) == []  # variant / variants are declared settings, not unknown keys


@pytest.mark.parametrize("memory", ["cam", "memtree"])
def test_online_batches_points_compose(make_cfg, memory):
    assert sweep("online_batches")["dataset.insert_batch_size"] == [
        "50",
        "100",
        "200",
        "400",
        "800",
    ]
    cfg = make_cfg("experiment=online_batches", f"memory={memory}", "dataset.insert_batch_size=100")
    assert (
        cfg.dataset.name == "novelqa"
        and cfg.dataset.insert_batch_size == 100
        and cfg.memory.name == memory
    )


def test_app_e_grid_sweeps_alpha_sigma_theta(make_cfg):
    assert sweep("cam_grid") == {
        "memory.network.alpha": ["0.5", "0.7", "0.9"],
        "memory.network.sigma": ["1.0", "1.5", "2.0"],
        "memory.network.theta": ["0.5", "0.7"],
    }
    cfg = make_cfg(
        "experiment=cam_grid",
        "memory.network.alpha=0.9",
        "memory.network.sigma=2.0",
        "memory.network.theta=0.7",
    )
    network = build_memory(cfg, _Services()).network
    assert (network.alpha, network.sigma, network.theta) == (
        0.9,
        2.0,
        0.7,
    ) and cfg.dataset.loader.chunk_size == 512


class _Services:
    llm = embedder = tokenizer = None
