"""GraphRAG-lite cost and speed benchmark with stub backends (no model, no network).

    python -m bench graphrag        (or `make bench`)

Reports:
(a) LLM calls to build the bundled sample with a stub LLM (every extraction reply parses: capitalised
    words are entities, neighbours are related), per step and per text unit, for the default
    (dataset units, nano's summary trigger) and GraphRAG's settings (1,200/100-token chunks, summarise
    every multi-description list); extrapolated to MultiHop-RAG beside MemTree Table A.2's GraphRAG
    figure (3,858 calls). Extraction costs exactly 1 + gleanings calls per chunk (plus a Y/N check
    between gleanings when there are several); summaries and
    reports scale with the entities and communities a real model finds, so their per-chunk rate from
    the stub is a rough guide only. The MultiHop-RAG chunk count comes from corpus.json when it is under
    <data_dir>/multihop, else from the documented median article (609 articles, 7,836 characters).
(b) hierarchical Leiden on a 50,000-entity graph (Barabási-Albert, 2 edges per new node), with the
    default igraph backend and with leidenalg.
(c) global search calls per query: map batches (12,000 tokens each) + 1 reduce, on the sample and on the
    50,000-entity hierarchy for several report lengths.
(d) local search context build time per query on that 50,000-entity graph (question vectors given,
    so the embedder is excluded).
Wall-clock figures on a shared machine are provisional.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
from memharness.data_prep.sample import load as load_sample
from memharness.memsys.graphrag import GraphRAG
from memharness.memsys.graphrag.communities import hierarchical_leiden
from memharness.memsys.graphrag.index import GraphIndex
from memharness.memsys.graphrag.merge import Entity, Graph, Relation
from memharness.memsys.graphrag.reports import Report
from memharness.memsys.graphrag.search_global import GlobalSearch
from memharness.memsys.graphrag.search_local import LocalSearch
from memharness.memsys.graphrag.to_store import add_communities, add_entities
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import ScriptedChat, SeededEmbedder

MEMTREE_TABLE_A2_GRAPHRAG = 3858
MULTIHOP_ARTICLES, MULTIHOP_MEDIAN_CHARS = 609, 7836
DIM = 384


def step_reply(request: ChatRequest) -> str:
    """A well-formed reply to every GraphRAG step."""
    first, last = request.messages[0][1], request.messages[-1][1]
    if request.choices:
        return request.choices[-1]
    if "-Your data-" in first and len(request.messages) == 1:
        text = first.rsplit("Text:\n", 1)[1]
        names = list(dict.fromkeys(w.upper() for w in re.findall(r"\b[A-Z][a-z]{2,}\b", text)))
        gist = " ".join(text.split()[:8])  # one description per chunk, so merges see several
        records = [f'("entity"<|>{n}<|>PERSON<|>{n} is named in: {gist})' for n in names]
        records += [
            f'("relationship"<|>{a}<|>{b}<|>{a} and {b} appear together<|>3)'
            for a, b in zip(names, names[1:], strict=False)
        ]
        return "##".join(records)
    if "missed" in last:
        return "<|COMPLETE|>"
    if "Descriptions:" in last:
        return "A merged description."
    if "Report:" in last:
        return json.dumps(
            {
                "title": "T",
                "summary": "S " * 40,
                "rating": 5,
                "rating_explanation": "r",
                "findings": [{"summary": "f", "explanation": "e " * 60}],
            }
        )
    if "---Reports---" in first:
        return json.dumps({"points": [{"description": "p [Data: Reports (0)]", "score": 50}]})
    return "answer"


def StubChat() -> ScriptedChat:
    """Answers every GraphRAG step instantly with a well-formed reply."""
    return ScriptedChat(reply=step_reply, model_id="stub-graphrag", log=False)


def StubEmbed() -> SeededEmbedder:
    return SeededEmbedder(DIM, model_id="stub-embed")


# ---------------------------------------------------------------------- (a) build calls
def sample_build_calls(**settings: Any) -> dict[str, Any]:
    """Build every sample episode with the stub LLM; sum the calls per step."""
    tok = get_tokenizer()
    totals: dict[str, int] = {}
    text_units = communities = entities = 0
    for episode in load_sample().episodes:
        llm = LLM(StubChat(), max_in_flight=8, progress=False)
        memory = GraphRAG(llm=llm, embedder=Embedder(StubEmbed()), tokenizer=tok, **settings)
        memory.insert(episode.units)
        memory.ensure_built()
        for k, v in memory.build_record["llm_calls"].items():
            totals[k] = totals.get(k, 0) + v
        text_units += memory.build_record["text_units"]
        communities += memory.build_record["communities"]["communities"]
        entities += memory.build_record["graph"]["entities"]
        llm.close()
    per_unit = {k: v / text_units for k, v in totals.items()}
    return {
        "settings": settings,
        "text_units": text_units,
        "entities": entities,
        "communities": communities,
        "calls": totals,
        "calls_per_text_unit": per_unit,
    }


def multihop_chunks(chunk_size: int = 1200, overlap: int = 100) -> tuple[int, str]:
    """Chunks of MultiHop-RAG's corpus: counted from corpus.json if present, else estimated."""
    tok = get_tokenizer()
    corpus = Path(os.environ.get("MEMHARNESS_DATA", "data")) / "multihop" / "corpus.json"
    step = chunk_size - overlap
    if corpus.is_file():
        articles = json.loads(corpus.read_text(encoding="utf-8"))
        tokens = [
            tok.count(f"{a['title']}\n{a['source']} {a['published_at']}\n{a['body']}")
            for a in articles
        ]
        return sum(
            max(1, math.ceil(max(t - overlap, 1) / step)) for t in tokens
        ), f"counted from {corpus}"
    sample_text = " ".join(u.text for e in load_sample().episodes for u in e.units)
    chars_per_token = len(sample_text) / tok.count(sample_text)
    median_tokens = MULTIHOP_MEDIAN_CHARS / chars_per_token
    per_article = max(1, math.ceil((median_tokens - overlap) / step))
    return MULTIHOP_ARTICLES * per_article, (
        f"estimated: {MULTIHOP_ARTICLES} articles x {per_article} chunks for the "
        f"median article ({median_tokens:.0f} tokens at {chars_per_token:.2f} "
        "chars/token); longer articles make this a lower bound"
    )


