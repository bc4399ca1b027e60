"""RAPTOR: chunker, clustering, build loop, retrieval and persistence, with hand-made embeddings
and a summariser that echoes its inputs (the real UMAP where the test is about clustering)."""

from __future__ import annotations

import numpy as np
import pytest
from memharness.memsys.hierarchy.memory import load_memory
from memharness.memsys.raptor import clustering as rc
from memharness.memsys.raptor.chunker import make_chunks, sentence_chunks
from memharness.memsys.raptor.clustering import ClusterLog, ClusterSettings
from memharness.memsys.raptor.memory import Raptor
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.testing.doubles import WordTokenizer
from paths import ROOT
from raptor_fakes import EchoSummariser, make_raptor, two_blobs, unit, units

WT = WordTokenizer()


# ---------------------------------------------------------------------------- α: the chunker
def test_sentences_are_packed_greedily_up_to_the_limit():
    # pieces cost len(" " + piece) in words: 3, 2, 3, 1
    chunks = sentence_chunks(units(["a b c. d e! f g h? i"]), WT, max_tokens=5)
    assert [c.text for c in chunks] == ["a b c d e", "f g h i"]


def test_a_sentence_at_exactly_the_limit_fits_and_one_more_word_starts_a_new_chunk():
    chunks = sentence_chunks(units(["a b. c d e\nf"]), WT, max_tokens=5)
    assert [c.text for c in chunks] == ["a b c d e", "f"]


def test_an_over_long_sentence_is_split_at_clauses_and_the_open_chunk_continues_after_it():
    # "x y" opens a chunk; the 7-word sentence is cut at , and ; into 2 + 2 + 3 words, packed into
    # chunks of their own and emitted at once; "z" then joins the still-open chunk (the code's order).
    chunks = sentence_chunks(units(["x y. p1 p2, p3 p4; p5 p6 p7. z"]), WT, max_tokens=4)
    assert [c.text for c in chunks] == ["p1 p2 p3 p4", "p5 p6 p7", "x y z"]


def test_a_clause_over_the_limit_stays_whole_and_no_empty_chunk_is_made():
    chunks = sentence_chunks(units(["w1 w2 w3 w4 w5 w6, v. u"]), WT, max_tokens=3)
    assert [c.text for c in chunks] == ["w1 w2 w3 w4 w5 w6", "v", "u"]


def test_punctuation_is_dropped_by_default_and_kept_on_request():
    text = ["Hi there. How are you? Fine: thanks, bye!"]
    assert [c.text for c in sentence_chunks(units(text), WT, 100)] == [
        "Hi there How are you Fine: thanks, bye"
    ]
    kept = sentence_chunks(units(text), WT, 100, keep_punctuation=True)
    assert [c.text for c in kept] == ["Hi there. How are you? Fine: thanks, bye!"]
    # the clause delimiters go too when an over-long sentence is cut at them
    assert [c.text for c in sentence_chunks(units(["a b, c d; e"]), WT, 3)] == ["a b", "c d e"]


def test_chunks_carry_the_units_they_overlap_and_a_sentence_cut_by_a_window_is_whole_again():
    u = [unit("The cat sat", 0, "doc"), unit(" on the mat. Dogs bark.", 1, "doc")]
    one = sentence_chunks(u, WT, 100)
    assert [(c.text, c.units) for c in one] == [
        ("The cat sat on the mat Dogs bark", (u[0].id, u[1].id))
    ]
    two = sentence_chunks(u, WT, 7)  # 6 + 2 words > 7
    assert [(c.text, c.units) for c in two] == [
        ("The cat sat on the mat", (u[0].id, u[1].id)),
        ("Dogs bark", (u[1].id,)),
    ]


def test_packing_never_crosses_a_source_document_and_keeps_stream_order():
    u = [
        unit("one. two.", 0, "A"),
        unit("three.", 1, "B"),
        unit("four", 2, "B"),
        unit("five", 3, "A"),
    ]
    chunks = sentence_chunks(u, WT, 100)
    assert [(c.text, c.units) for c in chunks] == [
        ("one two", (u[0].id,)),
        ("three four", (u[1].id, u[2].id)),
        ("five", (u[3].id,)),
    ]


