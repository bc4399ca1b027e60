"""HippoRAG's PPR engines (memsys/hipporag/ppr.py): the sparse power iteration gives igraph's
scores (dangling nodes restart by the reset vector, as igraph's do), its matrix is built once per
graph and reused by every query, and a run stopped at ``max_iter`` is counted."""

from __future__ import annotations

import numpy as np
import pytest
from memharness.eval.bench.hipporag import random_graph
from memharness.memsys.hipporag import ppr as ppr_module
from memharness.memsys.hipporag.graph import PhraseGraph
from memharness.memsys.hipporag.ppr import ppr_settings

from tests.unit.memsys.test_hipporag import built, replier


def three_nodes() -> PhraseGraph:
    """a - b (weight 1) and c on its own (a dangling node)."""
    g = PhraseGraph(phrases=["a", "b", "c"], passages=[], facts=[], passage_facts=[])
    g.edges[(0, 1)], g.kinds[(0, 1)] = 1.0, "triple"
    return g


@pytest.mark.parametrize("engine", ["power", "prpack", "arpack"])
def test_a_dangling_node_restarts_by_the_reset_vector(engine):
    """Reset (1/2, 0, 1/2), d = 1/2: p_c = 1/4 + p_c/4 -> 1/3; p_a = 1/4 + p_b/2 + p_c/4,
    p_b = p_a/2 -> p_a = 4/9, p_b = 2/9 (a uniform restart from c would give other values)."""
    scores = three_nodes().ppr(np.array([1.0, 0.0, 1.0]), 0.5, {"engine": engine})
    assert scores.tolist() == pytest.approx([4 / 9, 2 / 9, 1 / 3], abs=1e-9)


def test_the_power_iteration_matches_prpack_on_a_random_weighted_graph():
    graph, _ = random_graph(400, per_passage=6, seed=3)
    rng = np.random.default_rng(4)
    for (a, b), w in list(graph.edges.items())[::3]:  # some weights other than triple counts
        graph.edges[(a, b)] = w + float(rng.uniform(0.8, 1.0))
    for damping in (0.5, 0.85):
        reset = np.zeros(graph.n_nodes)
        reset[rng.integers(graph.n_nodes, size=4)] = rng.uniform(0.1, 1.0, size=4)
        power = graph.ppr_run(reset, damping, {"engine": "power", "tol": 1e-12})
        prpack = graph.ppr(reset, damping, {"engine": "prpack"})
        assert power.converged and np.abs(power.scores - prpack).max() < 1e-9
        order = np.argsort(-prpack, kind="stable")[:20]
        assert np.array_equal(np.argsort(-power.scores, kind="stable")[:20], order)


def test_the_tolerance_bounds_the_error_and_max_iter_stops_early():
    graph = three_nodes()
    loose = graph.ppr_run(np.array([1.0, 0.0, 0.0]), 0.5, {"tol": 1e-3})
    tight = graph.ppr_run(np.array([1.0, 0.0, 0.0]), 0.5, {"tol": 1e-12})
    assert loose.iterations < tight.iterations and tight.converged
    assert (
        np.abs(tight.scores - [2 / 3, 1 / 3, 0]).max()
        < 1e-11
        < np.abs(loose.scores - tight.scores).max()
    )
    capped = graph.ppr_run(np.array([1.0, 0.0, 0.0]), 0.5, {"max_iter": 2})
    assert capped.iterations == 2 and not capped.converged


def test_the_matrix_is_built_once_per_graph_and_a_capped_run_is_counted(monkeypatch):
    builds = []
    real = ppr_module.Transition.__init__

    def counting(self, *args, **kwargs):
        builds.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ppr_module.Transition, "__init__", counting)
    mem = built(llm=replier(query_entities=["Berlin"]), ppr={"max_iter": 3})
    for _ in range(3):
        mem.search("a question", 10_000)
    search = mem.stats()["hipporag"]["search"]
    assert len(builds) == 1
    assert search["ppr_iterations"] == 9 and search["ppr_not_converged"] == 3


@pytest.mark.parametrize(
    ("given", "message"),
    [({"engine": "networkx"}, "memory.ppr.engine"), ({"tolerance": 1e-6}, "unknown key")],
)
def test_a_bad_ppr_setting_is_one_clear_error(given, message):
    with pytest.raises(ValueError, match=message):
        ppr_settings(given)


@pytest.mark.parametrize("engine", ["prpack", "arpack"])
def test_v2_passage_scores_are_the_same_with_igraph(engine):
    """v2 ranks passages by their own PageRank (passage nodes after the phrases): the engines agree."""
    question = "Where does Bob Jones work?"
    power = built(variant="v2").rank(question)
    other = built(variant="v2", ppr={"engine": engine}).rank(question)
    assert power.mode == other.mode == "ppr" and power.iterations > 0 == other.iterations
    assert power.scores.tolist() == pytest.approx(other.scores.tolist(), abs=1e-10)
