"""GraphRAG-lite as a memory: store layout, local and global search, core traversals, persistence."""

from __future__ import annotations

import json

import pytest
from graphrag_fakes import TEXTS, StepLLM, responder, unit
from memharness.memsys.graphrag import GraphRAG
from memharness.memsys.graphrag.search_local import LocalSearch
from memharness.memsys.graphrag.to_store import add_entities
from memharness.memsys.testing.doubles import HashingEmbedder, WordTokenizer
from memharness.memsys.types import Question


def built(traversal="local", map_reply=None, **kw) -> tuple[GraphRAG, StepLLM, list]:
    llm = StepLLM(responder(map_reply))
    kw.setdefault("communities", {"max_cluster_size": 3, "use_lcc": False})
    memory = GraphRAG(
        llm=llm,
        embedder=HashingEmbedder(dim=128),
        tokenizer=WordTokenizer(),
        traversal=traversal,
        **kw,
    )
    units = [unit(t, i, source=f"d{i // 3}") for i, t in enumerate(TEXTS)]
    memory.insert(units)
    memory.ensure_built()
    return memory, llm, units


def test_store_layout_entities_are_atoms_communities_are_levels_above():
    memory, llm, units = built()
    store, unit_ids = memory.store, {u.id for u in units}
    entities = store.nodes_at_level(0)
    assert entities == list(range(len(entities))) and len(entities) > 10
    assert all(store.units[v] and set(store.units[v]) <= unit_ids for v in entities)
    assert all(store.texts[v].startswith(store.meta[v]["name"] + ": ") for v in entities)
    communities = [v for v in range(len(store)) if store.levels[v] > 0]
    levels = max(store.meta[v]["community_level"] for v in communities) + 1
    assert levels >= 2  # max_cluster_size=3 forces a split
    for v in communities:
        m = store.meta[v]
        assert store.levels[v] == levels - m["community_level"]
        assert all(store.levels[c] < store.levels[v] for c in store.children[v])
        kids_are_entities = {store.levels[c] == 0 for c in store.children[v]}
        assert len(kids_are_entities) == 1  # sub-communities or entities, never both
        assert set(store.source_units(v)) == {
            u for e in store.atoms_under(v) for u in store.units[e]
        }
        assert m["report_status"] == "parsed" and store.texts[v].startswith("# ")
    relations = [r for v in entities for r in store.meta[v].get("relations", [])]
    assert len(relations) == sum(len(e) for e in store.edges) // 2 > 0
    assert all(r["units"] and set(r["units"]) <= unit_ids for r in relations)
    # build calls: every extraction first pass, then every gleaning, then reports level by level
    assert llm.steps()[:2] == ["extract", "glean"] and set(llm.steps()[2:]) == {"report"}
    record = memory.build_record
    assert record["llm_calls"]["extract"] == len(units) and record["llm_calls"][
        "total"
    ] == llm.calls("extract") + llm.calls("glean") + llm.calls("report")
    assert record["failures"]["counts"] == {
        "unparsed_reply": 1
    }  # the gleaning reply "I found nothing."
    assert record["failures"]["samples"][0]["raw"] == "I found nothing."


@pytest.mark.parametrize("budget", [40, 120, 400])
def test_local_context_respects_every_budget_and_carries_provenance(budget):
    memory, _, units = built()
    search = LocalSearch(memory.index, memory.local_search, memory.tokenizer)
    result = search.search(
        memory.embedder.embed(["Who leads Velox Rail in Port Elden?"])[0], budget
    )
    b, used = result.budgets, result.used
    assert b == {
        "reports": int(budget * 0.15),
        "text_units": int(budget * 0.5),
        "entities_and_relationships": int(budget * 0.35),
    }
    assert used["reports"] <= b["reports"] and used["text_units"] <= b["text_units"]
    assert used["entities"] + used["relationships"] <= b["entities_and_relationships"]
    assert sum(i.tokens for i in result.items) == sum(used.values()) <= budget
    kinds = [i.node_id[:2] for i in result.items]
    order = {"c-": 0, "e-": 1, "r-": 2, "u-": 3}
    assert [order[k] for k in kinds] == sorted(
        order[k] for k in kinds
    )  # reports, entities, relationships, units
    unit_ids = {u.id for u in units}
    assert all(i.source_unit_ids and set(i.source_unit_ids) <= unit_ids for i in result.items)
    if budget >= 120:  # 10 x oversample 2 entities are selected (there are fewer here)
        assert {"e-", "u-"} <= set(kinds) and len(result.entities) == min(
            20, len(memory.index.entities)
        )


