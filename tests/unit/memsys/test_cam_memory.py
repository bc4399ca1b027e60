"""CAM's construction on hand-made embeddings: overlapping communities, stop rules, the online batch
update touching only the affected set, offline = one batch, variants, persistence, chunking."""

from __future__ import annotations

import pytest
from cam_fakes import FakeLLM, four_groups, make_cam, unit, units
from memharness.memsys.cam import CAM
from memharness.memsys.cam.settings import Evidence, Network, Selection
from memharness.memsys.hierarchy import load_memory
from memharness.memsys.testing.doubles import WordTokenizer

WORDS = [f"{g}{i}" for g in "abcd" for i in range(1, 5)]
# cosine only: the groups of four_groups() decide the edges
SETTINGS = dict(network={"alpha": 1.0, "theta": 0.7})


def structure(cam: CAM) -> list[tuple]:
    s = cam.store
    return [
        (
            s.ids[v],
            s.levels[v],
            s.texts[v],
            tuple(s.ids[c] for c in s.children[v]),
            s.units[v],
            tuple(sorted((s.ids[u], round(w, 6)) for u, w in s.edges[v].items())),
        )
        for v in range(len(s))
    ]


def by_text(cam: CAM) -> dict[str, int]:
    return {t: v for v, t in enumerate(cam.store.texts)}


@pytest.fixture
def built():
    cam = make_cam(four_groups(), **SETTINGS)
    cam.insert(units(WORDS))
    return cam


def test_bridge_chunks_feed_two_communities_and_the_levels_stop_by_the_code_rules(built):
    s, at = built.store, by_text(built)
    assert s.edges[at["a1"]].keys() == {
        at["a2"],
        at["a3"],
        at["a4"],
        at["b1"],
    }  # a1-b1 bridge, no a1-b2
    level1 = {s.texts[v] for v in s.nodes_at_level(1)}
    assert level1 == {
        "(a1 a2 a3 a4)",
        "(a1 b1)",
        "(b1 b2 b3 b4)",
        "(c1 c2 c3 c4)",
        "(c1 d1)",
        "(d1 d2 d3 d4)",
    }
    assert {s.texts[p] for p in s.parents[at["a1"]]} == {
        "(a1 a2 a3 a4)",
        "(a1 b1)",
    }  # overlapping membership
    assert [len(s.parents[at[w]]) for w in ("a1", "b1", "c1", "d1", "a2")] == [2, 2, 2, 2, 1]
    # level 1: {A, AB, B} and {C, CD, D} are triangles -> two communities -> level 2 with two nodes, no
    # edge between them -> 2 communities >= 2 nodes: the stop rule holds, no level 3
    assert {s.texts[v] for v in s.nodes_at_level(2)} == {
        "((a1 a2 a3 a4) (a1 b1) (b1 b2 b3 b4))",
        "((c1 c2 c3 c4) (c1 d1) (d1 d2 d3 d4))",
    }
    assert s.max_level() == 2 and built.batches[0]["levels"][-1]["stopped"]
    assert built.summary_calls == 8 and built.stats()["structure"]["multi_parent_nodes"] == 4
    # all of a level is one concurrent batch
    assert [len(b) for b in built.llm.batches] == [6, 2]
    assert built.store.source_units(at["(a1 b1)"]) == (unit("a1", 0).id, unit("b1", 4).id)


def test_no_edges_means_every_chunk_is_its_own_community_and_no_level_is_built():
    cam = make_cam(four_groups(), network={"alpha": 1.0, "theta": 0.999})
    cam.insert(units(["a1", "b1", "c1"]))
    assert cam.store.max_level() == 0 and cam.summary_calls == 0
    assert cam.batches[0]["levels"][0] == {
        **cam.batches[0]["levels"][0],
        "communities": 3,
        "stopped": True,
    }


def test_max_level_caps_the_hierarchy():
    cam = make_cam(four_groups(), clustering={"max_level": 1}, **SETTINGS)
    cam.insert(units(WORDS))
    assert cam.store.max_level() == 1 and cam.summary_calls == 6


def test_offline_build_is_the_online_update_fed_one_batch(built):
    offline = make_cam(four_groups(), construction="offline", **SETTINGS)
    offline.insert(units(WORDS))
    assert offline.store.is_empty()  # offline: built at the first retrieval
    offline.ensure_built()
    assert structure(offline) == structure(built)
    assert offline.rebuilds and offline.summary_calls == built.summary_calls