def test_units_without_text_make_no_chunk_and_the_units_chunker_keeps_units_whole():
    u = [unit("alpha beta.", 0), unit("  ", 1), unit("gamma", 2)]
    assert [c.units for c in sentence_chunks(u, WT, 100)] == [(u[0].id, u[2].id)]
    assert [(c.text, c.units) for c in make_chunks(u, "units", WT)] == [
        ("alpha beta.", (u[0].id,)),
        ("gamma", (u[2].id,)),
    ]
    with pytest.raises(ValueError, match="memory.chunks.chunker"):
        make_chunks(u, "words", WT)


def test_an_empty_unit_between_two_units_neither_glues_their_words_nor_counts_as_a_source():
    u = [
        unit("Alpha beta", 0),
        unit("", 1),
        unit("gamma delta. Epsilon", 2),
        unit(" \n", 3),
        unit("zeta", 4),
    ]
    chunks = sentence_chunks(u, WT, 100)
    assert [(c.text, c.units) for c in chunks] == [
        ("Alpha beta gamma delta Epsilon zeta", (u[0].id, u[2].id, u[4].id))
    ]
    memory = make_raptor(two_blobs(), chunks={"chunker": "sentences"})
    memory.insert(u)
    memory.ensure_built()
    assert memory.builds[-1]["empty_units"] == 2 and memory.builds[-1]["units_without_leaf"] == 2


def test_real_tokenizer_chunks_of_the_sample_stay_within_100_tokens_and_cover_every_unit():
    from memharness.data_prep.sample import load

    tok = get_tokenizer()
    for episode in load().episodes:
        chunks = sentence_chunks(episode.units, tok, 100)
        assert all(0 < tok.count(c.text) <= 100 for c in chunks)
        assert {u for c in chunks for u in c.units} == {u.id for u in episode.units}


# ---------------------------------------------------------------------------- π: clustering
def test_mixture_gives_a_point_between_two_clusters_both_and_the_others_one():
    table = two_blobs()
    points = np.array(list(table.values()))
    log = ClusterLog()
    labels, k = rc.gmm_soft_labels(points, 0.1, 3, {"gmm_bic": 1, "gmm": 2}, log)
    assert k == 2
    a, b = labels[0][0], labels[60][0]
    assert a != b
    assert all(labels[i] == [a] for i in range(60)) and all(
        labels[i] == [b] for i in range(60, 120)
    )
    assert sorted(labels[120]) == sorted([a, b])  # the midpoint joins both
    assert log.gmm_fits == 2 + 1 and log.fallback_assignments == 0


def test_a_node_with_no_posterior_above_threshold_joins_its_most_probable_cluster(monkeypatch):
    class Flat:
        def bic(self, points):
            return 0.0

        def predict_proba(self, points):
            return np.array([[0.6, 0.4], [0.05, 0.05]])  # second row: nothing above 0.1

    monkeypatch.setattr(rc, "_fit_gmm", lambda points, k, seed, log: Flat())
    log = ClusterLog()
    labels, _ = rc.gmm_soft_labels(np.zeros((2, 2)), 0.1, 3, {"gmm_bic": 0, "gmm": 0}, log)
    assert labels == [[0, 1], [0]] and log.fallback_assignments == 1


def _planted(
    groups: int = 3, per: int = 10, dim: int = 16, noise: float = 0.05
) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(123)
    rows, truth = [], []
    for g in range(groups):
        for _ in range(per):
            v = np.eye(dim)[g] + noise * rng.standard_normal(dim)
            rows.append(v / np.linalg.norm(v))
            truth.append(g)
    return np.array(rows, dtype=np.float32), truth