def test_local_context_nano_style_splits_what_the_entities_leave():
    memory, _, _ = built(
        local_search={"style": "nano", "top_k_entities": 5, "entity_threshold": 0.1}
    )
    search = LocalSearch(memory.index, memory.local_search, memory.tokenizer)
    result = search.search(memory.embedder.embed(["Tomas Berg Harbor Hawks"])[0], 200)
    rest = 200 - result.used["entities"]
    assert result.budgets["reports"] == int(rest * 3200 / 12000) and result.budgets[
        "text_units"
    ] == int(rest * 4000 / 12000)
    assert all(
        result.used[k] <= result.budgets[k] for k in ("reports", "relationships", "text_units")
    )
    assert len(result.entities) <= 5 and all(s >= 0.1 for _, s in result.entities)


def test_memory_search_returns_the_local_context_and_records_it():
    memory, _, _ = built()
    items = memory.search("Who coaches the Harbor Hawks?", 200)
    assert items and sum(i.tokens for i in items) <= 200
    assert memory.retrievals[-1]["question"] == "Who coaches the Harbor Hawks?"
    assert memory.stats()["graphrag"]["search"]["local"]["entities_selected"] == min(
        20, len(memory.index.entities)
    )


def test_core_traversals_run_on_the_same_store():
    memory, _, _ = built(traversal="collapsed", top_k=5)
    items = memory.search("Velox Rail", 10_000)
    assert len(items) == 5 and {i.level for i in items} >= {0}
    top = built(traversal="top_down", top_k=2)[0]
    picked = top.traverse("Harbor Hawks", top.embedder.embed(["Harbor Hawks"])[0])
    top_level = top.store.max_level()
    assert top.store.levels[picked[0][0]] == top_level  # starts from the coarsest communities
    assert any(top.store.levels[v] == 0 for v, _ in picked)  # and reaches entities


def map_reply_by_batch(request):
    table = request.messages[0][1].split("---Reports---\n", 1)[1]
    first_id = int(table.splitlines()[2].split("|")[0])
    return json.dumps(
        {
            "points": [
                {"description": f"useful fact [Data: Reports ({first_id})]", "score": 70},
                {"description": "nothing here", "score": 0},
            ]
        }
    )


def test_global_search_drops_zero_points_and_the_memory_answers():
    memory, llm, units = built(
        "global", map_reply=map_reply_by_batch, global_search={"map_batch_tokens": 50}
    )
    assert memory.answers_itself
    before = len(llm.batches)
    items = memory.search("What happened?", 1000)
    batches = memory._global_search().batches()
    assert len(batches) > 1 and all(b.tokens <= 50 or len(b.communities) == 1 for b in batches)
    assert llm.batches[before:] and [s for s, _ in llm.batches[-1]] == ["map"] * len(
        batches
    )  # one concurrent batch
    assert len(items) == len(batches) and all("nothing here" not in i.text for i in items)
    assert all(
        i.text.startswith("----Analyst ") and "Importance Score: 70" in i.text for i in items
    )
    node_of = {c.key: c.node for c in memory.index.communities}
    for item in items:  # provenance: the units of the report the point cites
        key = int(item.text.split("Reports (")[1].split(")")[0])
        assert item.source_unit_ids == memory.store.source_units(node_of[key])
    completion = memory.answer(
        Question(id="q", text="What happened?", answers=("x",), position=7), items
    )
    assert completion.text == "REDUCED" and "---Analyst reports---" in completion.extra["prompt"]
    g = memory.stats()["graphrag"]["search"]["global"]
    assert (
        g["map_calls"] == len(batches)
        and g["points_zero"] == len(batches)
        and g["points_kept"] == len(items)
    )
    assert g["reduce_calls"] == 1


