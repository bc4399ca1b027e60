"""Personalised PageRank engines for the phrase graph (``ppr.engine`` in conf/memory/hipporag.yaml).

- ``power`` (default): a sparse power iteration. The weighted adjacency matrix is built once per
  graph (CSR, ``Transition``) and reused by every query; each step is one sparse product.
- ``prpack`` / ``arpack``: igraph's ``personalized_pagerank`` (HippoRAG's code uses prpack). python-
  igraph hands the whole graph to the solver on every call, which is what makes it slow per query.

All three compute the same vector: ``p = (1 - d) r + d (Pᵀ p + m r)`` with ``P`` the row-normalised
weights of the undirected graph, ``r`` the reset vector scaled to sum 1, ``d`` the probability of
following an edge and ``m`` the mass on nodes without edges, which restarts by ``r`` (igraph's
rule for dangling nodes; checked against igraph in tests/unit/memsys/test_hipporag_ppr.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

import numpy as np
import scipy.sparse as sp
from memharness.memsys.settings import Range

ENGINES = ("power", "prpack", "arpack")


class PPRSettings(TypedDict, total=False):
    """``memory.ppr`` (documented in conf/memory/hipporag.yaml)."""

    engine: Literal["power", "prpack", "arpack"]
    tol: Annotated[float, Range(0, lo_open=True)]
    max_iter: Annotated[int, Range(1)]


DEFAULTS: PPRSettings = {"engine": "power", "tol": 1e-10, "max_iter": 1000}


def ppr_settings(given: PPRSettings | dict | None) -> PPRSettings:
    """The defaults overlaid with ``given``; an unknown key is one clear error."""
    given = dict(given or {})
    unknown = set(given) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"memory.ppr: unknown key(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    out = {**DEFAULTS, **given}
    if out["engine"] not in ENGINES:
        raise ValueError(f"memory.ppr.engine: {out['engine']!r} is not one of {ENGINES}")
    return PPRSettings(engine=out["engine"], tol=float(out["tol"]), max_iter=int(out["max_iter"]))


@dataclass
class Result:
    """Scores (node order) and how the iteration went (``iterations`` 0 for igraph's solvers)."""

    scores: np.ndarray
    iterations: int = 0
    converged: bool = True


class Transition:
    """The symmetric weight matrix and inverse weighted degrees of one graph, built once."""

    def __init__(self, n: int, edges: dict[tuple[int, int], float]) -> None:
        self.n = n
        if edges:
            pairs = np.array(list(edges), dtype=np.int64)
            w = np.fromiter(edges.values(), dtype=float, count=len(edges))
            rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
            cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
            self.weights = sp.csr_matrix((np.concatenate([w, w]), (rows, cols)), shape=(n, n))
        else:
            self.weights = sp.csr_matrix((n, n))
        degree = np.asarray(self.weights.sum(axis=1)).ravel()
        self.dangling = np.flatnonzero(degree <= 0)
        inv_degree = np.divide(1.0, degree, out=np.zeros(n), where=degree > 0)
        # Pᵀ = W D⁻¹ as W is symmetric: one sparse product per step, nothing rebuilt per query
        self.walk = sp.csr_matrix(self.weights @ sp.diags(inv_degree))

    def power(self, reset: np.ndarray, damping: float, tol: float, max_iter: int) -> Result:
        """Iterate from ``r`` until the L1 change of a step is below ``tol`` or ``max_iter`` steps."""
        r = np.asarray(reset, dtype=float)
        r = r / r.sum()
        p = r.copy()
        for step in range(1, max_iter + 1):
            spread = self.walk @ p
            nxt = (1.0 - damping) * r + damping * (spread + p[self.dangling].sum() * r)
            change = float(np.abs(nxt - p).sum())
            p = nxt
            if change < tol:
                return Result(p, step, True)
        return Result(p, max_iter, False)