@pytest.mark.slow  # over 8 s: the slow tier (CI runs both tiers)
def test_umap_and_mixtures_recover_planted_clusters_deterministically_with_recorded_seeds():
    vectors, truth = _planted()
    settings = ClusterSettings()
    log1, log2, log3 = ClusterLog(), ClusterLog(), ClusterLog()
    first = rc.raptor_clusters(vectors, [10] * len(vectors), settings, seed=7, log=log1)
    again = rc.raptor_clusters(vectors, [10] * len(vectors), settings, seed=7, log=log2)
    assert first == again and log1.seeds == log2.seeds  # same seed, same clusters
    assert {i for c in first for i in c} == set(range(len(vectors)))  # every node placed
    assert all(len({truth[i] for i in c}) == 1 for c in first)  # no cluster mixes planted groups
    for g in range(3):  # every planted group is covered by clusters of its own
        assert {i for c in first if truth[c[0]] == g for i in c} == {
            i for i, t in enumerate(truth) if t == g
        }
    assert (
        set(log1.seeds) == {"L1/global"} and log1.umap_calls == 1
    )  # 10-node groups: no local step
    assert log1.seeds["L1/global"]["umap"] == rc.step_seed(7, "L1/global", "umap")
    rc.raptor_clusters(vectors, [10] * len(vectors), settings, seed=8, log=log3)
    assert log3.seeds["L1/global"] != log1.seeds["L1/global"]


def test_global_clusters_over_reduction_dimension_plus_one_are_split_locally(monkeypatch):
    calls = []

    def labels(points, threshold, max_clusters, seeds, log, steps=None):
        calls.append(len(points))
        if len(points) == 14:  # global: 12 nodes in cluster 0, 2 in cluster 1
            return [[0]] * 12 + [[1]] * 2, 2
        return [[0]] * 6 + [[1]] * 6, 2  # local split of the 12

    monkeypatch.setattr(rc, "gmm_soft_labels", labels)
    log = ClusterLog()
    clusters = rc.soft_clusters(
        np.zeros((14, 3)), ClusterSettings(), 0, "L1", log, reduce=lambda v, *a: v
    )
    assert calls == [14, 12] and set(log.seeds) == {"L1/global", "L1/local0"}
    assert clusters == [list(range(6)), list(range(6, 12)), [12, 13]]


def test_tiny_inputs_are_one_cluster_without_umap():
    log = ClusterLog()
    assert rc.soft_clusters(np.zeros((1, 4)), ClusterSettings(), 0, "p", log) == [[0]]
    assert rc.soft_clusters(np.zeros((4, 4)), ClusterSettings(), 0, "p", log) == [[0, 1, 2, 3]]
    assert log.too_small == 1 and log.umap_calls == 0


def test_clusters_over_the_token_limit_are_clustered_again(monkeypatch):
    script = {8: [[0, 1, 2, 3, 4, 5], [6, 7]], 6: [[0, 1, 2], [3, 4, 5]]}
    inputs = []

    def fake(vectors, settings, seed, path, log, reduce, steps=None):
        inputs.append((len(vectors), path))
        return script[len(vectors)]

    monkeypatch.setattr(rc, "soft_clusters", fake)
    settings = ClusterSettings(max_length_in_cluster=500)
    log = ClusterLog()
    out = rc.raptor_clusters(np.zeros((8, 2)), [100] * 8, settings, 0, log)
    assert out == [[0, 1, 2], [3, 4, 5], [6, 7]]  # 600 tokens > 500: split in place; 200 kept
    assert inputs == [(8, "L1"), (6, "L1/r0")] and log.reclustered == 1
    # at exactly the limit nothing is clustered again
    inputs.clear()
    assert (
        rc.raptor_clusters(
            np.zeros((8, 2)), [100] * 8, ClusterSettings(max_length_in_cluster=600), 0, ClusterLog()
        )
        == script[8]
    )
    assert inputs == [(8, "L1")]