# ---------------------------------------------------------------------- (b)-(d) a 50,000-entity graph
def synthetic_graph(n: int = 50_000, seed: int = 0) -> tuple[Graph, list[tuple[int, int, float]]]:
    import igraph as ig

    rng = np.random.default_rng(seed)
    g = ig.Graph.Barabasi(n, 2, directed=False)
    g.simplify()
    pairs = sorted(tuple(sorted(e)) for e in g.get_edgelist())
    graph = Graph(
        entities=[
            Entity(
                name=f"E{i}",
                type="PERSON",
                descriptions=[],
                chunks=[f"t{i // 5}"],
                frequency=1,
                description=f"entity {i} " + "word " * int(rng.integers(5, 30)),
                units=(f"u{i // 5}",),
            )
            for i in range(n)
        ]
    )
    for a, b in pairs:
        graph.relations.append(
            Relation(
                source=a,
                target=b,
                descriptions=[],
                chunks=[f"t{a // 5}"],
                weight=1.0 + rng.random(),
                description=f"E{a} relates to E{b}",
                units=(f"u{a // 5}",),
            )
        )
        graph.entities[a].degree += 1
        graph.entities[b].degree += 1
    for r in graph.relations:
        r.rank = graph.entities[r.source].degree + graph.entities[r.target].degree
    return graph, [(r.source, r.target, r.weight) for r in graph.relations]


def community_detection(
    graph: Graph, edges: list, backend: str = "igraph"
) -> tuple[list, dict[str, Any]]:
    start = time.perf_counter()
    communities, info = hierarchical_leiden(
        len(graph.entities), edges, max_cluster_size=10, seed=0, use_lcc=True, backend=backend
    )
    return communities, {
        "backend": backend,
        "entities": len(graph.entities),
        "edges": len(edges),
        "seconds": time.perf_counter() - start,
        "levels": info["levels"],
        "communities": info["communities"],
        "per_level": info["per_level"],
        "unsplittable": len(info["unsplittable"]),
        "max_final_size": info["max_final_size"],
    }


def synthetic_memory(graph: Graph, communities: list, report_words: int = 150) -> GraphRAG:
    """A GraphRAG memory over the synthetic graph and hierarchy, with fixed-length report texts."""
    tok = get_tokenizer()
    memory = GraphRAG(llm=None, embedder=Embedder(StubEmbed()), tokenizer=tok)
    reports = {
        c.key: Report(
            key=c.key,
            status="parsed",
            title=f"community {c.key}",
            summary="word " * report_words,
            rating=float(c.key % 10),
        )
        for c in communities
    }
    add_entities(memory.store, memory.embedder, graph)
    add_communities(memory.store, memory.embedder, graph, communities, reports)
    from memharness.memsys.extraction.chunks import TextUnit

    n_units = len(graph.entities) // 5 + 1
    memory.text_units = {
        f"t{i}": TextUnit(
            id=f"t{i}", text=f"chunk {i} " + "text " * 250, units=(f"u{i}",), source_id="bench"
        )
        for i in range(n_units)
    }
    memory.index = GraphIndex(memory.store, memory.text_units)
    return memory


def global_calls(memory: GraphRAG, batch_tokens: int = 12000) -> dict[str, Any]:
    g = GlobalSearch(
        memory.index,
        {"map_batch_tokens": batch_tokens},
        memory.tokenizer,
        memory.prompts.map_prompt,
        memory.prompts.reduce_prompt,
        memory.prompts.reduce_mc_prompt,
    )
    batches = g.batches()
    report_tokens = [
        memory.tokenizer.count(memory.store.texts[memory.index.communities[c].node])
        for b in batches
        for c in b.communities
    ]
    return {
        "reports": len(report_tokens),
        "report_tokens_mean": float(np.mean(report_tokens)) if report_tokens else 0.0,
        "map_calls": len(batches),
        "calls_per_query": len(batches) + 1,
    }