def test_global_search_returns_the_no_data_answer_when_every_score_is_zero():
    zero = lambda request: json.dumps({"points": [{"description": "no", "score": 0}]})  # noqa: E731
    memory, llm, _ = built("global", map_reply=zero)
    items = memory.search("What happened?", 1000)
    calls = len(llm.batches)
    completion = memory.answer(
        Question(id="q", text="What happened?", answers=("x",), position=7), items
    )
    assert (
        items == [] and completion.text == memory.global_search["no_data_answer"] and completion.ok
    )
    assert len(llm.batches) == calls  # no reduce call
    assert memory.stats()["graphrag"]["search"]["global"]["no_data_answers"] == 1


def test_malformed_map_replies_are_counted_with_their_raw_text():
    replies = iter(
        [
            "not json",
            json.dumps({"points": [{"description": "x"}, {"description": "ok", "score": "55"}]}),
        ]
    )
    memory, _, _ = built(
        "global", map_reply=lambda r: next(replies, "null"), global_search={"map_batch_tokens": 60}
    )
    items = memory.search("What happened?", 1000)
    assert len(memory._global_search().batches()) > 2
    g = memory.stats()["graphrag"]
    assert (
        g["search"]["global"]["map_unparsed"] >= 1
        and g["search"]["global"]["points_malformed"] == 1
    )
    assert g["failure_counts"]["map_unparsed"] >= 1 and g["failure_counts"]["point_malformed"] == 1
    assert [s["raw"] for s in g["search"]["failures"]["samples"]][:2] == [
        "not json",
        "{'description': 'x'}",
    ]
    assert len(items) == 1 and "Importance Score: 55" in items[0].text


def test_multiple_choice_reduce_is_constrained_to_the_option_letters():
    memory, llm, _ = built("global", map_reply=map_reply_by_batch)
    q = Question(
        id="q", text="Which?", answers=(), position=7, options=("red", "blue"), gold_option=1
    )
    memory.answer(q, memory.search("Which?", 1000), multiple_choice=True)
    request = llm.batches[-1][0][1]
    assert request.choices == ("A", "B") and "(B) blue" in request.messages[0][1]


def test_multiple_choice_with_more_options_than_letters_is_refused_naming_the_question():
    memory, llm, _ = built("global", map_reply=map_reply_by_batch)
    options = tuple(f"option {i}" for i in range(11))
    q = Question(id="q11", text="Which?", answers=(), position=7, options=options, gold_option=10)
    items = memory.search("Which?", 1000)
    calls = len(llm.batches)
    with pytest.raises(ValueError, match=r"question q11 has 11 options; .* at most 10 options"):
        memory.answer(q, items, multiple_choice=True)
    assert len(llm.batches) == calls  # refused before any reduce call
    ten = Question(
        id="q10", text="Which?", answers=(), position=7, options=options[:10], gold_option=9
    )
    memory.answer(ten, items, multiple_choice=True)
    assert llm.batches[-1][0][1].choices == tuple("ABCDEFGHIJ")