def test_a_cluster_equal_to_its_whole_input_is_clustered_again_once_under_a_derived_seed(
    monkeypatch,
):
    paths = []

    def fake(
        vectors, settings, seed, path, log, reduce, steps=None
    ):  # whole on the first pass, split on the retry
        paths.append(path)
        return [[0, 1, 2], [3, 4, 5]] if path == "L1/r0" else [list(range(len(vectors)))]

    monkeypatch.setattr(rc, "soft_clusters", fake)
    log = ClusterLog()
    out = rc.raptor_clusters(
        np.zeros((6, 2)), [1000] * 6, ClusterSettings(max_length_in_cluster=3500), 0, log
    )
    assert out == [[0, 1, 2], [3, 4, 5]] and paths == ["L1", "L1/r0"]
    assert log.unsplittable == [] and log.whole_retries == 1 and log.reclustered == 1
    assert rc.step_seed(0, "L1/r0/global", "umap") != rc.step_seed(0, "L1/global", "umap")


def test_a_cluster_that_stays_whole_on_its_retry_is_kept_and_counted_and_duplicates_are_summarised_once(
    monkeypatch,
):
    paths = []

    def fake(vectors, settings, seed, path, log, reduce, steps=None):
        paths.append(path)
        return [list(range(len(vectors))), list(range(len(vectors)))]

    monkeypatch.setattr(rc, "soft_clusters", fake)
    log = ClusterLog()
    out = rc.raptor_clusters(np.zeros((5, 2)), [1000] * 5, ClusterSettings(), 0, log)
    assert out == [[0, 1, 2, 3, 4]]
    assert paths == [
        "L1",
        "L1/r0",
    ]  # one retry; the duplicate of the whole input is not retried again
    assert log.unsplittable == [{"nodes": 5, "tokens": 5000}] and log.whole_retries == 1
    assert log.duplicate_clusters == 2  # once in the retry, once in the first pass


@pytest.mark.slow  # over 8 s: the slow tier (CI runs both tiers)
def test_real_recursion_leaves_no_splittable_cluster_over_the_limit():
    vectors, _ = _planted(groups=2, per=20)
    log = ClusterLog()
    out = rc.raptor_clusters(
        vectors, [100] * 40, ClusterSettings(max_length_in_cluster=350), 3, log
    )
    assert log.reclustered >= 1
    over = [c for c in out if len(c) > 1 and 100 * len(c) > 350]
    assert len(over) <= len(
        log.unsplittable
    )  # anything still over the limit is recorded as unsplittable
    assert {i for c in out for i in c} == set(range(40))


# ---------------------------------------------------------------------------- the build loop
def test_a_layer_of_at_most_reduction_dimension_plus_one_nodes_is_not_clustered():
    table = two_blobs()
    eleven = make_raptor(table)
    eleven.insert(units([f"a{i}" for i in range(11)]))
    eleven.ensure_built()
    assert len(eleven.store) == 11 and eleven.llm.calls == 0
    assert "layer 0 has 11 nodes <= reduction_dimension + 1 = 11" in eleven.builds[-1]["stop"]
    twelve = make_raptor(table)
    twelve.insert(units([f"a{i}" for i in range(12)]))
    twelve.ensure_built()
    assert twelve.store.max_level() == 1 and len(twelve.llm.batches) == 1
    # the rule follows reduction_dimension
    smaller = make_raptor(table, clustering={"reduction_dimension": 4})
    smaller.insert(units([f"a{i}" for i in range(6)]))
    smaller.ensure_built()
    assert smaller.store.max_level() == 1


def test_a_point_between_two_clusters_gets_two_parents_and_each_layer_is_one_batch():
    table = two_blobs()
    llm = EchoSummariser()
    memory = make_raptor(table, llm=llm, clustering={"max_clusters": 3})
    texts = [f"a{i}" for i in range(60)] + [f"b{i}" for i in range(60)] + ["m"]
    memory.insert(units(texts))
    memory.ensure_built()
    store = memory.store
    mid = store.texts.index("m")
    parents = store.parents[mid]
    assert len(parents) >= 2
    a_side = {store.texts.index(f"a{i}") for i in range(60)}
    kids = [set(store.children[p]) - {mid} for p in parents]
    assert any(k <= a_side for k in kids) and any(
        k and not k & a_side for k in kids
    )  # one parent per side
    for p in parents:
        assert unit("m", 120).id in store.source_units(p)
    # one batch per built layer, holding one request per new node of that layer
    built = memory.builds[-1]["layers"]
    assert len(llm.batches) == len(built) >= 1
    for layer, batch in zip(built, llm.batches, strict=False):
        assert len(batch) == layer["clusters"] == len(store.nodes_at_level(layer["layer"]))
    assert built[0]["multi_parent_children"] >= 1
    assert memory.stats()["structure"]["multi_parent_nodes"] >= 1
    # the summary is written from the members' texts and embedded as their centroid
    p = parents[0]
    members = sorted(store.texts[c] for c in store.children[p])
    assert sorted(store.texts[p][4:-1].split()) == members