def test_a_batch_touching_one_community_resummarises_it_and_its_ancestors_only(built):
    before = {built.store.ids[v]: built.store.texts[v] for v in range(len(built.store))}
    built.llm.batches.clear()
    built.insert([unit("a5", 16)])
    calls = built.llm.summary_requests()
    assert calls == [
        ["a1", "a2", "a3", "a4", "a5"],
        ["(a1 a2 a3 a4 a5)", "(a1 b1)", "(b1 b2 b3 b4)"],
    ]
    assert built.batches[-1]["llm_calls"] == 2
    after = {built.store.ids[v]: built.store.texts[v] for v in range(len(built.store))}
    changed = {i for i in after if before.get(i) != after[i]}
    assert {after[i] for i in changed} == {
        "a5",
        "(a1 a2 a3 a4 a5)",
        "((a1 a2 a3 a4 a5) (a1 b1) (b1 b2 b3 b4))",
    }
    assert set(before) <= set(after)  # the updated supernodes kept their ids
    level0 = built.batches[-1]["levels"][0]
    assert (
        level0["affected_nodes"] == 5 and level0["new_replicas"] == 1 and level0["summarised"] == 1
    )


def test_online_batches_that_fill_in_a_group_rebuild_only_what_changes():
    cam = make_cam(four_groups(), **SETTINGS)
    cam.insert(units(["a1", "a2", "c1", "c2"]))
    first = cam.summary_calls
    assert {cam.store.texts[v] for v in cam.store.nodes_at_level(1)} == {"(a1 a2)", "(c1 c2)"}
    cam.insert(units(["c3", "c4"], start=4))  # touches the c community only
    assert cam.llm.summary_requests()[first:] == [["c1", "c2", "c3", "c4"]]
    assert "(a1 a2)" in cam.store.texts


def test_a_failed_summary_is_counted_and_keeps_the_members_text():
    cam = make_cam(four_groups(), llm=FakeLLM(fail_summary_when="b2"), **SETTINGS)
    cam.insert(units(WORDS))
    failed = [v for v in range(len(cam.store)) if cam.store.meta[v].get("summary_failed")]
    # the stand-in is the members' text cut to the summary length (the test tokenizer joins words
    # with spaces); it still contains "b2", so the summary above it fails too
    assert [cam.store.texts[v] for v in failed] == [
        "b1 b2 b3 b4",
        "(a1 a2 a3 a4) (a1 b1) b1 b2 b3 b4",
    ]
    assert cam.summary_failures == 2 and cam.stats()["construction"]["summary_failures"] == 2


def failed_nodes(cam: CAM) -> int:
    return sum(1 for m in cam.store.meta if m.get("summary_failed"))


def test_degradation_counts_the_failed_summaries_in_the_memory_not_every_failure_so_far():
    # offline: every rebuild starts from scratch, so earlier builds' failures no longer count
    cam = make_cam(
        four_groups(), llm=FakeLLM(fail_summary_when="b2"), construction="offline", **SETTINGS
    )
    for start in (0, 8):
        cam.insert(units(WORDS[start : start + 8], start=start))
        cam.ensure_built()
        assert failed_nodes(cam) > 0 and cam.degraded == {"summary_failed": failed_nodes(cam)}
    assert cam.stats()["construction"]["summary_failures"] > failed_nodes(
        cam
    )  # the cost counter is cumulative
    # online: a community whose summary failed and is later re-summarised successfully stops counting
    online = make_cam(four_groups(), llm=FakeLLM(fail_summary_when="a2"), **SETTINGS)
    online.insert(units(["a1", "a2", "c1", "c2"]))
    assert online.degraded == {"summary_failed": 1} == {"summary_failed": failed_nodes(online)}
    online.llm.fail_summary_when = None
    online.insert(units(["a3", "a4"], start=4))  # the a community changes and is re-summarised
    assert failed_nodes(online) == 0 and online.degraded == {}
    assert online.stats()["degradation"] == {} and online.summary_failures == 1


def test_variants_no_hierarchy_and_no_ego_splitting():
    flat = make_cam(four_groups(), hierarchy=False, **SETTINGS)
    flat.insert(units(WORDS))
    assert flat.store.max_level() == 0 and flat.summary_calls == 0
    assert sum(len(e) for e in flat.store.edges) // 2 == 26
    disjoint = make_cam(four_groups(), ego_splitting=False, **SETTINGS)
    disjoint.insert(units(WORDS))
    assert disjoint.stats()["structure"]["multi_parent_nodes"] == 0
    assert disjoint.store.nodes_at_level(1)