def test_map_points_below_min_point_score_are_dropped_and_counted():
    def reply(request):
        return json.dumps(
            {
                "points": [
                    {"description": "strong", "score": 80},
                    {"description": "weak", "score": 30},
                    {"description": "none", "score": 0},
                ]
            }
        )

    memory, _, _ = built("global", map_reply=reply, global_search={"min_point_score": 50})
    items = memory.search("What happened?", 10**5)
    n = len(memory._global_search().batches())
    assert [i.text.rsplit("\n", 1)[1] for i in items] == ["strong"] * n
    g = memory.stats()["graphrag"]["search"]["global"]
    assert g["points"] == 3 * n and g["points_below_min_score"] == 2 * n and g["points_zero"] == n
    default, _, _ = built(
        "global", map_reply=reply
    )  # default 1: only the score-0 points go (GraphRAG)
    assert len(default.search("What happened?", 10**5)) == 2 * n


def test_reports_below_min_rating_are_left_out_of_the_map_and_counted():
    memory, _, _ = built("global", map_reply=map_reply_by_batch)
    ratings = sorted(c.rating for c in memory.index.communities)
    assert ratings[0] < ratings[-1], "the fake reports need different ratings for this test"
    everything = memory.stats()["graphrag"]["search"]["global_reports"]
    cut, _, _ = built(
        "global", map_reply=map_reply_by_batch, global_search={"min_rating": ratings[-1]}
    )
    sel = cut.stats()["graphrag"]["search"]["global_reports"]
    views = cut.index.communities
    mapped = [c for b in cut._global_search().batches() for c in b.communities]
    assert mapped and all(views[c].rating >= ratings[-1] for c in mapped)
    assert sel["reports_at_level"] == everything["reports_at_level"] == everything["reports_mapped"]
    assert sel["reports_below_min_rating"] == sel["reports_at_level"] - len(mapped) > 0
    assert sel["reports_mapped"] == len(mapped)


def test_the_build_provenance_names_the_graph_seed_levels_and_extraction_failures():
    memory, _, _ = built(communities={"max_cluster_size": 3, "use_lcc": False, "seed": 7})
    prov = json.loads(json.dumps(memory.stats()))["graphrag"]["provenance"]
    levels = (
        max(
            memory.store.meta[v]["community_level"]
            for v in range(len(memory.store))
            if memory.store.levels[v] > 0
        )
        + 1
    )
    assert (
        prov["graph_seed"] == 7
        and prov["leiden_backend"] == "igraph"
        and prov["community_levels"] == levels
    )
    assert sum(prov["communities_per_level"].values()) == len(memory.index.communities)
    assert prov["extraction_failures"] == {
        "call_failed": 0,
        "loop_unparsed": 0,
        "unparsed_reply": 1,
        "malformed_record": 0,
        "weight_defaulted": 0,
    }
    assert prov["extraction_calls"]["extract"] == len(memory.text_units)
    seeded, _, _ = built()
    assert (
        seeded.stats()["graphrag"]["provenance"]["graph_seed"] == seeded.seed
    )  # null communities.seed: the run's seed


def test_a_prompt_missing_a_required_placeholder_is_refused_naming_the_key():
    from memharness.memsys.settings_check import check_target

    def problems(**settings):
        return check_target(
            {"_target_": "memharness.memsys.graphrag.GraphRAG", **settings}, "memory"
        )

    for key, prompt, needed in [
        ("report_prompt", "Write a report. {max_report_length}", "input_text"),
        ("reduce_mc_prompt", "{report_data}", "options"),
        ("extract_prompt", "Extract: {entity_types}", "input_text"),
        ("summarize_prompt", "{entity_name}", "description_list"),
    ]:
        found = problems(prompts={key: prompt})
        expected = f"memory.prompts.{key}="
        assert len(found) == 1 and found[0].startswith(expected) and needed in found[0], found
    assert problems(prompts={"report_prompt": "{input_text} {unknown}"})[0].startswith(
        "memory.prompts.report_prompt="
    )


def test_save_and_load_give_the_same_answers_without_llm_calls(tmp_path):
    memory, _, _ = built()
    before = memory.search("Who audits Velox Rail?", 150)
    memory.save(tmp_path)
    again = GraphRAG.load(
        tmp_path, llm=None, embedder=HashingEmbedder(dim=128), tokenizer=WordTokenizer()
    )
    assert [i.node_id for i in again.search("Who audits Velox Rail?", 150)] == [
        i.node_id for i in before
    ]
    assert again.communities.max_cluster_size == 3 and again.build_record == memory.build_record
    assert (tmp_path / "view.html").exists()
    json.dumps(again.stats())  # memory_stats.json material


