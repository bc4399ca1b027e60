"""RAPTOR build benchmark with stub backends (no model, no network).

    memharness bench raptor        (or `make bench`)

Reports, each measured in one run:
- a build over 10,000 leaves with a stub LLM of fixed latency: the time spent clustering (UMAP +
  mixtures, outside any LLM call), LLM calls per layer, and each layer's summary batch wall time
  over one LLM latency (target <= 1.5: a layer's summaries go out as one concurrent batch and the
  stub gets an in-flight slot for each);
- LLM calls to build the bundled sample (``data_prep.sample``) with the stub LLM, and an
  extrapolation to MultiHop-RAG beside MemTree Table A.2's figure for RAPTOR (3,753 calls).

The leaves come from 40 planted topics (stub embeddings: a topic centre plus seeded noise), so the
calls per leaf of the synthetic build are those of a corpus with that structure; the extrapolation
says so. UMAP's first call compiles numba code (tens of seconds), counted in the first layer's
clustering time.
"""

from __future__ import annotations

import collections
import hashlib
import re
import time
from typing import Any

import numpy as np
from memharness.memsys.raptor.memory import Raptor
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.testing.doubles import ScriptedChat, TopicEmbedder, WordTokenizer
from memharness.memsys.types import Unit, content_id

DIM, TOPICS = 384, 40
TAG = re.compile(
    r" c(\d+)\b"
)  # "about c12", "summary of c12"; a literal-led pattern: 3 us a prompt,
# not the 100 us of r"\bc(\d+)\b", which ran under the GIL inside each of a batch's 1,521 stub calls
MULTIHOP_ARTICLES, MULTIHOP_TOKENS_PER_ARTICLE = 609, 2046  # CAM App. C, Table 7 ("2046*609")
MEMTREE_TABLE_A2_RAPTOR_CALLS = 3753


def tagged_summary(request: Any) -> str:
    """An 80-word summary tagged with the prompt's commonest topic."""
    prompt = request.messages[-1][1]
    tags = collections.Counter(TAG.findall(prompt)).most_common(1)
    digest = hashlib.md5(prompt.encode()).hexdigest()
    return f"summary of c{tags[0][0] if tags else 0} " + " ".join(
        digest[i % 32] * 3 for i in range(78)
    )


def StubChat(latency_s: float) -> ScriptedChat:
    """Tagged summaries after ``latency_s``."""
    return ScriptedChat(reply=tagged_summary, latency_s=latency_s, model_id="stub-chat", log=False)


def StubEmbed() -> TopicEmbedder:
    """The centre of the topic named in the text (``cN``) plus seeded noise; hashed words otherwise."""
    return TopicEmbedder(TOPICS, DIM, spread=1.2, model_id="stub-embed")


def synthetic_units(n: int, words: int = 90) -> list[Unit]:
    """``n`` units of ``words`` words, each about one of the planted topics."""
    rng = np.random.default_rng(1)
    topics = rng.integers(TOPICS, size=n)
    return [
        Unit(
            id=content_id("bench-raptor", i, prefix="u-"),
            text=f"unit {i} about c{t} "
            + " ".join(f"w{x}" for x in rng.integers(5000, size=words - 4)),
            source_id=f"doc{i // 50}",
            position=i,
        )
        for i, t in enumerate(topics)
    ]


def build_at(leaves: int = 10_000, latency_s: float = 1.0, in_flight: int = 4096) -> dict[str, Any]:
    """Build RAPTOR over ``leaves`` synthetic leaves with a stub LLM of fixed latency."""
    llm = LLM(StubChat(latency_s), max_in_flight=in_flight, progress=False)
    memory = Raptor(
        llm=llm,
        embedder=Embedder(StubEmbed()),
        tokenizer=WordTokenizer(),
        chunks={"chunker": "units"},
        summaries={"prompt": "Summarise:\n{context}"},
        seed=0,
    )
    memory.insert(synthetic_units(leaves))
    start = time.perf_counter()
    memory.ensure_built()
    wall = time.perf_counter() - start
    llm.close()
    build = memory.builds[-1]
    layers = [
        {
            "layer": r["layer"],
            "nodes_in": r["nodes_in"],
            "llm_calls": r["llm_calls"],
            "clustering_s": r["clustering_s"],
            "summarize_s": r["summarize_s"],
            "summarize_over_latency": r["summarize_s"] / latency_s,
            "wall_s": r["wall_s"],
            "reclustered": r["clustering"]["reclustered"],
            "umap_calls": r["clustering"]["umap_calls"],
        }
        for r in build["layers"]
    ]
    return {
        "leaves": build["leaves"],
        "stub_latency_s": latency_s,
        "in_flight": in_flight,
        "build_s": wall,
        "clustering_s": build["clustering_s"],
        "llm_calls": build["llm_calls"],
        "llm_calls_per_leaf": build["llm_calls"] / build["leaves"],
        "layers": layers,
        "stop": build["stop"],
    }