def test_save_and_load_restore_the_structure_and_the_online_state(built, tmp_path):
    built.save(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} >= {
        "hierarchy.json",
        "embeddings.npy",
        "view.html",
    }
    loaded = load_memory(
        tmp_path / "m", llm=FakeLLM(), embedder=built.embedder, tokenizer=WordTokenizer()
    )
    assert isinstance(loaded, CAM) and structure(loaded) == structure(built)
    assert loaded.network.theta == 0.7 and loaded.network.alpha == 1.0
    built.insert([unit("a5", 16)])
    loaded.insert([unit("a5", 16)])
    assert (
        structure(loaded) == structure(built)
        and loaded.llm.summary_requests() == built.llm.summary_requests()[-2:]
    )


def test_pack_chunking_joins_paragraphs_of_one_source_and_keeps_every_unit_id():
    table = {w: [1.0, 0.0] for w in ("one", "two", "three")}
    cam = make_cam(table, chunks={"mode": "pack", "size": 4}, hierarchy=False)
    batch = [
        unit("one two", 0, "s"),
        unit("three", 1, "s"),
        unit("one\ntwo three one", 2, "s"),
        unit("two", 3, "t"),
        unit("", 4, "t"),
    ]
    cam.insert(batch)
    s = cam.store
    assert [s.texts[v] for v in range(len(s))] == ["one two\nthree\none", "two three one", "two"]
    assert s.units[0] == (batch[0].id, batch[1].id, batch[2].id) and s.units[1] == (batch[2].id,)
    assert cam.batches[0]["units_without_text"] == 1


def test_bad_settings_name_the_key():
    """The declared settings are checked before a run starts (the settings validator)."""
    from memharness.memsys.settings_check import check_target

    def problems(**settings):
        return check_target({"_target_": "memharness.memsys.cam.CAM", **settings}, "memory")

    assert problems() == [] and problems(traversal="top_down", network={"theta": 0.7}) == []
    assert problems(construction="streaming")[0].startswith(
        "memory.construction='streaming': expected one of online"
    )
    assert problems(traversal="bfs")[0].startswith(
        "memory.traversal='bfs': expected one of collapsed"
    )
    assert "prune_and_grow" in problems(traversal="bfs")[0]
    assert problems(chunks={"mode": "sentences"})[0].startswith("memory.chunks.mode='sentences'")
    assert problems(selection={"grow_scope": "picks"}, evidence={"order": "levels_down"}) == []
    assert problems(selection={"grow_scope": "all"})[0].startswith(
        "memory.selection.grow_scope='all': expected one of"
    )
    assert problems(evidence={"order": "score"})[0].startswith("memory.evidence.order='score'")
    assert problems(summaries={"prompt": "no placeholder"})[0].startswith("memory.summaries.prompt")
    assert problems(network={"alpha": 1.5}) == [
        "memory.network.alpha=1.5: expected a number in [0, 1]"
    ]


def _unit_vec(*xs: float) -> list[float]:
    norm = sum(x * x for x in xs) ** 0.5
    return [x / norm for x in xs]


XYZ = {
    "x1": _unit_vec(1, 0, 0.1, 0),
    "x2": _unit_vec(1, 0, 0, 0.1),
    "w": _unit_vec(1, 0, 0.05, 0.05),
    "y1": _unit_vec(0, 1, 0.1, 0),
    "z": _unit_vec(1, 1, 0.05, 0.05),
}  # z is at cosine 0.71 to both sides


def levels(cam: CAM) -> list[set[str]]:
    return [
        {cam.store.texts[v] for v in cam.store.nodes_at_level(lv)}
        for lv in range(cam.store.max_level() + 1)
    ]


@pytest.mark.parametrize("ego_splitting", [True, False])
def test_vanished_communities_lose_their_supernode_and_the_stop_rule_is_rechecked(ego_splitting):
    cam = make_cam(XYZ, network={"alpha": 1.0, "theta": 0.6}, ego_splitting=ego_splitting)
    cam.insert(units(["x1", "x2", "w"]))
    cam.insert(units(["y1"], start=3))
    assert levels(cam) == [
        {"x1", "x2", "w", "y1"},
        {"(x1 x2 w)", "(y1)"},
    ]  # two unlinked level-1 nodes: stop
    cam.insert(units(["z"], start=4))
    record = cam.batches[-1]["levels"]
    if (
        ego_splitting
    ):  # z bridges both sides and belongs to both; level 1 gets linked, so level 2 appears
        assert levels(cam) == [
            {"x1", "x2", "w", "y1", "z"},
            {"(x1 x2 w z)", "(y1 z)"},
            {"((x1 x2 w z) (y1 z))"},
        ]
        assert (record[0]["removed"], record[0]["new"]) == (1, 1)  # "(y1)" replaced by "(y1 z)"
    else:  # one disjoint community swallows y1: "(y1)" is removed
        assert levels(cam) == [{"x1", "x2", "w", "y1", "z"}, {"(x1 x2 w y1 z)"}]
        assert (record[0]["removed"], record[0]["new"]) == (1, 0)
    assert "(y1)" not in cam.store.texts and len(set(cam.store.ids)) == len(cam.store)


