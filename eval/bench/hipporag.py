"""HippoRAG cost and speed benchmark with stub backends (no model, no network).

    python -m bench hipporag        (or `make bench`)

Reports:
(a) LLM calls to build the bundled sample with a stub LLM whose NER and OpenIE replies always parse
    (capitalised words are entities, neighbours are related): exactly 2 per passage (NER, OpenIE),
    the extraction failure rate (0 here by construction; a real model's is in memory_stats.json), and
    the extrapolation to MultiHop-RAG at CAM Table 2's 512-token passages beside GraphRAG's count
    (MemTree Table A.2: 3,858 calls).
(b) v1 retrieval time per query (PPR plus passage scoring; query NER and embeddings excluded) with
    each PPR engine (``ppr.engine``: the sparse power iteration, igraph's prpack and arpack) on
    random graphs of 1k / 10k / 50k phrases (8 random triples per passage, phrases / 4 passages),
    the target < 50 ms per query at 10k; and the power iteration's agreement with prpack (largest
    node and passage score differences, same top-10 passages). The load average is printed beside
    them: wall-clock figures on a shared machine vary.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from importlib.resources import files
from typing import Any

import numpy as np
from memharness.data_prep.sample import load as load_sample
from memharness.eval.bench import print_figures
from memharness.eval.bench.graphrag import MEMTREE_TABLE_A2_GRAPHRAG, multihop_chunks
from memharness.memsys.hipporag import HippoRAG
from memharness.memsys.hipporag.extract import PassageTriples
from memharness.memsys.hipporag.graph import PhraseGraph, collect, min_max
from memharness.memsys.hipporag.ppr import DEFAULTS, ENGINES
from memharness.memsys.hipporag.rank import rank_v1
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.testing.doubles import ScriptedLLM, SeededEmbedder
from omegaconf import OmegaConf


def stub_reply(prompt: str) -> str:
    """NER: the passage's capitalised words; OpenIE: each one related to the next."""
    text = prompt.rsplit("Paragraph:\n", 1)[-1]
    names = list(dict.fromkeys(re.findall(r"\b[A-Z][a-z]{2,}\b", text)))[:12]
    if prompt.startswith("Build an RDF"):
        return json.dumps(
            {"triples": [[a, "is near", b] for a, b in zip(names, names[1:], strict=False)]}
        )
    return json.dumps({"named_entities": names})


def prompts() -> dict[str, str]:
    """The prompts of conf/memory/hipporag.yaml."""
    cfg = OmegaConf.create(
        (files("memharness.conf") / "memory" / "hipporag.yaml").read_text(encoding="utf-8")
    )
    return {k: str(v) for k, v in cfg.prompts.items()}


def sample_build_calls() -> dict[str, Any]:
    """Build every sample episode with the stub; calls per passage and the failure rate."""
    calls, passages, unparsed, phrases = 0, 0, 0, 0
    for episode in load_sample().episodes:
        memory = HippoRAG(
            llm=ScriptedLLM(stub_reply),
            embedder=SeededEmbedder(64),
            tokenizer=get_tokenizer(),
            prompts=prompts(),
        )
        memory.insert(episode.units)
        memory.ensure_built()
        record = memory.build_record
        calls += record["llm_calls"]["total"]
        passages += record["passages"]
        unparsed += record["extraction"]["openie_status"]["unparsed"]
        phrases += record["graph"]["phrase_nodes"]
    return {
        "passages": passages,
        "calls": calls,
        "calls_per_passage": calls / passages,
        "extraction_failure_rate": unparsed / passages,
        "phrase_nodes": phrases,
    }