def local_build_time(memory: GraphRAG, queries: int = 30, budget: int = 12000) -> dict[str, Any]:
    search = LocalSearch(memory.index, memory.local_search, memory.tokenizer)
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((queries, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    times, tokens = [], []
    for v in vectors:
        start = time.perf_counter()
        result = search.search(v, budget)
        times.append(1000 * (time.perf_counter() - start))
        tokens.append(sum(i.tokens for i in result.items))
    return {
        "entities": len(memory.index.entities),
        "budget_tokens": budget,
        "ms_p50": float(np.median(times)),
        "ms_p95": float(np.percentile(times, 95)),
        "context_tokens_mean": float(np.mean(tokens)),
    }


def main() -> dict[str, Any]:
    default = sample_build_calls()
    graphrag = sample_build_calls(
        chunks={"size": 1200, "overlap": 100}, summaries={"threshold_tokens": 0}
    )
    chunks, how = multihop_chunks()
    rate = graphrag["calls"]["total"] / graphrag["text_units"]
    extraction_rate = (
        graphrag["calls"]["extract"] + graphrag["calls"]["glean"] + graphrag["calls"]["loop"]
    ) / graphrag["text_units"]
    extrapolation = {
        "multihop_chunks_1200": chunks,
        "how": how,
        "extraction_calls": round(extraction_rate * chunks),
        "total_calls_at_sample_rate": round(rate * chunks),
        "memtree_table_a2_graphrag": MEMTREE_TABLE_A2_GRAPHRAG,
    }
    print(
        f"GraphRAG build calls on the sample (stub LLM), default settings: {default['calls']} over "
        f"{default['text_units']} text units -> {default['calls']['total'] / default['text_units']:.2f} calls per unit "
        f"(extraction {(default['calls']['extract'] + default['calls']['glean']) / default['text_units']:.2f})"
    )
    print(
        f"  GraphRAG settings (1200/100 chunks, summarise every multi-description list): {graphrag['calls']} over "
        f"{graphrag['text_units']} chunks -> {rate:.2f} calls per chunk (extraction {extraction_rate:.2f})"
    )
    print(
        f"  MultiHop-RAG: {chunks} chunks ({how}); extraction alone {extrapolation['extraction_calls']} calls, "
        f"all steps at the sample's rate {extrapolation['total_calls_at_sample_rate']} calls vs MemTree Table A.2's "
        f"GraphRAG {MEMTREE_TABLE_A2_GRAPHRAG}"
    )
    graph, edges = synthetic_graph()
    communities, leiden = community_detection(graph, edges)
    _, leidenalg_run = community_detection(graph, edges, backend="leidenalg")
    for run in (leiden, leidenalg_run):
        print(
            f"Hierarchical Leiden ({run['backend']}) at {run['entities']} entities / {run['edges']} edges: "
            f"{run['seconds']:.1f} s, {run['levels']} levels, {run['communities']} communities {run['per_level']}, "
            f"largest final {run['max_final_size']}, unsplittable {run['unsplittable']}"
        )
    sample_global = global_calls(_sample_memory())
    global50k = {}
    for words in (150, 600, 1500):
        global50k[str(words)] = global_calls(synthetic_memory(graph, communities, words))
    print(
        f"Global search calls per query: sample {sample_global['calls_per_query']} "
        f"({sample_global['reports']} reports); 50k entities, community_level 2: "
        + ", ".join(
            f"{g['calls_per_query']} with {g['reports']} reports of ~{g['report_tokens_mean']:.0f} tokens"
            for g in global50k.values()
        )
    )
    local = local_build_time(synthetic_memory(graph, communities))
    print(
        f"Local search context build at {local['entities']} entities, {local['budget_tokens']}-token budget: "
        f"p50 {local['ms_p50']:.1f} ms, p95 {local['ms_p95']:.1f} ms per query (embedder excluded)"
    )
    return {
        "graphrag_build_calls": {
            "default": default,
            "graphrag_settings": graphrag,
            "multihop": extrapolation,
        },
        "graphrag_leiden_50k": leiden,
        "graphrag_leidenalg_50k": leidenalg_run,
        "graphrag_global_calls": {"sample": sample_global, "entities_50k": global50k},
        "graphrag_local_context": local,
    }


def _sample_memory() -> GraphRAG:
    """The news episode of the sample built with the stub (the largest one)."""
    tok = get_tokenizer()
    episode = max(load_sample().episodes, key=lambda e: len(e.units))
    memory = GraphRAG(
        llm=LLM(StubChat(), progress=False), embedder=Embedder(StubEmbed()), tokenizer=tok
    )
    memory.insert(episode.units)
    memory.ensure_built()
    return memory


if __name__ == "__main__":
    main()
