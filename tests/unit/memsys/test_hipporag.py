"""HippoRAG with a scripted LLM and recorded replies: the phrase graph of a hand-checked 3-passage
example (triple edges, synonym edges, specificity), PPR's damping and the v1 ranking against an
independent computation, the counted JSON failures, the budget and the snapshot round trip
(Gutiérrez et al. 2024; OSU-NLP-Group/HippoRAG legacy and main; conf/memory/hipporag.yaml)."""

from __future__ import annotations

import json
import re

import igraph
import numpy as np
import pytest
from memharness.eval.run.snapshots import construction_settings
from memharness.memsys.extraction.parsing import FailureLog
from memharness.memsys.hipporag import HippoRAG
from memharness.memsys.hipporag.extract import PassageTriples, normalise_phrase, parse_triples
from memharness.memsys.hipporag.graph import (
    PhraseGraph,
    add_passage_edges,
    add_synonym_edges,
    collect,
)
from memharness.memsys.hipporag.rank import best_first, match_facts, top_facts
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedLLM, WordTokenizer
from memharness.memsys.types import units_from_texts
from omegaconf import OmegaConf

from tests.paths import ROOT

YAML = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "memory" / "hipporag.yaml"))
PROMPTS = YAML["prompts"]

PASSAGES = [
    "Alice Smith works at Acme Corp, which is located in Berlin.",
    "Bob Jones works at Acme Corp Inc. He was born in Berlin, where Acme Corp is located.",
    "Berlin is the capital of Germany. X Y is near Y X.",
]
# Recorded OpenIE replies (what a model wrote for each passage; the third has the 2-character phrases)
TRIPLES = {
    PASSAGES[0]: [["Alice Smith", "works at", "Acme Corp"], ["Acme Corp", "located in", "Berlin"]],
    PASSAGES[1]: [
        ["Bob Jones", "works at", "Acme Corp Inc."],
        ["Bob Jones", "born in", "Berlin"],
        ["Acme Corp", "located in", "Berlin"],
    ],
    PASSAGES[2]: [["Berlin", "capital of", "Germany"], ["X Y", "near", "Y X"]],
}
PHRASES = [
    "alice smith",
    "acme corp",
    "berlin",
    "bob jones",
    "acme corp inc",
    "germany",
    "x y",
    "y x",
]


def passage_of(prompt: str) -> str:
    return prompt.split("Paragraph:\n", 1)[1].split("\n", 1)[0]


def replier(triples=TRIPLES, query_entities=("Berlin",), filter_reply=None):
    """Recorded replies by prompt: NER lists the triples' endpoints, OpenIE the recorded triples."""

    def reply(prompt: str) -> str | None:
        if prompt.startswith("Find the named entities"):
            found = (
                triples.get(passage_of(prompt))
                if isinstance(triples.get(passage_of(prompt)), list)
                else []
            )
            names = list(dict.fromkeys(x for t in found for x in (t[0], t[2])))
            return json.dumps({"named_entities": names})
        if prompt.startswith("Build an RDF"):
            found = triples.get(passage_of(prompt))
            return found if isinstance(found, str) else json.dumps({"triples": found or []})
        if prompt.startswith("You extract entities"):
            return json.dumps({"named_entities": list(query_entities)})
        if prompt.startswith("You are given a question and candidate facts"):
            if filter_reply is not None:
                return filter_reply
            facts = json.loads(prompt.split("Facts: ", 1)[1].split("\n", 1)[0])["fact"]
            return json.dumps({"fact": facts[:1]})
        raise AssertionError(prompt[:80])

    return ScriptedLLM(reply)


def built(llm=None, texts=PASSAGES, **settings) -> HippoRAG:
    mem = HippoRAG(
        llm=llm or replier(),
        embedder=HashingEmbedder(dim=1024),
        tokenizer=WordTokenizer(),
        **{"prompts": PROMPTS, **settings},
    )
    mem.insert(units_from_texts(list(texts), source_id="doc"))
    mem.ensure_built()
    return mem


