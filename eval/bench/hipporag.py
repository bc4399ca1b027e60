"""HippoRAG cost and speed benchmark with stub backends (no model, no network).

    python -m bench hipporag        (or `make bench`)

Reports:
(a) LLM calls to build the bundled sample with a stub LLM whose NER and OpenIE replies always parse
    (capitalised words are entities, neighbours are related): exactly 2 per passage (NER, OpenIE),
    the extraction failure rate (0 here by construction; a real model's is in memory_stats.json), and
    the extrapolation to MultiHop-RAG at CAM Table 2's 512-token passages beside GraphRAG's count
    (MemTree Table A.2: 3,858 calls).
(b) v1 retrieval time per query (PPR on igraph plus passage scoring; query NER and embeddings
    excluded) on a synthetic 10,000-phrase graph (20,000 random triples over 2,500 passages).
Wall-clock figures on a shared machine are provisional.
"""

from __future__ import annotations

import json
import re
import time
from importlib.resources import files
from typing import Any

import numpy as np
from memharness.data_prep.sample import load as load_sample
from memharness.eval.bench.graphrag import MEMTREE_TABLE_A2_GRAPHRAG, multihop_chunks
from memharness.memsys.hipporag import HippoRAG
from memharness.memsys.hipporag.extract import PassageTriples
from memharness.memsys.hipporag.graph import collect
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
    return {k: str(v) for k, v in cfg.items() if str(k).endswith("_prompt")}


def sample_build_calls() -> dict[str, Any]:
    """Build every sample episode with the stub; calls per passage and the failure rate."""
    calls, passages, unparsed, phrases = 0, 0, 0, 0
    for episode in load_sample().episodes:
        memory = HippoRAG(
            llm=ScriptedLLM(stub_reply),
            embedder=SeededEmbedder(64),
            tokenizer=get_tokenizer(),
            **prompts(),
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


def ppr_latency(
    phrases: int = 10_000,
    passages: int = 2_500,
    per_passage: int = 8,
    implementation: str = "prpack",
) -> dict:
    """v1 ranking time per query on a random phrase graph (three seeds per query)."""
    rng = np.random.default_rng(0)
    records = [
        PassageTriples(
            f"d{d}",
            triples=[
                (f"p{rng.integers(phrases)}", "r", f"p{rng.integers(phrases)}")
                for _ in range(per_passage)
            ],
        )
        for d in range(passages)
    ]
    graph = collect(records, passage_nodes=False)
    vectors = rng.standard_normal((len(graph.phrases), 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    start = time.perf_counter()
    graph.igraph()
    graph.phrase_ids()
    index_s = time.perf_counter() - start
    times = []
    for _ in range(20):
        seeds = vectors[rng.integers(len(graph.phrases), size=3)]
        start = time.perf_counter()
        rank_v1(graph, vectors, ["a", "b", "c"], seeds, 0.5, implementation=implementation)
        times.append(1000 * (time.perf_counter() - start))
    return {
        "implementation": implementation,
        "phrase_nodes": len(graph.phrases),
        "edges": len(graph.edges),
        "index_s": index_s,
        "ms_p50": float(np.percentile(times, 50)),
        "ms_p95": float(np.percentile(times, 95)),
    }


def main() -> dict[str, Any]:
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
    latency = {name: ppr_latency(implementation=name) for name in ("prpack", "arpack")}
    for run in latency.values():
        print(
            f"v1 retrieval (igraph {run['implementation']} PPR + passage scores) at "
            f"{run['phrase_nodes']} phrase nodes / {run['edges']} edges: p50 {run['ms_p50']:.1f} ms, "
            f"p95 {run['ms_p95']:.1f} ms per query (index {run['index_s']:.2f} s once; query NER and "
            "embeddings excluded)"
        )
    return {"hipporag_build_calls": {"sample": sample, "multihop": multihop}, "ppr": latency}
