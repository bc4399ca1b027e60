"""RAPTOR's grouping π: global then local UMAP + Gaussian mixtures with BIC, soft membership,
and re-clustering of clusters over a token limit (``parthsarthi03/raptor``,
``raptor/cluster_utils.py``), written anew.

For the nodes of one layer:

1. Global: UMAP to ``min(reduction_dimension, n - 2)`` dimensions with ``int(sqrt(n - 1))``
   neighbours (cosine metric); the number of mixture components k minimises the BIC over
   ``1 .. min(max_clusters, n) - 1``; a final mixture with k components is fitted and a node joins
   every component whose posterior exceeds ``threshold`` (soft: a node may join several).
2. Local: a global cluster of at most ``reduction_dimension + 1`` nodes is one cluster; a larger
   one is reduced again by UMAP (``local_n_neighbors`` neighbours, ``reduction_dimension``
   dimensions) over the members' original embeddings and split by the same BIC-selected mixture.
3. A cluster of more than one node whose texts total more than ``max_length_in_cluster`` tokens
   is clustered again, recursively, with the same steps.

Seeds: the public code leaves UMAP unseeded (its layout, hence the tree, changes from run to run)
and fixes the mixtures' ``random_state`` (224 for the BIC fits, 0 for the final fit). Here every
random step gets its own seed derived from the memory's ``seed`` and the step's place in the
build (layer, cluster path, step), and every seed used is recorded in the ``ClusterLog``.

Where this differs from the public code, visibly and counted in the log:
- inputs too small for UMAP (fewer than 5 nodes: UMAP needs at least 2 neighbours and
  ``n > n_components + 1``) are one cluster; the public code would raise there;
- a node whose posteriors are all at or below ``threshold`` (possible only with more than
  1/threshold components) joins its most probable component instead of no cluster;
- a cluster over the token limit that is its whole input is clustered again once, under seeds
  derived from its own path (``.../r<i>``); if that pass returns it whole again it is kept as it is
  (``unsplittable``); the public code would recurse on it until its unseeded UMAP splits it;
- clusters with identical members are summarised once;
- local clusters map back to their nodes by position; the public code matches embeddings by
  value, so identical embeddings would join each other's clusters.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from memharness.memsys.services.cpu import in_thread
from memharness.memsys.types import content_id

Reducer = Callable[[np.ndarray, int, int, str, int], np.ndarray]
Steps = Callable[..., list]  # run_cpu_many's signature: (fn, [args, ...]) -> [fn(*args), ...]


@dataclass(frozen=True)
class ClusterSettings:
    """The clustering hyperparameters (see ``conf/memory/raptor.yaml``)."""

    reduction_dimension: int = 10
    threshold: float = 0.1
    max_clusters: int = 50
    local_n_neighbors: int = 10
    max_length_in_cluster: int = 3500
    metric: str = "cosine"

    def __post_init__(self) -> None:
        if self.reduction_dimension < 1:
            raise ValueError(
                f"memory.clustering.reduction_dimension must be >= 1, got {self.reduction_dimension}"
            )
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"memory.clustering.threshold must be in (0, 1), got {self.threshold}")
        if self.max_clusters < 2:
            raise ValueError(
                f"memory.clustering.max_clusters must be >= 2, got {self.max_clusters}"
            )
        if self.local_n_neighbors < 2:
            raise ValueError(
                f"memory.clustering.local_n_neighbors must be >= 2, got {self.local_n_neighbors}"
            )


@dataclass
class ClusterLog:
    """What one layer's clustering did: seeds, counts of every special case, time in each step."""

    seeds: dict[str, dict[str, int]] = field(default_factory=dict)  # path -> {umap, gmm_bic, gmm}
    umap_calls: int = 0
    gmm_fits: int = 0
    convergence_warnings: int = 0
    too_small: int = 0  # inputs under 5 nodes kept as one cluster
    reclustered: int = 0  # clusters over the token limit clustered again
    whole_retries: int = (
        0  # of those, clusters equal to their whole input (retried once, own seeds)
    )
    unsplittable: list[dict[str, int]] = field(default_factory=list)  # over the limit, kept whole
    fallback_assignments: int = 0  # nodes with no posterior above threshold -> most probable
    duplicate_clusters: int = 0
    umap_s: float = 0.0
    gmm_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}

    def absorb(self, other: ClusterLog) -> None:
        """Add ``other``'s counts, seeds and times (a step's log computed elsewhere) to this one."""
        for key, value in other.__dict__.items():
            mine = getattr(self, key)
            if isinstance(value, dict):
                mine.update(value)
            elif isinstance(value, list):
                mine.extend(value)
            else:
                setattr(self, key, mine + value)