def random_graph(
    phrases: int, passages: int | None = None, per_passage: int = 8, seed: int = 0
) -> tuple[PhraseGraph, np.ndarray]:
    """A phrase graph of random triples (``per_passage`` per passage, ``phrases / 4`` passages by
    default) and unit phrase vectors for query linking."""
    rng = np.random.default_rng(seed)
    records = [
        PassageTriples(
            f"d{d}",
            triples=[
                (f"p{rng.integers(phrases)}", "r", f"p{rng.integers(phrases)}")
                for _ in range(per_passage)
            ],
        )
        for d in range(passages or max(phrases // 4, 1))
    ]
    graph = collect(records, passage_nodes=False)
    vectors = rng.standard_normal((len(graph.phrases), 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return graph, vectors


def ppr_latency(
    graph: PhraseGraph, vectors: np.ndarray, engine: str = "power", queries: int = 20
) -> dict[str, Any]:
    """v1 ranking time per query with ``engine`` (three linked entities per query); the per-graph
    index (igraph graph or sparse matrix, passage arrays) is built first and timed apart."""
    rng = np.random.default_rng(1)
    settings = {**DEFAULTS, "engine": engine}
    start = time.perf_counter()
    graph.transition() if engine == "power" else graph.igraph()
    graph.phrase_ids()
    graph.passages_per_phrase()
    index_s = time.perf_counter() - start
    times, cpu, steps = [], [], []
    for _ in range(queries):
        seeds = vectors[rng.integers(len(graph.phrases), size=3)]
        start, start_cpu = time.perf_counter(), time.process_time()
        ranking = rank_v1(graph, vectors, ["a", "b", "c"], seeds, 0.5, ppr=settings)
        times.append(1000 * (time.perf_counter() - start))
        cpu.append(1000 * (time.process_time() - start_cpu))
        steps.append(ranking.iterations)
    return {
        "engine": engine,
        "phrase_nodes": len(graph.phrases),
        "edges": len(graph.edges),
        "queries": queries,
        "index_s": index_s,
        "ms_p50": float(np.percentile(times, 50)),
        "ms_p95": float(np.percentile(times, 95)),
        "cpu_ms_p50": float(np.percentile(cpu, 50)),  # less sensitive to the machine's load
        "iterations_mean": float(np.mean(steps)),
    }


def agreement(
    graph: PhraseGraph, vectors: np.ndarray, queries: int = 10, top: int = 10
) -> dict[str, Any]:
    """The power iteration against igraph's prpack on the same queries: the largest absolute
    difference of a node's PageRank and of a passage's min-max score, and how often the top
    ``top`` passages come out the same and in the same order."""
    rng = np.random.default_rng(2)
    power, prpack = {**DEFAULTS, "engine": "power"}, {**DEFAULTS, "engine": "prpack"}
    node_diff, passage_diff, same_top = 0.0, 0.0, 0
    weights = graph.specificity()
    for _ in range(queries):
        reset = np.zeros(graph.n_nodes)
        picks = rng.integers(len(graph.phrases), size=3)
        reset[picks] = weights[picks]
        a, b = graph.ppr(reset, 0.5, power), graph.ppr(reset, 0.5, prpack)
        node_diff = max(node_diff, float(np.abs(a - b).max()))
        sa, sb = (min_max(graph.passage_sums(x[: len(graph.phrases)])) for x in (a, b))
        passage_diff = max(passage_diff, float(np.abs(sa - sb).max()))
        ta, tb = (np.argsort(-x, kind="stable")[:top] for x in (sa, sb))
        same_top += bool(np.array_equal(ta, tb))
    return {
        "queries": queries,
        "max_abs_diff_node": node_diff,
        "max_abs_diff_passage": passage_diff,
        f"same_top{top}_share": same_top / queries,
    }


PPR_TARGET_MS, PPR_TARGET_NODES = 50, 10_000  # the target: < 50 ms per query at 10k nodes
AGREEMENT_TOL = 1e-8  # a node's PageRank, power vs prpack (the solvers' own tolerance is ~1e-10)


def ppr_figures(sizes: Sequence[int] = (1_000, 10_000, 50_000), queries: int = 20) -> dict:
    """Per size: each engine's latency and the power iteration's agreement with prpack."""
    out: dict[str, Any] = {}
    for n in sizes:
        graph, vectors = random_graph(n)
        runs = {e: ppr_latency(graph, vectors, e, queries) for e in ENGINES}
        out[str(n)] = {"engines": runs, "agreement": agreement(graph, vectors, min(queries, 10))}
    return out


def print_ppr(figures: dict[str, Any]) -> None:
    """Each engine's p50 / p95 beside the target; the agreement beside its tolerance."""
    for n, fig in figures.items():
        first = next(iter(fig["engines"].values()))
        print(
            f"v1 retrieval (PPR + passage scores; query NER and embeddings excluded) on a random graph "
            f"of {first['phrase_nodes']} phrase nodes / {first['edges']} edges (nominal {n}):"
        )
        flat, targets = {}, {}
        for e, run in fig["engines"].items():
            flat[f"{e}_ms_p50"], flat[f"{e}_ms_p95"] = run["ms_p50"], run["ms_p95"]
            flat[f"{e}_cpu_ms_p50"], flat[f"{e}_index_s"] = run["cpu_ms_p50"], run["index_s"]
            if n == str(PPR_TARGET_NODES):
                targets[f"{e}_ms_p50"] = f"< {PPR_TARGET_MS}"
        flat["power_iterations_mean"] = fig["engines"]["power"]["iterations_mean"]
        flat["prpack_over_power_p50"] = (
            fig["engines"]["prpack"]["ms_p50"] / fig["engines"]["power"]["ms_p50"]
        )
        agree = fig["agreement"]
        for key in ("max_abs_diff_node", "max_abs_diff_passage"):
            flat[f"power_vs_prpack_{key}"] = agree[key]
            targets[f"power_vs_prpack_{key}"] = f"<= {AGREEMENT_TOL}"
        flat["power_vs_prpack_same_top10"] = agree["same_top10_share"]
        targets["power_vs_prpack_same_top10"] = "== 1"
        print_figures(flat, targets, 40)
    print(f"  (uptime load: {load_average()}; wall-clock figures on a shared machine vary)")


def load_average() -> str:
    """The 1/5/15-minute load averages, printed beside wall-clock figures."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(sizes: Sequence[int] = (1_000, 10_000, 50_000), queries: int = 20) -> dict[str, Any]:
    sample = sample_build_calls()
    chunks, how = multihop_chunks(512, 0)
    multihop = {
        "multihop_passages_512": chunks,
        "how": how,
        "build_calls": 2 * chunks,
        "memtree_table_a2_graphrag": MEMTREE_TABLE_A2_GRAPHRAG,
    }
    print(
        f"HippoRAG build calls on the sample (stub LLM): {sample['calls']} over {sample['passages']} "
        f"passages -> {sample['calls_per_passage']:.2f} per passage; extraction failure rate "
        f"{sample['extraction_failure_rate']:.1%} (stub replies always parse)"
    )
    print(
        f"  MultiHop-RAG at 512-token passages: {chunks} ({how}) -> {2 * chunks} build calls vs "
        f"MemTree Table A.2's GraphRAG {MEMTREE_TABLE_A2_GRAPHRAG}"
    )
    ppr = ppr_figures(sizes, queries)
    print_ppr(ppr)
    return {
        "hipporag_build_calls": {"sample": sample, "multihop": multihop},
        "ppr": ppr,
        "load_average": load_average(),
    }


if __name__ == "__main__":
    main()