def test_every_key_of_the_config_is_commented():
    lines = (ROOT / "conf" / "memory" / "hipporag.yaml").read_text().splitlines()
    keys = [key for key in set(YAML) - {"_target_", "name"}]
    keys += ["  " + k for key, v in YAML.items() if isinstance(v, dict) for k in v]  # the groups'
    for key in keys:
        found = [(i, ln) for i, ln in enumerate(lines) if ln.startswith(f"{key}:")]
        assert found, key
        i, line = found[0]
        assert "#" in line or lines[i - 1].lstrip().startswith("#"), key


def test_phrases_are_normalised_as_hipporag_does():
    assert normalise_phrase("Acme Corp Inc.") == "acme corp inc"
    assert normalise_phrase("  Dr. J.-P. Sartre ") == "dr j p sartre"
    log = FailureLog()
    triples, dropped = parse_triples(
        '{"triples": [["A", "b", "C"], ["only", "two"], ["!!", "is", "x"]]}', "t", log
    )
    assert triples == [("a", "b", "c")] and dropped == 2
    assert log.counts == {"malformed_triple": 1, "empty_phrase": 1}


def test_graph_of_the_three_passages_by_hand():
    mem = built()
    g = mem.graph
    assert g.phrases == PHRASES
    ids = {p: i for i, p in enumerate(PHRASES)}

    def edge(a, b):
        return (min(ids[a], ids[b]), max(ids[a], ids[b]))

    triple_edges = {k: w for k, w in g.edges.items() if g.kinds[k] == "triple"}
    assert triple_edges == {
        edge("alice smith", "acme corp"): 1.0,
        edge("acme corp", "berlin"): 2.0,  # the same triple in two passages adds 1 per passage
        edge("bob jones", "acme corp inc"): 1.0,
        edge("bob jones", "berlin"): 1.0,
        edge("berlin", "germany"): 1.0,
        edge("x y", "y x"): 1.0,
    }
    # "acme corp" / "acme corp inc" share 2 of 3 hashed words: cosine 2 / sqrt(6) >= 0.8. "x y" and
    # "y x" are the same bag (cosine 1) but have only 2 alphanumerics each: no synonym edge.
    synonyms = {k: w for k, w in g.edges.items() if g.kinds[k] == "synonym"}
    assert list(synonyms) == [edge("acme corp", "acme corp inc")]
    assert synonyms[edge("acme corp", "acme corp inc")] == pytest.approx(2 / 6**0.5, abs=1e-3)
    # specificity = 1 / passages holding the phrase: berlin in 3, acme corp in 2, the rest in 1
    expected = {p: 1.0 for p in PHRASES} | {"berlin": 1 / 3, "acme corp": 1 / 2}
    assert g.specificity().tolist() == pytest.approx([expected[p] for p in PHRASES])
    stats = mem.stats()["hipporag"]["build"]
    assert stats["graph"]["edges"] == {"triple": 6, "synonym": 1, "passage": 0}
    assert stats["llm_calls"] == {"ner": 3, "triples": 3, "total": 6}
    assert stats["extraction"]["extraction_failure_rate"] == 0.0


def test_a_higher_threshold_drops_the_synonym_edge_and_v2_adds_passage_nodes():
    assert built(indexing={"synonym_threshold": 0.85}).graph.edge_counts()["synonym"] == 0
    g = built(variant="v2").graph
    assert g.n_nodes == len(PHRASES) + 3
    passage_edges = sorted(k for k, kind in g.kinds.items() if kind == "passage")
    # passage 0 holds alice smith, acme corp, berlin: nodes 0, 1, 2 linked to node 8
    assert [k for k in passage_edges if k[1] == len(PHRASES)] == [(0, 8), (1, 8), (2, 8)]
    assert len(passage_edges) == 3 + 4 + 4


def test_ppr_damping_is_the_probability_of_following_an_edge():
    """Two nodes, reset on the first: p_a = 1 / (1 + d), p_b = d / (1 + d)."""
    g = PhraseGraph(phrases=["a", "b"], passages=[], facts=[], passage_facts=[])
    g.edges[(0, 1)], g.kinds[(0, 1)] = 1.0, "triple"
    for d in (0.2, 0.5):
        assert g.ppr(np.array([1.0, 0.0]), d).tolist() == pytest.approx([1 / (1 + d), d / (1 + d)])