def step_seed(seed: int, path: str, step: str) -> int:
    """The seed of one random step, derived from the memory's seed and where the step runs."""
    return int(content_id("raptor", seed, path, step, length=8), 16) % (2**31 - 1)


def umap_reduce(
    vectors: np.ndarray, n_components: int, n_neighbors: int, metric: str, seed: int
) -> np.ndarray:
    """UMAP to ``n_components`` dimensions (seeded, which also makes it single-threaded)."""
    import umap  # heavy import (numba): only when a layer is clustered

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state", spectral-init notes
        reducer = umap.UMAP(
            n_neighbors=n_neighbors, n_components=n_components, metric=metric, random_state=seed
        )
        return np.asarray(reducer.fit_transform(vectors), dtype=np.float64)


def _fit_gmm(points: np.ndarray, k: int, seed: int, log: ClusterLog) -> Any:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        gmm = GaussianMixture(n_components=k, random_state=seed).fit(points)
    log.gmm_fits += 1
    log.convergence_warnings += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return gmm


def bic_of_fit(points: np.ndarray, k: int, seed: int) -> tuple[float, ClusterLog]:
    """The BIC of one seeded k-component mixture and its fit's log: a unit of the BIC sweep."""
    log = ClusterLog()
    with _one_thread():
        bic = float(_fit_gmm(points, k, seed, log).bic(points))
    return bic, log


def bic_components(
    points: np.ndarray, max_clusters: int, seed: int, log: ClusterLog, steps: Steps = in_thread
) -> int:
    """k in ``1 .. min(max_clusters, n) - 1`` with the lowest BIC (1 when n < 3). Every fit has its
    own ``random_state=seed``, so the fits are independent and ``steps`` may run them anywhere."""
    candidates = range(1, max(2, min(max_clusters, len(points))))
    fits = steps(bic_of_fit, [(points, k, seed) for k in candidates])
    for _, fit_log in fits:
        log.absorb(fit_log)
    return int(candidates[int(np.argmin([bic for bic, _ in fits]))])


def _one_thread() -> Any:
    """BLAS / OpenMP limited to one thread: the mixtures work on 10 x 10 covariances, where threaded
    BLAS only adds overhead (30x slower measured on a loaded 2-core machine), and the results no
    longer depend on the number of cores."""
    import sklearn.mixture  # noqa: F401  (loads the BLAS libraries first, so the limit reaches them)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def gmm_soft_labels(
    points: np.ndarray,
    threshold: float,
    max_clusters: int,
    seeds: dict[str, int],
    log: ClusterLog,
    steps: Steps = in_thread,
) -> tuple[list[list[int]], int]:
    """Each point's components (posterior > threshold; else its most probable one) and k."""
    start = time.perf_counter()
    with _one_thread():
        k = bic_components(points, max_clusters, seeds["gmm_bic"], log, steps)
        probs = _fit_gmm(points, k, seeds["gmm"], log).predict_proba(points)
    labels = []
    for row in probs:
        above = np.flatnonzero(row > threshold).tolist()
        if not above:
            above = [int(np.argmax(row))]
            log.fallback_assignments += 1
        labels.append(above)
    log.gmm_s += time.perf_counter() - start
    return labels, k


def _reduce_and_label(
    vectors: np.ndarray,
    n_components: int,
    n_neighbors: int,
    settings: ClusterSettings,
    seed: int,
    path: str,
    log: ClusterLog,
    reduce: Reducer,
    steps: Steps = in_thread,
) -> tuple[list[list[int]], int]:
    seeds = {step: step_seed(seed, path, step) for step in ("umap", "gmm_bic", "gmm")}
    log.seeds[path] = seeds
    start = time.perf_counter()
    reduced = steps(reduce, [(vectors, n_components, n_neighbors, settings.metric, seeds["umap"])])
    log.umap_calls += 1
    log.umap_s += time.perf_counter() - start
    return gmm_soft_labels(reduced[0], settings.threshold, settings.max_clusters, seeds, log, steps)


def local_labels(
    vectors: np.ndarray,
    n_neighbors: int,
    settings: ClusterSettings,
    seed: int,
    path: str,
    reduce: Reducer,
) -> tuple[list[list[int]], int, ClusterLog]:
    """The local step for one global cluster's members (a unit of work: its own log, own seeds)."""
    log = ClusterLog()
    labels, k = _reduce_and_label(
        vectors, settings.reduction_dimension, n_neighbors, settings, seed, path, log, reduce
    )
    return labels, k, log


def too_small(n: int, settings: ClusterSettings) -> bool:
    """Too few nodes for UMAP (fewer than 2 neighbours or no dimension left): one cluster, no fit."""
    return (
        min(settings.reduction_dimension, n - 2) < 1 or (int(math.sqrt(n - 1)) if n > 1 else 0) < 2
    )


