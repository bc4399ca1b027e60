"""Prune-and-Grow with a scripted LLM: selection parsing, growth, stop rules, retries, evidence."""

from __future__ import annotations

import pytest
from cam_fakes import FakeLLM, four_groups, make_cam, passages, units
from memharness.memsys.cam.retrieval import parse_selection
from test_cam_memory import SETTINGS, WORDS


def memory(select=None, **kw):
    cam = make_cam(four_groups(), llm=FakeLLM(select=select), **{**SETTINGS, **kw})
    cam.insert(units(WORDS))
    cam.llm.batches.clear()
    return cam


def picker(*wanted: str):
    """Select every listed passage whose text is in ``wanted``."""
    return lambda q, texts: str([i + 1 for i, t in enumerate(texts) if t in wanted])


def test_parse_selection_strict_and_lenient():
    assert parse_selection("[3, 1, 3, 9]", 4) == [
        0,
        2,
    ]  # 1-based, deduplicated, out of range dropped
    assert parse_selection("Helpful: [2] because ...", 4, "lenient") == [1]
    assert parse_selection("Helpful: [2] because ...", 4, "strict") is None
    assert parse_selection(" [1, 2] ", 4, "strict") == [0, 1]
    assert parse_selection("[]", 4) == []
    for bad in ("none of them", "[one, two]", "{1: 2}", "3"):
        assert parse_selection(bad, 4) is None
    assert parse_selection("[[1]]", 4, "strict") is None and parse_selection(
        "[[1]]", 4, "lenient"
    ) == [0]
    with pytest.raises(ValueError, match="memory.selection.parse"):
        parse_selection("[1]", 4, "fuzzy")


def test_selected_nodes_grow_to_their_neighbours_and_children_until_the_candidates_stop_changing():
    cam = memory(picker("a2", "(a1 a2 a3 a4)"), top_k=4)
    items = cam.retrieve("a2", budget_tokens=1000)
    calls = cam.llm.selection_requests()
    first = passages(calls[0].messages[-1][1])
    assert first == ["a2", "a3", "a4", "(a1 a2 a3 a4)"]  # cosine top-s over all levels, best first
    # picked: chunk a2 (neighbours a1, a3, a4) and the summary (children a1..a4; same-level neighbours
    # "(a1 b1)" and "(b1 b2 b3 b4)"), listed in node order: level 0 by position, then level 1
    assert passages(calls[1].messages[-1][1]) == [
        "a1",
        "a2",
        "a3",
        "a4",
        "(a1 a2 a3 a4)",
        "(a1 b1)",
        "(b1 b2 b3 b4)",
    ]
    assert (
        len(calls) == 2
    )  # the second turn picked the same nodes: the third turn's candidates did not change
    assert [i.text for i in items] == ["a2", "(a1 a2 a3 a4)"]
    assert (
        cam.explorations[-1]
        | {"turns": 2, "selected": 4, "parse_failures": 0, "fallback_to_initial": False}
        == cam.explorations[-1]
    )


def test_turn_limit():
    cam = memory(picker("a2", "a1", "b1", "(a1 b1)"), selection={"max_turns": 1})
    cam.retrieve("a2", 1000)
    assert len(cam.llm.selection_requests()) == 1 and cam.explorations[-1]["turns"] == 1


def test_unparsable_selections_are_retried_within_the_tolerance_counted_then_the_initial_top_s_is_used():
    cam = memory(lambda q, texts: "I think the second one", selection={"tolerance": 2}, top_k=3)
    items = cam.retrieve("a2", 1000)
    requests = cam.llm.selection_requests()
    assert len(requests) == 3 and [r.seed for r in requests] == [
        None,
        1,
        2,
    ]  # each retry is a new call
    record = cam.explorations[-1]
    assert (
        record["parse_failures"],
        record["tolerance_exhausted"],
        record["fallback_to_initial"],
    ) == (3, True, True)
    assert passages(requests[0].messages[-1][1]) == ["a2", "a3", "a4"]
    assert [i.text for i in items] == ["a2 a3 a4"]  # the initial top-s, consecutive chunks merged
    stats = cam.stats()["prune_and_grow"]
    assert stats["parse_failures"] == 3 and stats["fallback_to_initial"] == 1