def test_layers_are_built_until_the_stop_rule_or_num_layers(monkeypatch):
    import memharness.memsys.raptor.memory as raptor_module

    def pairs(
        vectors, tokens, settings, seed, path, reduce, steps=None
    ):  # clusters of two consecutive nodes
        return [[i, i + 1] for i in range(0, len(vectors), 2)], ClusterLog()

    monkeypatch.setattr(raptor_module, "cluster_layer", pairs)
    table = two_blobs()
    texts = [f"a{i}" for i in range(24)]
    full = make_raptor(table)
    full.insert(units(texts))
    full.ensure_built()
    # 24 leaves -> 12 (> 11, clustered again) -> 6 (<= 11: stop)
    assert [len(full.store.nodes_at_level(level)) for level in range(3)] == [24, 12, 6]
    assert [len(b) for b in full.llm.batches] == [12, 6]  # one batch per layer
    assert full.llm.descs == ["raptor layer 1", "raptor layer 2"]
    assert full.builds[-1]["stop"] == "layer 2 has 6 nodes <= reduction_dimension + 1 = 11"
    one = make_raptor(table, clustering={"num_layers": 1})
    one.insert(units(texts))
    one.ensure_built()
    assert one.store.max_level() == 1 and one.builds[-1]["stop"] == "num_layers = 1 reached"
    flat = make_raptor(table, clustering={"num_layers": 0})
    flat.insert(units(texts))
    flat.ensure_built()
    assert len(flat.store) == 24 and flat.llm.calls == 0


def test_a_failed_summary_is_counted_and_its_node_keeps_an_excerpt():
    table = two_blobs()
    memory = make_raptor(
        table,
        llm=EchoSummariser(fail_on="a3"),
        clustering={"max_clusters": 3},
        summaries={"max_tokens": 4},
    )
    memory.insert(units([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)]))
    memory.ensure_built()
    store = memory.store
    failed = [v for v in range(len(store)) if "summary_failed" in store.meta[v]]
    assert failed and all(store.meta[v]["summary_failed"] == "BackendError: boom" for v in failed)
    for v in failed:
        members = [store.texts[c] for c in store.children[v]]
        assert store.texts[v].split() == members[:4]
    raptor = memory.stats()["raptor"]
    assert (
        raptor["summary_failures_total"]
        == len(failed)
        == raptor["last_build"]["layers"][0]["summary_failures"]
    )
    strict = make_raptor(
        table,
        llm=EchoSummariser(fail_on="a3"),
        clustering={"max_clusters": 3},
        summaries={"failure": "raise"},
    )
    strict.insert(units([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)]))
    with pytest.raises(RuntimeError, match="summary of cluster .* failed: BackendError: boom"):
        strict.ensure_built()


def test_rebuilds_start_from_scratch_and_are_counted():
    table = two_blobs()
    memory = make_raptor(table, clustering={"max_clusters": 3})
    memory.insert(units([f"a{i}" for i in range(15)]))
    assert memory.retrieve("a1", 1000)
    assert memory.retrieve("a2", 1000) and len(memory.builds) == 1  # no new insert: no rebuild
    first_calls = memory.llm.calls
    memory.insert([unit(f"b{i}", 15 + i) for i in range(15)])
    memory.retrieve("b1", 1000)
    stats = memory.stats()
    assert len(stats["rebuilds"]) == 2 and stats["raptor"]["builds"] == 2
    assert [r["units"] for r in stats["rebuilds"]] == [15, 30]
    assert len(memory.store.leaves()) == 30 and len(memory.store.nodes_at_level(0)) == 30  # not 45
    calls = stats["raptor"]["llm_calls_per_build"]
    assert calls[0] == first_calls and sum(calls) == memory.llm.calls
    assert stats["raptor"]["llm_calls_per_layer"] == [
        r["llm_calls"] for r in stats["raptor"]["last_build"]["layers"]
    ]
    assert len(memory.retrievals) == 1  # the first tree's retrievals point at nodes that are gone
    layer = stats["raptor"]["last_build"]["layers"][0]
    assert (
        layer["clustering_s"] >= 0
        and layer["summarize_s"] >= 0
        and "L1/global" in layer["clustering"]["seeds"]
    )


