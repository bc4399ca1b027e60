"""Past one machine: launcher configs, the network-file-system warning, per-job caches and their merge."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import CONF
from hydra import compose, initialize_config_dir
from memharness.eval.cli import cache_merge
from memharness.eval.run.runner import run
from memharness.memsys.services import factory
from memharness.memsys.services.cache import network_filesystem
from processes import run_py

MOUNTS = """/dev/sda1 / ext4 rw 0 0
server:/export /home nfs4 rw,relatime 0 0
/dev/sdb1 /home/local ext4 rw 0 0
"""


def test_network_file_systems_are_recognised_by_the_longest_mount_point():
    assert network_filesystem("/home/ann/.cache/calls.sqlite", MOUNTS) == "nfs4"
    assert (
        network_filesystem("/home/local/calls.sqlite", MOUNTS) is None
    )  # a local disk mounted inside
    assert network_filesystem("/tmp/calls.sqlite", MOUNTS) is None
    assert (
        network_filesystem("/homework/x", MOUNTS) is None
    )  # a prefix of the name is not a mount point


def test_a_shared_cache_on_nfs_is_warned_about_and_per_job_is_suggested(
    make_cfg, tmp_path, monkeypatch, caplog
):
    monkeypatch.setattr(factory, "network_filesystem", lambda path: "nfs4")
    with caplog.at_level(logging.WARNING, logger="memharness"):
        factory.build_cache(make_cfg())
    assert "network file system (nfs4)" in caplog.text and "cache.mode=per_job" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memharness"):
        cache = factory.build_cache(make_cfg("cache.mode=per_job"), run_dir=tmp_path / "job")
    assert (
        cache.path == tmp_path / "job" / "calls.sqlite" and "network file system" not in caplog.text
    )


def test_per_job_caches_merged_afterwards_mean_the_next_sweep_pays_nothing(
    make_cfg, tmp_path, capsys
):
    shared = tmp_path / "shared.sqlite"
    base = (
        "memory=memtree",
        "dataset.limit=2",
        f"cache.path={shared}",
        "cache.mode=per_job",
        "snapshots.enabled=false",
    )
    first = run(make_cfg(*base), tmp_path / "sweep" / "0")
    assert (
        first["calls"]["total"]["calls"] > 0 and not shared.exists()
    )  # the shared cache is only read
    assert (tmp_path / "sweep" / "0" / "calls.sqlite").is_file()
    assert cache_merge.main([str(shared), str(tmp_path / "sweep")]) == 0
    assert "merged 1 caches" in capsys.readouterr().out
    again = run(make_cfg(*base), tmp_path / "sweep2" / "0")  # a new job: its own cache is empty
    assert again["calls"]["total"]["calls"] == 0 and again["calls"]["total"]["embed_calls"] == 0
    total = first["calls"]["total"]
    assert again["calls"]["total"]["cache_hits"] == total["calls"] + total["cache_hits"]
    # merging again adds nothing: entries are content-addressed
    assert cache_merge.merge(shared, [tmp_path / "sweep", tmp_path / "sweep2"]) == {
        "files": 2,
        "chat_added": 0,
        "embed_added": 0,
    }
    assert cache_merge.main([str(shared), str(tmp_path / "nowhere")]) == 2


def test_launcher_configs_compose():
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        local = compose(
            config_name="config", overrides=["hydra/launcher=local"], return_hydra_config=True
        )
        slurm = compose(
            config_name="config", overrides=["hydra/launcher=slurm"], return_hydra_config=True
        )
    assert (
        local.hydra.launcher._target_.endswith("JoblibLauncher")
        and local.hydra.launcher.n_jobs == 2
    )
    assert (
        slurm.hydra.launcher._target_.endswith("SlurmLauncher")
        and slurm.hydra.launcher.gpus_per_node == 0
    )


@pytest.mark.slow
@pytest.mark.doubles
def test_a_sweep_through_submitit_merges_its_job_caches_and_reruns_for_free(tmp_path):
    """``hydra/launcher=submitit_local``: the code path SLURM uses (pickled jobs, a folder per job,
    results unpickled back), with local processes; per-job caches, merged, make the rerun free."""
    shared = tmp_path / "shared.sqlite"
    args = [
        "hydra/launcher=submitit_local",
        "llm=scripted",
        "embedder=hashing",
        "memory=full_context,memorystream",
        "dataset.limit=2",
        "cache.mode=per_job",
        "snapshots.enabled=false",
    ]
    first = run_py(tmp_path, *args, multirun=True, MEMHARNESS_CACHE=str(shared))
    assert first.returncode == 0, first.stderr[-3000:]
    sweep = tmp_path / "runs"
    jobs = sorted((sweep / ".submitit").glob("*/*_submitted.pkl"))
    assert len(jobs) == 2  # each point was pickled and submitted as its own job
    job_caches = sorted(sweep.rglob("calls.sqlite"))
    metrics = sorted(sweep.rglob("metrics.json"))
    assert len(job_caches) == 2 == len(metrics) and not shared.exists()
    assert all(json.loads(m.read_text())["calls"]["total"]["calls"] > 0 for m in metrics)
    assert cache_merge.main([str(shared), str(sweep)]) == 0
    again = run_py(
        tmp_path,
        *args,
        f"hydra.sweep.dir={tmp_path / 'again'}",
        multirun=True,
        MEMHARNESS_CACHE=str(shared),
    )
    assert again.returncode == 0, again.stderr[-3000:]
    rerun = [json.loads(m.read_text()) for m in sorted((tmp_path / "again").rglob("metrics.json"))]
    assert len(rerun) == 2
    assert all(
        m["calls"]["total"]["calls"] == 0 == m["calls"]["total"]["embed_calls"] for m in rerun
    )