def reference_scores(texts, triples, seeds, damping, vectors_of):
    """An independent v1: graph from the raw triples, dense power iteration, facts summed."""
    rows = [[tuple(normalise_phrase(x) for x in t) for t in triples[p]] for p in texts]
    phrases = list(dict.fromkeys(x for r in rows for t in r for x in (t[0], t[2])))
    n = len(phrases)
    w = np.zeros((n, n))
    for r in rows:
        for s, _, o in r:
            a, b = phrases.index(s), phrases.index(o)
            if a != b:
                w[a, b] += 1
                w[b, a] += 1
    vec = vectors_of(phrases)
    for i, p in enumerate(phrases):
        for j in range(n):
            if i != j and len(re.sub("[^a-z0-9]", "", p)) > 2 and vec[i] @ vec[j] >= 0.8:
                w[i, j] = w[j, i] = vec[i] @ vec[j]
    held = [sum(p in {x for t in r for x in (t[0], t[2])} for r in rows) for p in phrases]
    reset = np.zeros(n)
    for entity in seeds:
        j = int(np.argmax(vec @ vectors_of([entity])[0]))
        reset[j] = 1 / held[j]
    reset /= reset.sum()
    walk = w / np.maximum(w.sum(1, keepdims=True), 1e-12)
    p = reset.copy()
    for _ in range(200):
        p = (1 - damping) * reset + damping * walk.T @ p
    scores = np.array(
        [sum(p[phrases.index(x)] for f in set(r) for x in {f[0], f[2]}) for r in rows]
    )
    return (scores - scores.min()) / (scores.max() - scores.min())


SEEDS = [["Berlin", "Germany"], ["Acme Corp", "Bob Jones"], ["Alice Smith", "X Y"]]


@pytest.mark.parametrize("seeds", SEEDS)
def test_v1_ranking_matches_an_independent_computation(seeds):
    mem = built(llm=replier(query_entities=seeds))
    ranking = mem.rank("a question")
    expected = reference_scores(PASSAGES, TRIPLES, seeds, 0.5, HashingEmbedder(dim=1024).embed)
    assert ranking.mode == "ppr" and ranking.scores.tolist() == pytest.approx(expected.tolist())


@pytest.mark.parametrize(
    "mutation",
    [
        {"retrieval": {"specificity": False}},
        {"retrieval": {"passage_score": "phrases"}},
        {"retrieval": {"damping": 0.8}},
    ],
)
def test_the_reference_tells_each_planted_mutation_apart(mutation):
    """The comparison above can fail: each changed rule moves some seed set's scores."""
    embed = HashingEmbedder(dim=1024).embed
    moved = []
    for seeds in SEEDS:
        scores = built(llm=replier(query_entities=seeds), **mutation).rank("q").scores
        expected = reference_scores(PASSAGES, TRIPLES, seeds, 0.5, embed)
        moved.append(not np.allclose(scores, expected))
    assert any(moved)


@pytest.mark.parametrize("engine", ["prpack", "arpack"])
def test_igraph_engines_give_the_power_iterations_scores(engine):
    seeds = ["Berlin", "Germany"]
    a = built(llm=replier(query_entities=seeds)).rank("q").scores
    b = built(llm=replier(query_entities=seeds), ppr={"engine": engine}).rank("q").scores
    assert b.tolist() == pytest.approx(a.tolist(), abs=1e-8)


def test_v1_ranking_by_hand_and_the_returned_passages_carry_their_units():
    """Seed "germany": passage 2 holds it and ranks first; its only neighbour is berlin, which two
    facts of passage 1 touch and one of passage 0, so passage 1 comes second; the last is min-max 0."""
    mem = built(llm=replier(query_entities=["Germany"]))
    items = mem.search("Which country?", budget_tokens=1000)
    assert [i.text for i in items] == [PASSAGES[2], PASSAGES[1], PASSAGES[0]]
    assert items[0].score == 1.0 and items[-1].score == 0.0
    assert all(
        i.source_unit_ids == (u.id,) for i, u in zip(items, _units_by_text(mem, items), strict=True)
    )
    assert mem.stats()["hipporag"]["search"]["last_linked"] == [["germany", "germany", 1.0]]