def test_one_unparsable_reply_then_a_list_continues_and_the_tolerance_spans_turns():
    replies = iter(["?", "[1]", "hmm", "[1]", "no"])
    cam = memory(lambda q, texts: next(replies), selection={"tolerance": 2}, top_k=3)
    cam.retrieve("a2", 1000)
    record = cam.explorations[-1]
    # turn 1: "?" then [1]; turn 2: "hmm" then [1]; turn 3: "no" with no tolerance left -> stop
    assert (
        record["selection_calls"] == 5
        and record["parse_failures"] == 3
        and record["tolerance_exhausted"]
    )
    assert not record["fallback_to_initial"]


def test_failed_selection_calls_are_counted_apart_from_parse_failures():
    cam = memory(selection={"tolerance": 0})

    def failing(requests, desc=None):
        from memharness.memsys.services.types import Completion

        return [Completion(text="", error="BackendError: down") for _ in requests]

    cam.llm.complete = failing
    cam.retrieve("a2", 1000)
    assert (
        cam.explorations[-1]["call_failures"] == 1 and cam.explorations[-1]["parse_failures"] == 0
    )


def test_empty_selection_ends_the_loop_and_falls_back_to_the_initial_nodes():
    cam = memory(lambda q, texts: "[]", top_k=2)
    items = cam.retrieve("c3", 1000)
    assert len(cam.llm.selection_requests()) == 1 and cam.explorations[-1]["fallback_to_initial"]
    assert [i.text for i in items] == ["c3 c4"]  # the initial top-2, merged


def test_evidence_in_code_order_with_consecutive_chunks_merged():
    cam = memory(picker("c1", "a4", "a2", "a3", "(c1 d1)"), selection={"max_turns": 1}, top_k=30)
    items = cam.retrieve("a2", 1000)
    assert [i.text for i in items] == ["a2 a3 a4", "c1", "(c1 d1)"]
    merged = items[0]
    ids = cam.store.ids
    assert merged.node_id == "+".join(ids[v] for v in (1, 2, 3)) and merged.level == 0
    assert (
        merged.source_unit_ids == tuple(cam.store.units[v][0] for v in (1, 2, 3))
        and merged.tokens == 3
    )
    assert items[2].source_unit_ids == (cam.store.units[8][0], cam.store.units[12][0])
    assert cam.retrievals[-1]["nodes"] == [
        1,
        2,
        3,
        8,
        20,
    ]  # every evidence node (20: "(c1 d1)"), for the view
    assert cam.retrievals[-1]["node_ids"] == [
        cam.store.ids[v] for v in (1, 2, 3, 8, 20)
    ]  # stable across save/load
    separate = memory(
        picker("c1", "a4", "a2", "a3", "(c1 d1)"),
        selection={"max_turns": 1},
        top_k=30,
        evidence={"merge_consecutive": False},
    )
    assert [i.text for i in separate.retrieve("a2", 1000)] == ["a2", "a3", "a4", "c1", "(c1 d1)"]


def test_evidence_is_cut_to_the_token_budget_in_evidence_order():
    cam = memory(picker("c1", "a2", "(c1 c2 c3 c4)"), selection={"max_turns": 1}, top_k=30)
    items = cam.retrieve("a2", budget_tokens=2)
    assert [i.text for i in items] == ["a2", "c1"]


@pytest.mark.parametrize("traversal", ["top_down", "collapsed"])
def test_table3_retrieval_strategies_make_no_llm_call(traversal):
    cam = memory(traversal=traversal, top_k=2)
    items = cam.retrieve("a2", 1000)
    assert items and cam.llm.batches == []
    if (
        traversal == "top_down"
    ):  # from the top level down: 2 level-2 nodes, then their best children, ...
        assert items[0].level == 2
    else:
        assert items[0].text == "a2"


def test_stop_when_paper_ends_once_the_activation_set_stops_growing_code_once_the_candidates_repeat():
    def narrowing():  # turn 1 picks a2 and its summary; later turns pick a2 alone (nothing new)
        seen = []

        def select(q, texts):
            seen.append(texts)
            return (
                picker("a2", "(a1 a2 a3 a4)")(q, texts)
                if len(seen) == 1
                else picker("a2")(q, texts)
            )

        return select

    paper = memory(narrowing(), top_k=4)
    assert paper.selection.stop_when == "no_growth"  # the paper's rule is the default
    paper.retrieve("a2", 1000)
    assert len(paper.llm.selection_requests()) == 2  # turn 2 added nothing to P: stop
    code = memory(
        narrowing(),
        top_k=4,
        selection={"stop_when": "candidates_unchanged", "grow_scope": "picks"},
    )
    code.retrieve("a2", 1000)
    # turn 2's pick (a2) grows to a1..a4, a new candidate set, so turn 3 runs; its pick grows to the same set
    assert len(code.llm.selection_requests()) == 3
    assert [e["selected"] for e in (paper.explorations[-1], code.explorations[-1])] == [3, 4]