def test_bad_settings_are_refused_before_a_run_naming_the_setting(make_cfg):
    from memharness.eval.run.validate import config_problems

    assert (
        config_problems(make_cfg("memory=graphrag")) == []
        and config_problems(make_cfg("memory=graphrag_global")) == []
    )
    cases = {
        "memory.local_search.style=hybrid": "memory.local_search.style='hybrid': expected one of graphrag | nano",
        "memory.traversal=drift": "memory.traversal='drift'",
        "memory.communities.max_cluster_size=0": "memory.communities.max_cluster_size=0: expected an "
        "integer >= 1",
        "+memory.local_search.topk=3": "memory.local_search.topk",
        "memory.local_search.community_prop=0.6": "memory.local_search.text_unit_prop: community_prop + "
        "text_unit_prop must not exceed 1",
        "memory.chunks.size=100": "memory.chunks.overlap: must be smaller than chunks.size (100)",
        "memory.prompts.map_prompt='no table here'": "memory.prompts.map_prompt='no table here': "
        "expected null or a template "
        "string with {placeholders}: context_data",
        "memory.communities.backend=louvain": "memory.communities.backend='louvain'",
    }
    for override, expected in cases.items():
        problems = config_problems(make_cfg("memory=graphrag", override))
        assert any(p.startswith(expected) for p in problems), (override, problems)


def test_relationship_order_in_network_first_then_shared_neighbours_capped_per_entity():
    from memharness.memsys.graphrag.index import GraphIndex
    from memharness.memsys.graphrag.merge import Entity, Graph, Relation

    names = ["A", "B", "C", "D", "E"]
    graph = Graph(
        entities=[
            Entity(name=n, type="T", descriptions=[], chunks=[], frequency=1, description=n.lower())
            for n in names
        ]
    )
    for a, b in [(0, 1), (0, 2), (1, 2), (0, 3), (3, 4)]:
        graph.relations.append(
            Relation(
                source=a,
                target=b,
                descriptions=[],
                chunks=[],
                weight=1.0,
                description=f"{names[a]}-{names[b]}",
            )
        )
        graph.entities[a].degree += 1
        graph.entities[b].degree += 1
    for r in graph.relations:
        r.rank = graph.entities[r.source].degree + graph.entities[r.target].degree
    memory = GraphRAG(embedder=HashingEmbedder(dim=128), tokenizer=WordTokenizer())
    add_entities(memory.store, memory.embedder, graph)
    index = GraphIndex(memory.store, {})
    search = LocalSearch(index, {"top_k_relationships": 1}, WordTokenizer())
    order = [
        index.relation_text(index.relations[r]).split(": ")[1]
        for r in search.relationships_for([0, 1])
    ]
    # A-B joins two selected entities; C is linked to both (2 links) and comes before D (1 link);
    # out-of-network relationships are capped at top_k_relationships x 2 selected entities
    assert order == ["A-B", "A-C", "B-C"]


def test_a_loaded_memory_rebuilds_over_every_unit_it_was_built_from(tmp_path):
    memory, _, units = built()
    memory.save(tmp_path)
    again = GraphRAG.load(
        tmp_path,
        llm=StepLLM(responder()),
        embedder=HashingEmbedder(dim=128),
        tokenizer=WordTokenizer(),
    )
    assert [u.id for u in again.units] == [u.id for u in units] and again.units[0] == units[0]
    names = {again.store.meta[v]["name"] for v in again.index.entities}
    again.insert([unit("Zed Quill visits Port Elden.", len(units), source="d9")])
    again.ensure_built()
    after = {again.store.meta[v]["name"] for v in again.index.entities}
    assert names < after and {"ZED", "QUILL"} <= after  # a rebuild over the old and the new units
    assert again.stats()["units"] == len(units) + 1