def test_collapsed_retrieval_stops_at_the_first_overflow_and_carries_provenance():
    table = two_blobs()
    memory = make_raptor(table, clustering={"max_clusters": 3}, top_k=5)
    memory.insert(units([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)]))
    items = memory.retrieve("a1", 10**6)
    assert len(items) == 5 and all(i.source_unit_ids for i in items)
    summaries = [i for i in items if i.level > 0]
    assert all(len(i.source_unit_ids) > 1 for i in summaries)
    # a budget the second item overflows: the code's loop stops there even if a later one would fit
    budget = items[0].tokens + items[1].tokens - 1
    kept = memory.retrieve("a1", budget)
    assert [i.node_id for i in kept] == [items[0].node_id]


def test_top_k_null_fills_the_budget_with_every_node_ranked_by_cosine():
    table = two_blobs()
    memory = make_raptor(table, clustering={"max_clusters": 3}, top_k=None)
    memory.insert(units([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)]))
    everything = memory.retrieve("a1", 10**6)
    # no count cut: every node that passes the threshold (-1; the fake vectors are not unit-norm) comes back
    passing = int((memory.store.similarities(memory.embedder.embed(["a1"])[0]) >= -1).sum())
    assert len(everything) == passing > 10
    scores = [i.score for i in everything]
    assert scores == sorted(scores, reverse=True)
    budget = sum(i.tokens for i in everything[:12])
    assert [i.node_id for i in memory.retrieve("a1", budget)] == [
        i.node_id for i in everything[:12]
    ]
    assert memory.stats()["traversal"]["top_k"] is None


def test_the_default_summary_prompt_is_the_configured_one_and_keeps_the_papers_instruction():

    import yaml

    configured = yaml.safe_load((ROOT / "conf/memory/raptor.yaml").read_text())["summaries"][
        "prompt"
    ]
    assert Raptor().summaries.prompt == configured
    assert (
        "as many of their key details as you can" in configured
        and configured.count("{context}") == 1
    )


def test_top_down_descends_from_the_top_layer_to_the_leaves():
    table = two_blobs()
    memory = make_raptor(table, clustering={"max_clusters": 3}, traversal="top_down", top_k=1)
    memory.insert(units([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)]))
    items = memory.retrieve("b2", 10**6)
    levels = [i.level for i in items]
    assert (
        levels == sorted(levels, reverse=True)
        and levels[0] == memory.store.max_level()
        and levels[-1] == 0
    )


def test_save_and_load_answer_without_rebuilding_or_llm_calls(tmp_path):
    table = two_blobs()
    memory = make_raptor(table, clustering={"max_clusters": 3})
    memory.insert(units([f"a{i}" for i in range(15)] + [f"b{i}" for i in range(15)]))
    before = memory.retrieve("a4", 1000)
    memory.save(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} >= {
        "hierarchy.json",
        "embeddings.npy",
        "view.html",
    }
    llm = EchoSummariser()
    loaded = load_memory(tmp_path / "m", llm=llm, embedder=memory.embedder, tokenizer=WT)
    assert isinstance(loaded, Raptor) and loaded.summaries == memory.summaries
    assert [i.node_id for i in loaded.retrieve("a4", 1000)] == [i.node_id for i in before]
    assert llm.calls == 0 and len(loaded.builds) == 1 and len(loaded.units) == 30
    loaded.insert(
        [unit("b5", 30)]
    )  # a later insert rebuilds over every unit, the saved ones included
    loaded.ensure_built()
    assert len(loaded.store.leaves()) == 31 and len(loaded.builds) == 2