def _units_by_text(mem, items):
    by_text = {u.text: u for u in mem.units}
    return [by_text[i.text] for i in items]


def test_no_query_entity_gives_uniform_scores_counted():
    mem = built(llm=replier(query_entities=[]))
    ranking = mem.rank("q")
    assert ranking.mode == "uniform" and len(set(ranking.scores.tolist())) == 1


def test_json_failures_are_counted_and_shown_never_silently_zero():
    triples = dict(TRIPLES)
    triples[PASSAGES[1]] = "Sure! Here are the triples: (bob, works at, acme)"  # not JSON
    triples[PASSAGES[2]] = []  # valid JSON, no triples
    mem = built(llm=replier(triples=triples))
    build = mem.stats()["hipporag"]["build"]
    extraction = build["extraction"]
    assert extraction["openie_status"] == {
        "ok": 1,
        "no_triples": 1,
        "unparsed": 1,
        "call_failed": 0,
    }
    assert extraction["extraction_failure_rate"] == pytest.approx(1 / 3)
    assert extraction["empty_triple_rate"] == pytest.approx(2 / 3)
    counts = build["failures"]["counts"]
    assert counts["triples_unparsed"] == 1 and counts["no_triples"] == 1
    assert mem.degraded == {"extraction_unparsed": 1}
    assert mem.graph.phrases == ["alice smith", "acme corp", "berlin"]


def test_failed_calls_are_counted_as_failures():
    def reply(prompt):
        return None if prompt.startswith("Build an RDF") else replier().reply(prompt)

    mem = built(llm=ScriptedLLM(reply))
    extraction = mem.stats()["hipporag"]["build"]["extraction"]
    assert extraction["openie_status"]["call_failed"] == 3
    assert mem.degraded == {"extraction_failed": 3}


def test_budget_is_respected_and_the_overflow_counted():
    mem = built()
    sizes = sorted(len(t.split()) for t in PASSAGES)
    items = mem.search("q", budget_tokens=sizes[0] + sizes[1] - 1)
    assert sum(i.tokens for i in items) <= sizes[0] + sizes[1] - 1
    assert len(items) < 3 and mem.stats()["hipporag"]["search"]["passages_over_budget"] >= 1
    assert len(built(top_k=1).search("q", 1000)) == 1


def test_snapshot_round_trip_gives_the_same_graph_and_ranking():
    for variant in ("v1", "v2"):
        mem = built(variant=variant)
        state = mem.state()
        arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
        plain = json.loads(json.dumps({k: v for k, v in state.items() if k not in arrays}))
        again = HippoRAG(
            llm=replier(),
            embedder=HashingEmbedder(dim=1024),
            tokenizer=WordTokenizer(),
            prompts=PROMPTS,
            variant=variant,
        )
        again.load_state({**plain, **arrays})
        assert again.graph.to_json() == mem.graph.to_json()
        assert [i.node_id for i in again.search("q", 1000)] == [
            i.node_id for i in mem.search("q", 1000)
        ]
        assert again.stats()["hipporag"]["build"] == mem.stats()["hipporag"]["build"]


def test_v2_filter_keeps_facts_and_seeds_passages():
    mem = built(variant="v2")
    ranking = mem.rank("Where does Bob Jones work?")
    record = mem.stats()["hipporag"]["search"]
    assert ranking.mode == "ppr" and record["filter_calls"] == 1 and record["facts_kept"] == 1
    # the kept fact's two phrases plus every passage but the least similar (its min-max score is 0)
    assert ranking.seeds == 2 + 2
    assert len(mem.search("Where does Bob Jones work?", 1000)) == 3  # v2 returns up to 5


def test_v2_unreadable_filter_falls_back_to_dense_counted():
    mem = built(variant="v2", llm=replier(filter_reply="I think facts 1 and 2."))
    assert mem.rank("q").mode == "dense"
    record = mem.stats()["hipporag"]["search"]
    assert record["filter_unparsed"] == 1 and record["failures"]["counts"] == {"filter_unparsed": 1}