def test_selection_calls_default_to_the_released_codes_512_token_cap():
    cam = memory(picker("a2"))
    cam.retrieve("a2", 1000)
    assert {r.max_tokens for r in cam.llm.selection_requests()} == {512}


def by_turn(*turns: tuple[str, ...]):
    """Turn i picks the passages listed in ``turns[i]`` (nothing once the script runs out)."""
    seen = []

    def select(q, texts):
        seen.append(texts)
        wanted = turns[len(seen) - 1] if len(seen) <= len(turns) else ()
        return picker(*wanted)(q, texts)

    return select


def test_the_answerer_receives_every_node_activated_in_any_turn():
    """Turn 1 activates the summary (a1 a2 a3 a4), turn 2 only its neighbour (a1 b1), turn 3 only
    that one's child b1, turn 4 nothing. The evidence is all three (in node order), neither the last
    turn's picks nor the first's; the picks are candidates under either grow scope."""
    for scope in ("activated", "picks"):
        script = (("(a1 a2 a3 a4)",), ("(a1 b1)",), ("b1",))
        cam = memory(
            by_turn(*script),
            top_k=4,
            evidence={"merge_consecutive": False},
            selection={"grow_scope": scope},
        )
        items = cam.retrieve("a2", 1000)
        assert len(cam.llm.selection_requests()) == 4, scope
        assert [i.text for i in items] == ["b1", "(a1 a2 a3 a4)", "(a1 b1)"], scope
        assert cam.explorations[-1]["selected"] == 3
        assert not cam.explorations[-1]["fallback_to_initial"]


def test_grow_scope_paper_grows_from_every_activated_node_code_from_the_last_picks():
    """Turn 1 activates the summary (a1 a2 a3 a4), turn 2 only its neighbour (a1 b1). The paper's scope
    lists the first summary's children a2..a4 again in turn 3; the code's lists only (a1 b1)'s
    children and neighbours."""
    script = (("(a1 a2 a3 a4)",), ("(a1 b1)",), ())
    third = {}
    for scope in ("activated", "picks"):
        cam = memory(by_turn(*script), top_k=4, selection={"grow_scope": scope})
        cam.retrieve("a2", 1000)
        third[scope] = passages(cam.llm.selection_requests()[2].messages[-1][1])
    assert memory().selection.grow_scope == "activated"  # the paper's scope is the default
    assert {"a2", "a3", "a4", "b1", "(a1 b1)"} <= set(third["activated"])
    assert third["picks"] == ["a1", "b1", "(a1 a2 a3 a4)", "(a1 b1)", "(b1 b2 b3 b4)"]
    with pytest.raises(ValueError, match="memory.selection.grow_scope"):
        memory(by_turn(*script), selection={"grow_scope": "everything"}).retrieve("a2", 1000)


def test_evidence_order_levels_down_keeps_summaries_when_the_budget_overflows():
    """The code's order (chunks, then summaries) cuts the summaries first; levels_down keeps them."""
    wanted = ("c1", "a2", "(c1 c2 c3 c4)")
    up = memory(picker(*wanted), selection={"max_turns": 1}, top_k=30)
    down = memory(
        picker(*wanted), selection={"max_turns": 1}, top_k=30, evidence={"order": "levels_down"}
    )
    assert up.evidence.order == "levels_up"  # the code's order is the default
    assert [i.text for i in up.retrieve("a2", 1000)] == ["a2", "c1", "(c1 c2 c3 c4)"]
    assert [i.text for i in down.retrieve("a2", 1000)] == ["(c1 c2 c3 c4)", "a2", "c1"]
    assert [i.text for i in up.retrieve("a2", 4)] == ["a2", "c1"]
    assert [i.text for i in down.retrieve("a2", 4)] == ["(c1 c2 c3 c4)"]