def soft_clusters(
    vectors: np.ndarray,
    settings: ClusterSettings,
    seed: int,
    path: str,
    log: ClusterLog,
    reduce: Reducer = umap_reduce,
    steps: Steps = in_thread,
) -> list[list[int]]:
    """One pass of global then local clustering; clusters as lists of row indices, in label order.

    ``steps`` runs the global reduction, the global BIC sweep's fits and then the local steps of
    all global clusters at once (each with seeds derived from its own path, so where and in which
    order they run changes nothing); their logs are added in global-cluster order."""
    n, dim = len(vectors), settings.reduction_dimension
    n_components, n_neighbors = min(dim, n - 2), int(math.sqrt(n - 1)) if n > 1 else 0
    if too_small(n, settings):
        if n > 1:
            log.too_small += 1
        return [list(range(n))] if n else []
    global_labels, k_global = _reduce_and_label(
        vectors, n_components, n_neighbors, settings, seed, f"{path}/global", log, reduce, steps
    )
    groups = [[i for i, labels in enumerate(global_labels) if g in labels] for g in range(k_global)]
    split = [g for g, members in enumerate(groups) if len(members) > dim + 1]
    calls = [
        (
            vectors[groups[g]],
            min(settings.local_n_neighbors, len(groups[g]) - 1),
            settings,
            seed,
            f"{path}/local{g}",
            reduce,
        )
        for g in split
    ]
    locals_of = dict(zip(split, steps(local_labels, calls), strict=True))
    clusters: list[list[int]] = []
    for g, members in enumerate(groups):
        if g not in locals_of:
            if members:
                clusters.append(members)
            continue
        labels_of, k_local, local_log = locals_of[g]
        log.absorb(local_log)
        for j in range(k_local):
            local = [members[i] for i, labels in enumerate(labels_of) if j in labels]
            if local:
                clusters.append(local)
    return clusters


def raptor_clusters(
    vectors: np.ndarray,
    tokens: Sequence[int],
    settings: ClusterSettings,
    seed: int,
    log: ClusterLog,
    path: str = "L1",
    reduce: Reducer = umap_reduce,
    retry: bool = False,
    steps: Steps = in_thread,
) -> list[list[int]]:
    """RAPTOR's clusters of one layer: soft global/local clusters, re-clustered over the token limit.

    A cluster over the limit is clustered again at ``{path}/r{i}`` (its own derived seeds). When it
    is the whole input, that pass is a retry (``retry=True``): if the retry returns it whole again
    (or it is too small for UMAP) it is kept as it is and recorded as unsplittable.

    Returns clusters as lists of row indices (ascending), duplicates removed, in the order the
    public code produces them (global-cluster major, re-clustered parts in place).
    """
    out: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    tried: set[tuple[int, ...]] = set()
    for i, members in enumerate(soft_clusters(vectors, settings, seed, path, log, reduce, steps)):
        if tuple(members) in tried:  # soft membership can give the same cluster twice
            log.duplicate_clusters += 1
            continue
        tried.add(tuple(members))
        total = int(sum(tokens[m] for m in members))
        if len(members) > 1 and total > settings.max_length_in_cluster:
            whole = len(members) == len(vectors)
            if whole and (retry or too_small(len(members), settings)):
                log.unsplittable.append({"nodes": len(members), "tokens": total})
                parts = [members]
            else:
                log.reclustered += 1
                log.whole_retries += whole
                sub = raptor_clusters(
                    vectors[members],
                    [tokens[m] for m in members],
                    settings,
                    seed,
                    log,
                    f"{path}/r{i}",
                    reduce,
                    retry=whole,
                    steps=steps,
                )
                parts = [[members[j] for j in s] for s in sub]
        else:
            parts = [members]
        for part in parts:
            key = tuple(part)
            if key in seen:
                log.duplicate_clusters += 1
                continue
            seen.add(key)
            out.append(part)
    return out


def cluster_layer(
    vectors: np.ndarray,
    tokens: Sequence[int],
    settings: ClusterSettings,
    seed: int,
    path: str,
    reduce: Reducer = umap_reduce,
    steps: Steps = in_thread,
) -> tuple[list[list[int]], ClusterLog]:
    """``raptor_clusters`` of one layer with a fresh log, returned with it. Either the whole call is
    one unit of work for the run's CPU pool (plain arrays and settings in, lists and a dataclass
    out), or, called in the episode's thread with ``steps=run_cpu_many``, it spreads its own steps
    over the pool (the global reduction, the BIC sweep's fits, the local clusterings): the same
    clusters and counts either way."""
    log = ClusterLog()
    clusters = raptor_clusters(
        vectors, tokens, settings, seed, log, path=path, reduce=reduce, steps=steps
    )
    return clusters, log