@pytest.mark.parametrize("construction", ["online", "offline"])
def test_questions_between_batches_keep_pointing_at_the_nodes_they_retrieved(construction):
    cam = make_cam(
        four_groups(), construction=construction, traversal="collapsed", top_k=2, **SETTINGS
    )
    assert cam.stats()["construction"]["chunks"] == 0 and cam.retrieve("a2", 100) == []
    cam.insert(units(WORDS[:8]))
    first = [i.node_id for i in cam.retrieve("a2", 100)]
    cam.insert(units(WORDS[8:], start=8))
    cam.retrieve("c2", 100)
    kept = [[cam.store.ids[v] for v in r["nodes"]] for r in cam.retrievals]
    assert kept[0] == first and [cam.store.texts[v] for v in cam.retrievals[1]["nodes"]][0] == "c2"
    assert (
        cam.retrievals[0]["node_ids"] == first
    )  # the ids recorded at retrieval time name the same nodes


def test_a_retrieval_record_drops_the_score_of_a_vanished_node_with_the_node():
    cam = make_cam(XYZ, network={"alpha": 1.0, "theta": 0.6}, traversal="collapsed", top_k=10)
    cam.insert(units(["x1", "x2", "w"]))
    cam.insert(units(["y1"], start=3))
    cam.retrieve("y1", 1000)
    record = cam.retrievals[0]
    scored = {cam.store.ids[v]: s for v, s in zip(record["nodes"], record["scores"], strict=False)}
    gone = cam.store.ids[cam.store.texts.index("(y1)")]
    assert gone in scored and len(scored) == len(record["nodes"]) == len(record["scores"])
    cam.insert(units(["z"], start=4))  # "(y1)" is replaced by "(y1 z)"
    assert gone not in cam.store.ids
    ids = [cam.store.ids[v] for v in record["nodes"]]
    assert len(record["scores"]) == len(record["nodes"]) == len(scored) - 1
    assert dict(zip(ids, record["scores"], strict=False)) == {
        i: s for i, s in scored.items() if i != gone
    }


def test_online_label_scope_sets_which_replicas_a_batch_relabels(monkeypatch):
    from memharness.memsys.cam import develop

    ripples, active = [], {}
    real = develop.propagate_labels
    monkeypatch.setattr(
        develop,
        "propagate_labels",
        lambda *a, ripple=True: ripples.append((scope, ripple)) or real(*a, ripple=ripple),
    )
    for scope in ("ripple", "affected", "level"):
        cam = make_cam(four_groups(), clustering={"online_label_scope": scope}, **SETTINGS)
        cam.insert(units(["a1", "a2", "c1", "c2"]))
        cam.insert(units(["c3", "c4"], start=4))  # touches the c community only
        active[scope] = cam.batches[-1]["levels"][0]["active_replicas"]
        assert {cam.store.texts[v] for v in cam.store.nodes_at_level(1)} == {
            "(a1 a2)",
            "(c1 c2 c3 c4)",
        }
    # level: all six chunks' replicas; the local scopes leave the untouched a community alone
    assert active == {"ripple": 4, "affected": 4, "level": 6}
    # only affected keeps the active set from growing (tests/unit/memsys/test_cam_clustering.py shows the difference)
    assert {scope: r for scope, r in ripples} == {"ripple": True, "affected": False, "level": True}