def test_global_search_with_every_map_call_broken_is_an_error_not_an_answer():
    replies = iter([None, "not json"] * 20)  # failed calls and unreadable replies, alternating
    memory, llm, _ = built(
        "global", map_reply=lambda r: next(replies), global_search={"map_batch_tokens": 50}
    )
    q = Question(id="q", text="What happened?", answers=("x",), position=7)
    items = memory.search(q.text, 1000)
    n = len(memory._global_search().batches())
    assert n > 1 and items == []
    calls = len(llm.batches)
    completion = memory.answer(q, items)
    assert not completion.ok and completion.text == ""
    assert completion.error == f"global map: {n}/{n} batches failed or unparsed"
    assert len(llm.batches) == calls  # no reduce call
    g = memory.stats()["graphrag"]["search"]["global"]
    assert g["map_all_failed"] == 1 and "no_data_answers" not in g


def test_global_search_flags_an_answer_reduced_from_some_failed_map_batches():
    state = {"n": 0}

    def reply(request):  # the first map call of each question fails, the rest answer
        state["n"] += 1
        return None if state["n"] == 1 else map_reply_by_batch(request)

    memory, _, _ = built("global", map_reply=reply, global_search={"map_batch_tokens": 50})
    q = Question(id="q", text="What happened?", answers=("x",), position=7)
    items = memory.search(q.text, 1000)
    n = len(memory._global_search().batches())
    completion = memory.answer(q, items)
    assert completion.ok and completion.text == "REDUCED" and len(items) == n - 1
    assert completion.extra["sample_fields"] == {
        "partial": {"map_calls": n, "map_failed": 1, "map_unparsed": 0}
    }
    state["n"] = 5  # a later question whose map calls all work is not flagged
    again = memory.answer(
        Question(id="q2", text="Who?", answers=("x",), position=7), memory.search("Who?", 1000)
    )
    assert again.ok and "sample_fields" not in again.extra


def test_local_search_entity_ties_at_the_cut_are_broken_by_entity_order():
    from types import SimpleNamespace

    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(3, 40))
        sims = rng.integers(0, 3, n).astype(np.float32)
        k = int(rng.integers(1, n))
        index = SimpleNamespace(
            entities=list(range(100, 100 + n)), entity_similarities=lambda vector, sims=sims: sims
        )
        search = LocalSearch(index, {"top_k_entities": k, "oversample": 1}, WordTokenizer())
        want = sorted(range(n), key=lambda i: (-sims[i], i))[:k]
        assert [v - 100 for v, _ in search.select_entities(np.zeros(3))] == want


def test_report_rollup_entity_picks_each_entitys_deepest_community_all_levels_every_report():
    """GraphRAG v3.1.2's roll-up groups by community title, so every report at or above the level
    stays (parents with their children); the entity roll-up keeps one community per entity."""
    memory, _, _ = built()
    index = memory.index
    deepest = max(c.level for c in index.communities)
    entity = index.rollup_reports(deepest)
    every = index.rollup_reports(deepest, "all_levels")
    assert set(entity) < set(every)
    assert set(every) == {i for i, c in enumerate(index.communities) if c.has_report}
    for views in index.entity_communities.values():  # one report per entity in the entity roll-up
        assert len([i for i in views if i in set(entity)]) == 1
    with pytest.raises(ValueError, match="rollup"):
        index.rollup_reports(deepest, "title")
    wide, _, _ = built(traversal="global", global_search={"rollup": "all_levels"})
    narrow, _, _ = built(traversal="global")
    assert len(wide._global_search().batches()) >= len(narrow._global_search().batches())
    assert (
        wide._global_search().selection()["reports_at_level"]
        > (narrow._global_search().selection()["reports_at_level"])
    )