def test_filter_output_is_matched_to_the_candidates():
    candidates = [("a", "b", "c"), ("berlin", "capital of", "germany")]
    assert match_facts([["Berlin", "capital of", "Germany"], ["a", "b", "c"]], candidates) == [1, 0]
    assert match_facts([["berlin", "capital", "germany"]], candidates) == [1]  # closest


def test_only_the_build_groups_change_the_snapshot_address():
    """Retrieval-only settings (the retrieval group, ppr, top_k, the query prompts) reuse a snapshot;
    the chunks, indexing and extraction prompts do not."""
    base = {k: v for k, v in YAML.items() if k not in ("_target_", "name")}

    def address(**changes):
        params = {**base, **{k: {**base[k], **v} for k, v in changes.items()}}
        return construction_settings(params, HippoRAG)

    same = address(
        retrieval={"damping": 0.3, "linking_top_k": 2},
        ppr={"engine": "prpack"},
        prompts={
            "query_ner_prompt": "{question}?",
            "filter_prompt": "{question}{fact_before_filter}",
        },
    )
    assert same == address()
    assert address(indexing={"synonym_threshold": 0.9}) != address()
    assert address(chunks={"size": 512}) != address()
    assert address(prompts={"ner_prompt": "{passage}!"}) != address()


def test_v2_weighs_a_triple_twice_a_passage_edge_once_and_a_repeat_in_one_passage_once():
    """HippoRAG 2's code keys a fact edge as (s, o) and (o, s), two parallel igraph edges, and a
    passage edge once with weight 1; ``filter_invalid_triples`` drops a passage's repeated triple."""
    repeated = {**TRIPLES, PASSAGES[0]: TRIPLES[PASSAGES[0]] + [TRIPLES[PASSAGES[0]][0]]}
    g = built(variant="v2", llm=replier(triples=repeated)).graph
    ids = {p: i for i, p in enumerate(PHRASES)}

    def edge(a, b):
        return (min(ids[a], ids[b]), max(ids[a], ids[b]))

    assert g.edges[edge("alice smith", "acme corp")] == 2.0  # repeated in passage 0: counted once
    assert g.edges[edge("acme corp", "berlin")] == 4.0  # in two passages: 2 per passage
    assert g.edges[edge("x y", "y x")] == 2.0
    assert {w for k, w in g.edges.items() if g.kinds[k] == "passage"} == {1.0}
    # both ends choose each other as synonyms: the cosine on each of the two keys
    syn = g.edges[edge("acme corp", "acme corp inc")]
    assert g.kinds[edge("acme corp", "acme corp inc")] == "synonym"
    assert syn == pytest.approx(2 * 2 / 6**0.5, abs=1e-3)
    # v1 (legacy) keeps one key per pair and counts every occurrence
    v1 = built(llm=replier(triples=repeated)).graph
    assert v1.edges[edge("alice smith", "acme corp")] == 2.0
    assert v1.edges[edge("acme corp", "berlin")] == 2.0


def test_v2_synonym_chosen_by_one_end_keeps_the_other_directions_triple_count():
    """Only "abc" has more than 2 alphanumerics, so only the key (abc, ab) becomes the cosine; the key
    (ab, abc) keeps its triple count 1: weight 0.9 + 1. Legacy v1 replaces the pair: 0.9."""
    records = [PassageTriples("p0", triples=[("abc", "r", "ab")])]
    vec = np.array([[1.0, 0.0], [0.9, np.sqrt(1 - 0.81)]])
    g2, g1 = collect(records, passage_nodes=True), collect(records, passage_nodes=False)
    add_synonym_edges(g2, vec, 0.8, 100, directed_keys=True)
    add_synonym_edges(g1, vec, 0.8, 100)
    assert g2.edges[(0, 1)] == pytest.approx(1.9) and g2.kinds[(0, 1)] == "synonym"
    assert g1.edges[(0, 1)] == pytest.approx(0.9)


