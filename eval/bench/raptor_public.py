"""RAPTOR's clustering here (``cluster_layer``) vs the public code's on the same chunks and vectors.

    RAPTOR_SRC=/tmp/h46c/cluster_utils.py memharness bench raptor_public

The public code (``parthsarthi03/raptor``, ``raptor/cluster_utils.py``) is not a dependency: the
bench loads the file named by ``RAPTOR_SRC`` (e.g. ``git -C <mirror> show
HEAD:raptor/cluster_utils.py > /tmp/h46c/cluster_utils.py``) and prints "not measured: RAPTOR_SRC
unset" without it. To import it, three things it names but its clustering does not compute with
are stood in for here: its package's ``Node`` and ``get_embeddings`` (a node holding text and
vectors), and ``tiktoken`` (its default tokenizer is built at import and would fetch a BPE file;
the stand-in counts each chunk at the bench's 100 tokens, the count our side is given).

Input: one LongMemEval-S-sized haystack (1,121 chunks of seeded topic vectors, as in
``raptor_pool``). Timed (ours best of ``repeats``, the public code best of ``tries`` runs that
finish):
- ``ours_thread_s``: ``cluster_layer`` in one thread (``run.cpu_workers=1``);
- ``ours_pool_s``: ``cluster_layer`` spreading its steps over a pool of the machine's cores;
- ``public_s``: ``RAPTOR_Clustering.perform_clustering`` as published (its UMAP unseeded, so
  numba runs it on every core; BLAS as the machine sets it). Its UMAP output is float32 and a
  mixture fitted on it can fail ("ill-defined empirical covariance"); such runs are counted in
  ``public_runs_failed`` with the error printed, not timed (ours hands the mixtures float64);
- ``public_float64_s``: the same with only that changed (its UMAP output cast to float64), so
  that a time exists when every published run fails.

Same clusters: the public code fixes the mixtures' seeds (224 for the BIC fits, 0 for the final
fit) and leaves UMAP unseeded, so as published it cannot give our clusters. The bench runs it once
more with its ``umap.UMAP`` and ``GaussianMixture`` names pointed at seeded versions that take, call
by call, the seeds our run recorded for that step (``ClusterLog.seeds``, in call order: global,
then each local step), BLAS on one thread as ours. Its clusters (node index lists) are then
compared with ours as sets (``same_clusters``), with the cluster counts and sizes of both.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
from memharness.eval.bench import print_figures
from memharness.eval.bench.raptor_pool import TOKENS, cluster_haystack, haystack_vectors, warm_up
from memharness.memsys.raptor.clustering import umap_reduce
from memharness.memsys.services.cpu import cpu_pool, machine_cores

TARGETS = {
    "public_over_ours_pool": ">= 1.0",
    "public_float64_over_ours_pool": ">= 1.0",
    "same_clusters": "== 1",
}
MODEL = "bench"  # the embedding model's name the public Node keys its vectors by


class _Tokens:
    """tiktoken's encoding, standing in: a chunk's text is its index, its count is ``TOKENS``."""

    def encode(self, text: str) -> list[int]:
        return [0] * TOKENS


class _Node:
    def __init__(self, text: str, index: int, children: set[int], embeddings: dict) -> None:
        self.text, self.index, self.children, self.embeddings = text, index, children, embeddings


def load_public(path: str) -> types.ModuleType:
    """The public ``cluster_utils.py`` as a module, its non-clustering imports stood in for."""
    package = types.ModuleType("raptor_public")
    package.__path__ = []
    stubs = {
        "raptor_public": package,
        "raptor_public.tree_structures": types.SimpleNamespace(Node=_Node),
        "raptor_public.utils": types.SimpleNamespace(get_embeddings=None),
        "tiktoken": types.SimpleNamespace(get_encoding=lambda name: _Tokens()),
    }
    saved = {name: sys.modules.get(name) for name in stubs}
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level  # it calls logging.basicConfig(INFO)
    sys.modules.update(stubs)  # type: ignore[arg-type]
    try:
        spec = importlib.util.spec_from_file_location("raptor_public.cluster_utils", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
        root.handlers[:] = handlers
        root.setLevel(level)
    return module


def public_clusters(module: types.ModuleType, vectors: np.ndarray) -> list[list[int]]:
    """The public clustering of ``vectors`` (one node per row) as lists of row indices."""
    nodes = [_Node(str(i), i, set(), {MODEL: v}) for i, v in enumerate(vectors)]
    out = module.RAPTOR_Clustering.perform_clustering(nodes, MODEL)
    return [sorted(node.index for node in cluster) for cluster in out]


@contextlib.contextmanager
def float64_reductions(module: types.ModuleType) -> Iterator[None]:
    """The public code as published, but its (unseeded) UMAP output cast to float64 before the
    mixtures see it, as ours does: the one change that lets it finish where float32 fails."""
    import umap

    class Float64UMAP:
        def __init__(self, **kwargs: Any) -> None:
            self.inner = umap.UMAP(**kwargs)

        def fit_transform(self, x: np.ndarray) -> np.ndarray:
            return np.asarray(self.inner.fit_transform(x), dtype=np.float64)

    saved = module.umap
    module.umap = types.SimpleNamespace(UMAP=Float64UMAP)
    try:
        yield
    finally:
        module.umap = saved


@contextlib.contextmanager
def seeded(module: types.ModuleType, seeds: dict[str, dict[str, int]]) -> Iterator[None]:
    """Point the public module's UMAP and mixtures at our recorded seeds, call by call (BLAS on
    one thread, as our mixtures run)."""
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits

    order = iter(seeds.values())
    current: dict[str, int] = {}

    class SeededUMAP:
        def __init__(self, n_neighbors: int, n_components: int, metric: str) -> None:
            current.clear()
            current.update(next(order))  # StopIteration: more UMAP calls than ours made
            self.args = (n_components, n_neighbors, metric, current["umap"])

        def fit_transform(self, x: np.ndarray) -> np.ndarray:
            return umap_reduce(x, *self.args)

    def mixture(n_components: int, random_state: int) -> Any:
        seed = current["gmm_bic"] if random_state == 224 else current["gmm"]
        return GaussianMixture(n_components=n_components, random_state=seed)

    saved = module.umap, module.GaussianMixture
    module.umap, module.GaussianMixture = types.SimpleNamespace(UMAP=SeededUMAP), mixture
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        module.umap, module.GaussianMixture = saved


def _best(repeats: int, fn: Any) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def _public_as_published(module: types.ModuleType, vectors: np.ndarray, tries: int) -> dict:
    """Time the public code as published; a run that raises is counted with its error, not timed
    (its unseeded UMAP returns float32, on which a mixture can fail to fit)."""
    times, errors, clusters = [], [], None
    for _ in range(tries):
        start = time.perf_counter()
        try:
            clusters = public_clusters(module, vectors)
        except Exception as exc:  # noqa: BLE001  (the public code's failure is the figure)
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            continue
        times.append(time.perf_counter() - start)
    return {"times": times, "errors": errors, "clusters": clusters}


def _sizes(clusters: list[list[int]]) -> str:
    sizes = sorted(len(c) for c in clusters)
    return f"n={len(sizes)} min={sizes[0]} median={sizes[len(sizes) // 2]} max={sizes[-1]}"


def main(repeats: int = 1, tries: int = 3, seed: int = 0) -> dict[str, Any]:
    """Time both clusterings of one haystack, compare their clusters; print and return figures."""
    src = os.environ.get("RAPTOR_SRC")
    if not src:
        print("not measured: RAPTOR_SRC unset (the path of the public raptor/cluster_utils.py)")
        return {"measured": 0}
    if not os.path.isfile(src):
        raise SystemExit(f"RAPTOR_SRC={src}: no such file")
    module = load_public(src)
    vectors, cores = haystack_vectors(seed), machine_cores()
    load_before = os.getloadavg()[0]
    warm_up(1)  # numba compiles, untimed
    thread_s, (ours, log) = _best(repeats, lambda: cluster_haystack(vectors, seed, pooled=False))
    with cpu_pool(cores):
        warm_up(cores)  # every worker compiles, untimed
        pool_s, (ours_pooled, _) = _best(
            repeats, lambda: cluster_haystack(vectors, seed, pooled=True)
        )
    _public_as_published(module, haystack_vectors(1000, 60), 1)  # its numba compiles, untimed
    public = _public_as_published(module, vectors, tries)
    with float64_reductions(module):
        public64 = _public_as_published(module, vectors, tries)
    with seeded(module, log.seeds):
        public_seeded = public_clusters(module, vectors)
    public_s = min(public["times"], default=float("nan"))
    public64_s = min(public64["times"], default=float("nan"))
    figures = {
        "cores": cores,
        "chunks": len(vectors),
        "ours_thread_s": thread_s,
        "ours_pool_s": pool_s,
        "public_s": public_s,
        "public_runs_failed": f"{len(public['errors'])} of {tries}",
        "public_over_ours_thread": public_s / thread_s,
        "public_over_ours_pool": public_s / pool_s,
        "public_float64_s": public64_s,
        "public_float64_runs_failed": f"{len(public64['errors'])} of {tries}",
        "public_float64_over_ours_thread": public64_s / thread_s,
        "public_float64_over_ours_pool": public64_s / pool_s,
        "ours_clusters": _sizes(ours),
        "public_clusters": _sizes(public["clusters"]) if public["clusters"] else "none",
        "public_float64_clusters": _sizes(public64["clusters"]) if public64["clusters"] else "none",
        "public_seeded_clusters": _sizes(public_seeded),
        "public_duplicate_clusters": len(public_seeded) - len({tuple(c) for c in public_seeded}),
        "same_clusters": int(
            ours == ours_pooled and {tuple(c) for c in ours} == {tuple(c) for c in public_seeded}
        ),
        "load_avg_1m_before": load_before,
        "load_avg_1m_after": os.getloadavg()[0],
    }
    for error in dict.fromkeys(public["errors"] + public64["errors"]):
        print(f"  public code raised: {error}")
    print(
        f"RAPTOR clustering of one LongMemEval-S-sized haystack ({len(vectors)} chunks): ours "
        f"(cluster_layer, best of {repeats}) vs the public code ({src}, best of the runs that "
        f"finished of {tries})"
    )
    print_figures(figures, TARGETS)
    return figures


if __name__ == "__main__":
    main()