@pytest.mark.slow  # real UMAP: its numba compile costs ~15 s per process
def test_same_seed_same_tree_with_real_umap():
    vectors, _ = _planted(groups=2, per=12)
    table = {f"w{i}": v for i, v in enumerate(vectors)}
    trees = []
    for _ in range(2):
        memory = make_raptor(table, cls=Raptor, seed=5)
        memory.insert(units([f"w{i}" for i in range(24)]))
        memory.ensure_built()
        trees.append((list(memory.store.ids), [list(c) for c in memory.store.children]))
    assert trees[0] == trees[1] and len(trees[0][0]) > 24


def test_bad_settings_name_the_key():
    """The declared settings are checked before a run starts (the settings validator)."""
    from memharness.memsys.settings_check import check_target

    def problems(**settings):
        return check_target({"_target_": "memharness.memsys.raptor.Raptor", **settings}, "memory")

    assert (
        problems() == []
        and problems(top_k=None) == []
        and problems(top_k=None, traversal="collapsed_expand") == []
    )
    for kw, key in [
        ({"top_k": None, "traversal": "top_down"}, "memory.top_k"),
        ({"top_k": 0}, "memory.top_k"),
        ({"chunks": {"chunker": "words"}}, "memory.chunks.chunker"),
        ({"summaries": {"failure": "skip"}}, "memory.summaries.failure"),
        ({"summaries": {"prompt": "no placeholder"}}, "memory.summaries.prompt"),
        ({"clustering": {"num_layers": -1}}, "memory.clustering.num_layers"),
        ({"clustering": {"threshold": 1.5}}, "memory.clustering.threshold"),
        ({"traversal": "beam"}, "memory.traversal"),
    ]:
        found = problems(**kw)
        assert len(found) == 1 and found[0].startswith(key), found


def test_units_cut_mid_word_by_a_token_window_are_rejoined_exactly():
    """A loader's token windows (cl100k, 5 tokens) end mid-word; the chunker reads the document
    as it was before the cut, so no word is split and no space is invented at a joint."""
    from memharness.memsys.raptor.chunker import join_units
    from memharness.memsys.services.tokens import chunk_text
    from memharness.memsys.types import units_from_texts

    text = "The Newcomer Award went to 2-2 draws in Kazakhstan's tournaments. Next year too."
    cuts = chunk_text(text, get_tokenizer("cl100k_base"), 5)
    assert len(cuts) > 3 and "".join(cuts) == text
    assert any(
        not a[-1].isspace() and not b[0].isspace() for a, b in zip(cuts, cuts[1:], strict=False)
    )
    doc = units_from_texts(cuts, source_id="article", cut=True)
    assert join_units(doc)[0] == text
    chunk_words = " ".join(c.text for c in sentence_chunks(doc, WT, 100)).split()
    assert "Newcomer" in chunk_words and "2-2" in chunk_words and "Kazakhstan's" in chunk_words
    # units that are not cuts of one text (dialogue rounds) still get one space between them
    rounds = units_from_texts(["Hi there.", "How are you?"], source_id="chat")
    assert join_units(rounds)[0] == "Hi there. How are you?"


def test_summary_temperature_is_greedy_by_default_and_seeded_when_raised():
    """Ours: summaries at 0 (reproducible trees, cacheable calls); RAPTOR sends no temperature, so the
    API default applies: summaries.temperature=1.0 stands for it, each call carrying the run seed."""
    import yaml

    configured = yaml.safe_load((ROOT / "conf/memory/raptor.yaml").read_text())
    assert configured["summaries"]["temperature"] == Raptor().summaries.temperature == 0.0
    greedy = Raptor(seed=7).summary_request("text")
    assert (greedy.temperature, greedy.seed) == (0.0, None)
    warm = Raptor(seed=7, summaries={"temperature": 1.0}).summary_request("text")
    assert (warm.temperature, warm.seed) == (1.0, 7)
