"""The run's process pool for CPU-bound steps (memsys/services/cpu.py) and RAPTOR's clustering in it:
the same clusters, seeds and counts whether a layer is clustered in a worker process or in the
episode's thread."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from memharness.memsys.raptor.clustering import ClusterSettings, cluster_layer
from memharness.memsys.raptor.memory import Raptor
from memharness.memsys.services import cpu
from memharness.memsys.services.cpu import CpuPool, cpu_pool, in_thread, run_cpu, run_cpu_many
from raptor_fakes import identity_reduce, make_raptor, units


def topic_vectors(topics: int, per: int, dim: int = 32, seed: int = 3) -> np.ndarray:
    """Seeded unit vectors around ``topics`` random centres, ``per`` each (topic-major order)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim))
    rows = np.repeat(centres, per, axis=0) + 0.35 * rng.standard_normal((topics * per, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _counts(log) -> dict:
    return {k: v for k, v in log.to_json().items() if not k.endswith("_s")}  # times differ


def test_one_worker_or_no_pool_runs_in_the_calling_thread():
    assert CpuPool(1).run(threading.get_ident) == threading.get_ident()
    assert cpu._active is None and run_cpu(threading.get_ident) == threading.get_ident()
    with cpu_pool(1) as pool:
        assert run_cpu(os.getpid) == os.getpid() and pool.steps == 1


def test_a_pool_runs_steps_in_another_process_and_is_closed_when_the_block_exits():
    with cpu_pool(2) as pool:
        assert cpu._active is pool and pool.workers == 2
        assert run_cpu(os.getpid) != os.getpid()
    assert cpu._active is None
    with pytest.raises(RuntimeError, match="closed"):
        pool.run(os.getpid)
    with pytest.raises(RuntimeError, match="boom"), cpu_pool(2):
        raise RuntimeError("boom")  # an exception in the run still closes the pool
    assert cpu._active is None


def test_workers_default_to_the_machines_cores_and_zero_is_refused():
    assert CpuPool().workers == cpu.machine_cores() >= 1
    with pytest.raises(ValueError, match="run.cpu_workers must be >= 1"):
        CpuPool(0)


def test_a_layer_clustered_in_a_worker_equals_the_in_thread_clusters_and_log():
    vectors = topic_vectors(topics=4, per=12, dim=4)
    settings = ClusterSettings(max_clusters=8, max_length_in_cluster=300)  # a topic: 480 tokens
    args = (vectors, [40] * len(vectors), settings, 11, "L1", identity_reduce)
    here, here_log = cluster_layer(*args)
    with cpu_pool(2):
        there, there_log = run_cpu(cluster_layer, *args)
    assert here_log.reclustered > 0 and len(here) >= 4
    assert there == here and _counts(there_log) == _counts(here_log)


def test_a_layer_spreading_its_steps_over_a_pool_equals_the_in_thread_clusters_and_log():
    vectors = topic_vectors(topics=2, per=24, dim=4)  # global clusters over 11 nodes: local steps
    settings = ClusterSettings(max_clusters=6, max_length_in_cluster=300)
    args = (vectors, [40] * len(vectors), settings, 11, "L1", identity_reduce)
    here, here_log = cluster_layer(*args)
    with cpu_pool(2) as pool:
        there, there_log = cluster_layer(*args, steps=run_cpu_many)
    local = [p for p in here_log.seeds if "/local" in p]
    assert len(local) >= 2 and here_log.reclustered > 0  # local steps and re-clustering ran
    # each global reduction and BIC fit, and each local step, was a step of the pool
    assert len(here_log.seeds) < pool.steps < here_log.umap_calls + here_log.gmm_fits
    assert there == here and _counts(there_log) == _counts(here_log)
    assert list(there_log.seeds) == list(here_log.seeds)  # seeds logged in the same order


def test_run_cpu_many_keeps_the_order_of_the_calls_and_counts_its_steps():
    calls = [(n,) for n in (5, 1, 4, 2, 3)]
    with cpu_pool(2) as pool:
        assert run_cpu_many(abs, [(-n,) for (n,) in calls]) == [5, 1, 4, 2, 3]
        assert pool.steps == 5
    assert run_cpu_many(abs, [(-2,), (3,)]) == [2, 3] and in_thread(abs, []) == []


@pytest.mark.slow  # real UMAP: numba compiles in this process and in each worker (~15 s each); one worker is started
def test_real_umap_clusters_and_the_built_tree_are_the_same_in_the_pool_and_in_thread():
    vectors = topic_vectors(topics=4, per=12, dim=16)
    settings = ClusterSettings(max_clusters=8, max_length_in_cluster=300)  # a topic: 360 tokens
    args = (vectors, [30] * len(vectors), settings, 7, "L1")
    here, here_log = cluster_layer(*args)
    table = {f"w{i}": v for i, v in enumerate(vectors[:24])}

    def tree():
        memory = make_raptor(table, cls=Raptor, seed=5)
        memory.insert(units(list(table)))
        memory.ensure_built()
        return list(memory.store.ids), [list(c) for c in memory.store.children]

    tree_here = tree()
    with cpu_pool(2) as pool:
        there, there_log = run_cpu(cluster_layer, *args)
        tree_there = tree()
    assert pool.steps > 1  # Raptor sent its real-UMAP layers to the open pool
    assert len(here) >= 4 and there == here and _counts(there_log) == _counts(here_log)
    assert tree_there == tree_here and len(tree_here[0]) > 24


def test_the_setting_defaults_to_null_and_a_bad_value_is_refused_naming_it(make_cfg):
    from memharness.eval.run.validate import validate_config
    from memharness.memsys.services.types import ConfigError

    cfg = make_cfg()
    assert cfg.run.cpu_workers is None
    validate_config(make_cfg("run.cpu_workers=2"))
    for value in (0, "many"):
        with pytest.raises(ConfigError, match="cpu_workers"):
            validate_config(make_cfg(f"run.cpu_workers={value}"))