def sample_calls() -> dict[str, Any]:
    """LLM calls to build every episode of the bundled sample (stub LLM, real cl100k tokenizer)."""
    from memharness.data_prep.sample import load

    tokenizer = get_tokenizer()
    llm = LLM(StubChat(0.0), max_in_flight=64, progress=False)
    per_episode, leaves, tokens = {}, 0, 0
    for episode in load().episodes:
        memory = Raptor(
            llm=llm,
            embedder=Embedder(StubEmbed()),
            tokenizer=tokenizer,
            summaries={"prompt": "Summarise:\n{context}"},
            seed=0,
        )
        memory.insert(episode.units)
        memory.ensure_built()
        build = memory.builds[-1]
        per_episode[episode.id] = {"leaves": build["leaves"], "llm_calls": build["llm_calls"]}
        leaves += build["leaves"]
        tokens += sum(memory.store.tokens(v, tokenizer) for v in memory.store.leaves())
    llm.close()
    return {
        "episodes": per_episode,
        "llm_calls": sum(e["llm_calls"] for e in per_episode.values()),
        "leaves": leaves,
        "tokens_per_leaf": tokens / leaves,
    }


def extrapolate(sample: dict[str, Any], synthetic: dict[str, Any]) -> dict[str, Any]:
    """LLM calls to build MultiHop-RAG: its leaves (609 articles x 2,046 tokens over the tokens per
    leaf, between the sample's and a full 100) times the synthetic build's calls per leaf."""
    corpus_tokens = MULTIHOP_ARTICLES * MULTIHOP_TOKENS_PER_ARTICLE
    leaves_low, leaves_high = corpus_tokens / 100, corpus_tokens / sample["tokens_per_leaf"]
    rate = synthetic["llm_calls_per_leaf"]
    return {
        "corpus_tokens": corpus_tokens,
        "leaves_range": [round(leaves_low), round(leaves_high)],
        "llm_calls_per_leaf": rate,
        "llm_calls_range": [round(leaves_low * rate), round(leaves_high * rate)],
        "memtree_table_a2": MEMTREE_TABLE_A2_RAPTOR_CALLS,
        "table_a2_calls_per_leaf_range": [
            MEMTREE_TABLE_A2_RAPTOR_CALLS / leaves_high,
            MEMTREE_TABLE_A2_RAPTOR_CALLS / leaves_low,
        ],
    }


def main(leaves: int = 10_000) -> dict[str, Any]:
    """Run the RAPTOR benchmarks, print a summary and return the figures."""
    synthetic = build_at(leaves)
    sample = sample_calls()
    multihop = extrapolate(sample, synthetic)
    print(
        f"RAPTOR build at {synthetic['leaves']} leaves (stub LLM {synthetic['stub_latency_s']:.1f} s, "
        f"{synthetic['in_flight']} in flight): {synthetic['build_s']:.1f} s, of it clustering outside LLM calls "
        f"{synthetic['clustering_s']:.1f} s; {synthetic['llm_calls']} LLM calls "
        f"({synthetic['llm_calls_per_leaf']:.3f} per leaf); stop: {synthetic['stop']}"
    )
    for r in synthetic["layers"]:
        flag = "" if r["summarize_over_latency"] <= 1.5 else "  MISS"
        print(
            f"  layer {r['layer']}: {r['nodes_in']} nodes in, {r['llm_calls']} LLM calls; clustering "
            f"{r['clustering_s']:.1f} s ({r['umap_calls']} UMAP runs, {r['reclustered']} re-clustered); "
            f"summary batch {r['summarize_s']:.2f} s = {r['summarize_over_latency']:.2f} x one LLM latency "
            f"(target <= 1.5){flag}; layer wall {r['wall_s']:.1f} s"
        )
    per_episode = ", ".join(
        f"{k}: {v['llm_calls']}/{v['leaves']}" for k, v in sample["episodes"].items()
    )
    print(
        f"RAPTOR LLM calls to build the sample (stub LLM): {sample['llm_calls']} over {sample['leaves']} leaves "
        f"({per_episode}); "
        f"{sample['tokens_per_leaf']:.0f} tokens per leaf"
    )
    lo, hi = multihop["llm_calls_range"]
    print(
        f"  extrapolated to MultiHop-RAG ({MULTIHOP_ARTICLES} articles x {MULTIHOP_TOKENS_PER_ARTICLE} tokens = "
        f"{multihop['leaves_range'][0]}-{multihop['leaves_range'][1]} leaves at {multihop['llm_calls_per_leaf']:.3f} "
        f"calls per leaf, the synthetic build's rate): {lo}-{hi} LLM calls; MemTree Table A.2: "
        f"{MEMTREE_TABLE_A2_RAPTOR_CALLS} (= {multihop['table_a2_calls_per_leaf_range'][0]:.3f}-"
        f"{multihop['table_a2_calls_per_leaf_range'][1]:.3f} per leaf). The rate depends on the corpus's "
        f"cluster structure (40 planted topics here); the sample itself is too small to build more than "
        f"one layer"
    )
    return {
        "raptor_build": synthetic,
        "raptor_sample": sample,
        "raptor_multihop_extrapolation": multihop,
    }


if __name__ == "__main__":
    main()