def test_v2_filter_reply_with_a_non_triple_keeps_the_others_and_a_non_string_discards_it():
    question = "Where does Bob Jones work?"
    two = json.dumps(
        {"fact": [["bob jones", "works at"], ["bob jones", "works at", "acme corp inc"]]}
    )
    mem = built(variant="v2", llm=replier(filter_reply=two))
    ranking = mem.rank(question)
    record = mem.stats()["hipporag"]["search"]
    assert ranking.mode == "ppr" and record["facts_kept"] == 2
    assert record["filter_facts_not_triples"] == 1 and "filter_unparsed" not in record
    number = json.dumps({"fact": [["bob jones", "works at", "acme corp inc"], ["a", 1, "b"]]})
    mem = built(variant="v2", llm=replier(filter_reply=number))
    assert mem.rank(question).mode == "dense"
    assert mem.stats()["hipporag"]["search"]["filter_unparsed"] == 1


def test_filter_duplicates_are_kept_and_ties_go_to_the_later_index_as_the_code():
    candidates = [("a", "b", "c"), ("berlin", "capital of", "germany")]
    same = [["berlin", "capital of", "germany"], ["Berlin", "capital of", "Germany"]]
    assert match_facts(same, candidates) == [1, 1]
    # np.argsort(x)[::-1] in HippoRAG 2: among equal scores the later index comes first
    assert top_facts(np.array([0.5, 1.0, 0.5, 1.0]), 3) == [3, 1, 2]
    assert best_first(np.array([0.2, 0.2, 0.1]), "v1").tolist() == [0, 1, 2]
    assert best_first(np.array([0.2, 0.2, 0.1]), "v2").tolist() == [1, 0, 2]


def code_v2_graph(records, vectors, threshold=0.8, cap=100):
    """HippoRAG 2's graph as its code builds it, independently: ``node_to_node_stats`` with the keys
    (s, o) and (o, s) per distinct triple of a passage, (passage, phrase) = 1, (phrase, synonym) =
    cosine, every key one igraph edge (parallel edges kept), undirected."""
    phrases = list(dict.fromkeys(x for r in records for t in r.triples for x in (t[0], t[2])))
    stats: dict[tuple[str, str], float] = {}
    for r in records:
        for s, _, o in dict.fromkeys(r.triples):
            stats[(s, o)] = stats.get((s, o), 0.0) + 1
            stats[(o, s)] = stats.get((o, s), 0.0) + 1
    for r in records:
        for ph in {x for t in r.triples for x in (t[0], t[2])}:
            stats[(r.chunk, ph)] = 1.0
    sims = vectors @ vectors.T
    for i, ph in enumerate(phrases):
        if len(re.sub("[^A-Za-z0-9]", "", ph)) <= 2:
            continue
        taken = 0
        for j in np.argsort(-sims[i], kind="stable"):
            if sims[i, j] < threshold or taken >= cap:
                break
            if j != i:
                stats[(ph, phrases[j])] = float(sims[i, j])
                taken += 1
    names = phrases + [r.chunk for r in records]
    keys = [k for k in stats if k[0] != k[1]]
    g = igraph.Graph(n=len(names), directed=False)
    g.add_edges([(names.index(a), names.index(b)) for a, b in keys])
    g.es["weight"] = [stats[k] for k in keys]
    return g


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_v2_graph_gives_the_codes_pagerank_with_parallel_edges(seed):
    rng = np.random.default_rng(seed)
    names = [f"phrase {i}" for i in range(12)] + ["ab", "cd"]  # two without synonym edges
    records = []
    for p in range(6):
        ts = [(names[rng.integers(14)], "r", names[rng.integers(14)]) for _ in range(3)]
        records.append(PassageTriples(f"p{p}", triples=ts + [ts[0]]))  # a repeat in each
    ours = collect(records, passage_nodes=True)
    base = rng.normal(size=(4, 8))
    vec = base[rng.integers(4, size=len(ours.phrases))] + 0.3 * rng.normal(
        size=(len(ours.phrases), 8)
    )
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    add_synonym_edges(ours, vec, 0.8, 100, directed_keys=True)
    add_passage_edges(ours)
    assert ours.edge_counts()["synonym"] > 0
    code = code_v2_graph(records, vec)
    reset = rng.random(ours.n_nodes)
    expected = code.personalized_pagerank(
        damping=0.5, directed=False, weights="weight", reset=reset.tolist(), implementation="prpack"
    )
    assert ours.ppr(reset, 0.5).tolist() == pytest.approx(expected, abs=1e-9)