def test_pack_cuts_a_long_paragraph_back_to_sentence_marks_and_windows_a_markless_rest():
    from memharness.memsys.cam.chunking import chunks_of
    from memharness.memsys.testing.doubles import WordTokenizer

    batch = [
        unit("one two. three four! five six seven eight nine. ten", 0, "s"),
        unit("eleven", 1, "s"),
    ]
    chunks = chunks_of(batch, "pack", WordTokenizer(), 4)
    # trimmed back from the end one mark at a time until 4 tokens fit ("nine." is never a cut: it is
    # the last mark of a text that does not end with one); the rest has one mark left, so it gets a
    # token window (ours); the last piece, cut exactly, stays open for the next paragraph
    assert [c.text for c in chunks] == [
        "one two. three four!",
        " five six seven eight",
        " nine. ten\neleven",
    ]
    assert chunks[-1].units == (batch[0].id, batch[1].id)
    assert "".join(c.text for c in chunks) == "\n".join(u.text for u in batch)


def test_pack_fills_the_open_chunk_with_the_first_sentences_of_an_over_long_paragraph():
    """The released chunk_text joins an over-long paragraph to the open chunk before cutting, so three
    paragraphs (2, 6, 3 words; chunks of 4) give 3 chunks, where closing the open chunk first gave 4
    ("Alpha beta." | "One two. Three four." | "Five six." | "Gamma delta epsilon.")."""
    from memharness.memsys.cam.chunking import chunks_of
    from memharness.memsys.testing.doubles import WordTokenizer

    batch = [
        unit("Alpha beta.", 0, "s"),
        unit("One two. Three four. Five six.", 1, "s"),
        unit("Gamma delta epsilon.", 2, "s"),
    ]
    chunks = chunks_of(batch, "pack", WordTokenizer(), 4)
    assert [c.text for c in chunks] == [
        "Alpha beta.\nOne two.",
        " Three four. Five six.",
        "Gamma delta epsilon.",
    ]
    assert [c.units for c in chunks] == [
        (batch[0].id, batch[1].id),
        (batch[1].id,),
        (batch[2].id,),
    ]


# App. E: "We select the weighting coefficient α from {0.5, 0.7, 0.9}, the decay rate σ from
# {1.0, 1.5, 2.0}, and the similarity threshold θ from {0.5, 0.7} ... we set k to 10, and for memory
# retrieval, we set s to 5."
PAPER_GRID = {"alpha": {0.5, 0.7, 0.9}, "sigma": {1.0, 1.5, 2.0}, "theta": {0.5, 0.7}}
PAPER_FIXED = {"k": 10, "top_k": 5}


def test_shipped_defaults_lie_in_the_papers_grids_in_the_yaml_and_the_constructor_alike():
    """conf/memory/cam.yaml and CAM's own defaults agree, and each is a value the paper uses."""
    import inspect

    from omegaconf import OmegaConf
    from paths import ROOT

    shipped = OmegaConf.load(ROOT / "conf" / "memory" / "cam.yaml")
    params = inspect.signature(CAM).parameters
    network, selection = Network(), Selection()
    for key, grid in PAPER_GRID.items():
        assert shipped.network[key] in grid and getattr(network, key) == shipped.network[key], key
    for key, value in PAPER_FIXED.items():
        assert shipped[key] == value and params[key].default == value, key
    # and the paper's rules where it and the code differ
    assert (
        shipped.selection.stop_when,
        shipped.selection.grow_scope,
        shipped.network.clip_cosine,
    ) == ("no_growth", "activated", False)
    assert all(getattr(selection, k) == shipped.selection[k] for k in ("stop_when", "grow_scope"))
    assert Evidence().order == shipped.evidence.order


def test_pack_reads_a_loaders_token_windows_as_the_text_they_were_cut_from():
    """NovelQA's units are hard token windows cut mid-sentence (here mid-word); pack rejoins them
    exactly, so its chunks are those of the whole book, paragraphs and sentences whole."""
    from memharness.memsys.cam.chunking import chunks_of
    from memharness.memsys.testing.doubles import WordTokenizer
    from memharness.memsys.types import units_from_texts

    book = "Ada met Bo. They walked far.\nRain fell all day. Bo slept."
    windows = ["Ada met Bo. They wal", "ked far.\nRain fell all", " day. Bo slept."]
    assert "".join(windows) == book
    cut = units_from_texts(windows, source_id="novel", cut=True)
    chunks = chunks_of(cut, "pack", WordTokenizer(), 6)
    whole = chunks_of(units_from_texts([book], source_id="novel"), "pack", WordTokenizer(), 6)
    assert [c.text for c in chunks] == [c.text for c in whole]
    assert [c.text for c in chunks] == [
        "Ada met Bo. They walked far.",
        "Rain fell all day. Bo slept.",
    ]
    assert [c.units for c in chunks] == [
        (cut[0].id, cut[1].id),
        (cut[1].id, cut[2].id),
    ]
