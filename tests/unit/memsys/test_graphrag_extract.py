"""GraphRAG-lite extraction and merging with hand-written extraction replies (no model)."""

from __future__ import annotations

import pytest
from graphrag_fakes import StepLLM, input_text, unit
from memharness.memsys.extraction.chunks import make_text_units
from memharness.memsys.extraction.entities import (
    ExtractSettings,
    parse_json_reply,
    parse_records,
    run_extraction,
)
from memharness.memsys.extraction.parsing import FailureLog
from memharness.memsys.extraction.prompts import default_prompts
from memharness.memsys.graphrag.merge import SummarySettings, merge_graph, summarize_descriptions
from memharness.memsys.services.types import Completion
from memharness.memsys.testing.doubles import WordTokenizer

U0 = "Ana Ruiz leads Velox Rail. Velox Rail builds the tram in Port Elden."
U1 = "Velox Rail signed with Port Elden. Ana Ruiz visited Port Elden."
U2 = "The weather was fine."
REPLIES = {
    ("extract", U0): '("entity"<|>Ana Ruiz<|>person<|>Ana Ruiz leads Velox Rail)\n##\n'
    '("entity"<|>VELOX RAIL<|>ORGANIZATION<|>Velox Rail is a rail company)\n##\n'
    '("entity"<|>"PORT ELDEN"<|>GEO<|>Port Elden is a town)\n##\n'
    '("relationship"<|>ANA RUIZ<|>VELOX RAIL<|>Ana Ruiz leads Velox Rail<|>8)\n##\n'
    '("relationship"<|>VELOX RAIL<|>PORT ELDEN<|>Velox Rail builds the tram in Port Elden<|>5)\n'
    "<|COMPLETE|>",
    (
        "glean",
        U0,
    ): '("relationship"<|>PORT ELDEN<|>VELOX RAIL<|>Port Elden hired Velox Rail<|>2)\n<|COMPLETE|>',
    (
        "extract",
        U1,
    ): '("entity"<|>VELOX RAIL<|>ORGANIZATION<|>Velox Rail signed a contract with Port Elden)##'
    '("entity"<|>PORT ELDEN<|>GEO<|>Port Elden signed with Velox Rail)##'
    '("entity"<|>ANA RUIZ<|>PERSON<|>Ana Ruiz visited Port Elden)##'
    '("relationship"<|>VELOX RAIL<|>PORT ELDEN<|>Velox Rail signed with Port Elden<|>high)##'
    '("relationship"<|>ANA RUIZ<|>GHOST<|>Ana met a ghost<|>3)\n'
    "Here are the results",
    ("glean", U1): None,  # the gleaning call fails
    ("extract", U2): "Nothing to extract here.",
    ("glean", U2): "<|COMPLETE|>",
}


def respond(step, request):
    if step in ("extract", "glean"):
        return REPLIES[(step, input_text(request))]
    if step == "summarize":
        label = request.messages[-1][1].split("Entities: ", 1)[1].split("\n", 1)[0]
        return f"SUMMARY({label})"
    raise AssertionError(step)


def settings(**kw) -> ExtractSettings:
    p = default_prompts()
    return ExtractSettings(
        prompt=p["extract_prompt"],
        continue_prompt=p["continue_prompt"],
        loop_prompt=p["loop_prompt"],
        **kw,
    )


def extracted(**kw):
    units = [unit(U0, 0), unit(U1, 1), unit(U2, 2)]
    tus = make_text_units(units, WordTokenizer())
    llm, log = StepLLM(respond), FailureLog(cap=3)
    out = run_extraction(llm, tus, settings(**kw), log)
    return units, tus, llm, log, out


def test_replies_cut_at_the_output_cap_are_counted_by_round_and_still_parsed():
    """A reply that used every allowed token (or says finish_reason "length") is counted; its
    records are kept, as GraphRAG keeps them."""

    def capped(step, request):
        text = respond(step, request)
        if text is None:
            return None
        if input_text(request) == U0 and step == "extract":  # the backend says it was cut
            return Completion(text=text, completion_tokens=7, extra={"finish_reason": "length"})
        if step == "glean":  # every gleaning used its whole budget
            return Completion(text=text, completion_tokens=50)
        return Completion(text=text, completion_tokens=49)

    tus = make_text_units([unit(U0, 0), unit(U1, 1), unit(U2, 2)], WordTokenizer())
    out = run_extraction(StepLLM(capped), tus, settings(max_tokens=50), FailureLog(cap=3))
    assert out.replies_at_cap == {
        "extract": 1,
        "glean": out.calls["glean"] - 1,
    }  # U1's gleaning call failed
    assert ("ANA RUIZ", "PERSON") in {(e.name, e.type) for e in out.entities}


def test_extraction_batches_gleaning_in_the_same_conversation_and_counts_every_failure():
    units, tus, llm, log, out = extracted()
    # one concurrent batch for every first pass, one for every gleaning; no loop prompt with 1 gleaning
    assert llm.steps() == ["extract", "glean"] and [len(b) for b in llm.batches] == [3, 3]
    glean = dict((input_text(r), r) for _, r in llm.batches[1])[U0]
    assert [role for role, _ in glean.messages] == ["user", "assistant", "user"]
    assert glean.messages[1][1] == REPLIES[("extract", U0)] and "missed" in glean.messages[2][1]
    assert out.calls == {"extract": 3, "glean": 3, "loop": 0}
    assert {(e.name, e.type) for e in out.entities} == {
        ("ANA RUIZ", "PERSON"),
        ("VELOX RAIL", "ORGANIZATION"),
        ("PORT ELDEN", "GEO"),
    }
    assert (
        len(out.relations) == 5
    )  # 2 + the gleaned one + 2 from U1 (the ghost is still a record here)
    assert log.counts == {
        "weight_defaulted": 1,
        "malformed_record": 1,
        "call_failed": 1,
        "unparsed_reply": 1,
    }
    kinds = {s["kind"]: s["raw"] for s in log.samples}
    assert (
        kinds["unparsed_reply"] == "Nothing to extract here."
        and kinds["malformed_record"] == "Here are the results"
    )
    assert (
        len(log.samples) == 3 and log.total() == 4
    )  # raw replies capped at 3, every failure counted


def test_loop_prompt_runs_only_between_gleanings_and_only_an_exact_y_continues():
    def loop_respond(step, request):
        if step == "loop":
            return {U0: "Y", U1: "N", U2: "y"}[input_text(request)]
        if (
            step == "glean"
            and (step, input_text(request)) in REPLIES
            and REPLIES[(step, input_text(request))] is None
        ):
            return "<|COMPLETE|>"
        return respond(step, request)

    tus = make_text_units([unit(U0, 0), unit(U1, 1), unit(U2, 2)], WordTokenizer())
    llm, log = StepLLM(loop_respond), FailureLog()
    out = run_extraction(llm, tus, settings(max_gleanings=2), log)
    assert llm.steps() == ["extract", "glean", "loop", "glean"]
    assert [len(b) for b in llm.batches] == [3, 3, 3, 1]
    second = llm.batches[3][0][1]
    assert input_text(second) == U0
    assert [role for role, _ in second.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert second.messages[4][1] == settings().loop_prompt and second.messages[5][1] == "Y"
    assert llm.batches[2][0][1].choices == ("Y", "N")
    assert out.calls == {"extract": 3, "glean": 4, "loop": 3}
    assert log.counts["loop_unparsed"] == 1  # "y" is not an exact Y: no further round, and counted


def test_no_gleaning_sends_only_the_first_pass():
    _, _, llm, _, out = extracted(max_gleanings=0)
    assert llm.steps() == ["extract"] and out.calls == {"extract": 3, "glean": 0, "loop": 0}


def test_merge_sums_weights_keeps_provenance_and_drops_dangling_relationships():
    units, tus, _, log, out = extracted()
    graph = merge_graph(out.entities, out.relations, tus, log)
    names = [e.name for e in graph.entities]
    assert names == ["ANA RUIZ", "PORT ELDEN", "VELOX RAIL"]
    velox = graph.entities[2]
    assert velox.chunks == [units[0].id, units[1].id] and velox.units == (units[0].id, units[1].id)
    assert velox.frequency == 2 and velox.degree == 2
    rels = {(names[r.source], names[r.target]): r for r in graph.relations}
    assert set(rels) == {("ANA RUIZ", "VELOX RAIL"), ("PORT ELDEN", "VELOX RAIL")}
    assert (
        rels[("PORT ELDEN", "VELOX RAIL")].weight == 5 + 2 + 1.0
    )  # both directions and the defaulted strength
    assert rels[("ANA RUIZ", "VELOX RAIL")].weight == 8 and rels[
        ("ANA RUIZ", "VELOX RAIL")
    ].units == (units[0].id,)
    assert rels[("PORT ELDEN", "VELOX RAIL")].rank == 2 + 1
    assert log.counts["missing_endpoint"] == 1  # ANA RUIZ -> GHOST


def test_missing_endpoint_create_adds_an_unknown_entity():
    _, tus, _, log, out = extracted()
    graph = merge_graph(out.entities, out.relations, tus, log, missing_endpoint="create")
    ghost = next(e for e in graph.entities if e.name == "GHOST")
    assert ghost.type == "UNKNOWN" and ghost.chunks == [tus[1].id]
    assert len(graph.relations) == 3 and log.counts["missing_endpoint"] == 1


def test_type_conflicts_take_the_most_frequent_type_and_are_counted():
    from memharness.memsys.extraction.entities import EntityRecord

    recs = [
        EntityRecord("X", "PERSON", "a", "c1"),
        EntityRecord("X", "ORGANIZATION", "b", "c2"),
        EntityRecord("X", "ORGANIZATION", "c", "c3"),
    ]
    log = FailureLog()
    graph = merge_graph(recs, [], [], log)
    assert graph.entities[0].type == "ORGANIZATION" and graph.entities[0].descriptions == [
        "a",
        "b",
        "c",
    ]
    assert log.counts["type_conflict"] == 1


def summarised(threshold: int, max_input: int = 4000):
    _, tus, _, log, out = extracted()
    graph = merge_graph(out.entities, out.relations, tus, log)
    llm = StepLLM(respond)
    s = SummarySettings(
        prompt=default_prompts()["summarize_prompt"],
        threshold_tokens=threshold,
        max_input_tokens=max_input,
        separator=" | ",
    )
    summarize_descriptions(llm, graph, s, WordTokenizer(), log)
    return graph, llm


def test_descriptions_are_summarised_only_over_the_threshold():
    graph, llm = summarised(
        threshold=10
    )  # joined: ANA RUIZ 11, PORT ELDEN 12, VELOX RAIL 14 tokens
    names = [e.name for e in graph.entities]
    velox = graph.entities[2]
    assert llm.steps() == ["summarize"]  # one batch for every list over the threshold
    summarised_labels = {
        r.messages[-1][1].split("Entities: ", 1)[1].split("\n", 1)[0] for _, r in llm.batches[0]
    }
    assert summarised_labels == {
        "ANA RUIZ",
        "PORT ELDEN",
        "VELOX RAIL",
        '["PORT ELDEN", "VELOX RAIL"]',
    }
    assert velox.description == "SUMMARY(VELOX RAIL)"
    single = next(r for r in graph.relations if names[r.source] == "ANA RUIZ")
    assert single.description == "Ana Ruiz leads Velox Rail" and graph.summary_calls == 4


def test_short_description_lists_are_joined_without_a_call():
    """nano's trigger: a joined list shorter than the threshold is kept, one of exactly the threshold
    is summarised (nano summarises from 500 tokens on, not from 501)."""
    graph, llm = summarised(threshold=12)
    ana, port, velox = graph.entities
    assert (
        ana.description == "Ana Ruiz leads Velox Rail | Ana Ruiz visited Port Elden"
    )  # 11 tokens < 12
    assert port.description == "SUMMARY(PORT ELDEN)"  # 12 tokens: at the threshold, summarised
    assert velox.description == "SUMMARY(VELOX RAIL)"  # 14 tokens > 12
    assert (
        graph.summary_calls == 3 and graph.summarised == 3
    )  # PORT ELDEN, VELOX RAIL and the three-description relation
    graph, _ = summarised(threshold=13)
    assert graph.entities[1].description.startswith("Port Elden is a town | ")  # 12 < 13: kept


def test_threshold_zero_summarises_every_list_of_two_or_more_whatever_its_token_count():
    _, tus, _, log, out = extracted()
    graph = merge_graph(out.entities, out.relations, tus, log)
    lists = sum(
        len(set(d for d in item.descriptions if d)) > 1
        for item in [*graph.entities, *graph.relations]
    )
    s = SummarySettings(
        prompt=default_prompts()["summarize_prompt"], threshold_tokens=0, separator=" | "
    )
    blind = WordTokenizer(
        per_word=0
    )  # counts nothing: a joined list is "0 tokens", still over "always"
    summarize_descriptions(StepLLM(respond), graph, s, blind, log)
    assert lists == graph.summarised == graph.summary_calls >= 4
    assert graph.entities[0].description.startswith("SUMMARY(")
    single = next(r for r in graph.relations if len(set(r.descriptions)) == 1)
    assert not single.description.startswith("SUMMARY(")  # one description is never summarised


def test_long_lists_carry_a_partial_summary_into_the_next_window():
    from memharness.memsys.extraction.entities import EntityRecord

    prompt = default_prompts()["summarize_prompt"]
    tok = WordTokenizer()
    recs = [
        EntityRecord("X", "PERSON", f"d{i} " + "w " * 9, "c") for i in range(5)
    ]  # five 10-word descriptions
    log = FailureLog()
    graph = merge_graph(recs, [], [], log)
    calls = []

    def summarise(step, request):
        calls.append(request.messages[-1][1].split("Descriptions: ", 1)[1].split("\n", 1)[0])
        return f"S{len(calls)}"

    s = SummarySettings(prompt=prompt, threshold_tokens=0, max_input_tokens=tok.count(prompt) + 15)
    summarize_descriptions(StepLLM(summarise), graph, s, tok, log)
    assert len(calls) == 3 and graph.entities[0].description == "S3"
    assert calls[0].startswith('["d0') and '"d1' in calls[0] and '"d2' not in calls[0]
    # GraphRAG's windows: add descriptions until the budget is passed (at least two per call)
    assert (
        calls[1].startswith('["S1", "d2')
        and '"d3' in calls[1]
        and calls[2].startswith('["S2", "d4')
    )


def test_failed_summary_keeps_the_joined_descriptions_and_is_counted():
    _, tus, _, log, out = extracted()
    graph = merge_graph(out.entities, out.relations, tus, log)
    s = SummarySettings(
        prompt=default_prompts()["summarize_prompt"], threshold_tokens=0, separator=" | "
    )
    summarize_descriptions(StepLLM(lambda step, r: None), graph, s, WordTokenizer(), log)
    assert (
        graph.entities[0].description == "Ana Ruiz leads Velox Rail | Ana Ruiz visited Port Elden"
    )
    assert log.counts["summary_failed"] == 4


def test_record_parsing_cleans_names_and_json_replies_count_malformed_entries():
    log = FailureLog()
    ents, rels = parse_records(
        '("entity"<|> &quot;Ana&quot; <|>person<|>desc)\n("relationship"<|>A<|>B<|>d<|>7.5)',
        "c",
        log,
    )
    assert (
        ents[0].name == "ANA"
        and ents[0].type == "PERSON"
        and rels[0].weight == 7.5
        and not log.counts
    )
    ents, rels = parse_json_reply(
        '```json\n{"entities": [{"name": "ana", "type": "person", "description": "x"},'
        ' {"type": "geo"}], "relationships": [{"source": "ana", "target": "bo",'
        ' "description": "y", "strength": "n/a"}]}\n```',
        "c",
        log,
    )
    assert [e.name for e in ents] == ["ANA"] and rels[0].weight == 1.0
    assert log.counts == {"malformed_record": 1, "weight_defaulted": 1}
    assert (
        parse_json_reply("no json at all", "c", log) == ([], [])
        and log.counts["unparsed_reply"] == 1
    )


def test_json_format_requests_json_output():
    def json_respond(step, request):
        assert request.json_output and not request.stop
        return '{"entities": [{"name": "Ana", "type": "PERSON", "description": "d"}], "relationships": []}'

    p = default_prompts()
    s = ExtractSettings(
        prompt=p["extract_json_prompt"],
        continue_prompt=p["continue_prompt"],
        loop_prompt=p["loop_prompt"],
        format="json",
    )
    tus = make_text_units([unit(U0, 0)], WordTokenizer())
    llm = StepLLM(json_respond)
    out = run_extraction(llm, tus, s, FailureLog())
    assert [e.name for e in out.entities] == ["ANA", "ANA"]  # first pass and gleaning


def test_token_chunking_keeps_every_overlapped_unit():
    from memharness.memsys.services.tokens import get_tokenizer

    tok = get_tokenizer()
    units = [
        unit(" ".join(["alpha"] * 30), 0, "d1"),
        unit(" ".join(["beta"] * 30), 1, "d1"),
        unit(" ".join(["gamma"] * 30), 2, "d2"),
    ]
    # d1 = 30 + 1 (newline) + 30 tokens: windows [0, 40) and [30, 61)
    tus = make_text_units(units, tok, chunk_size=40, chunk_overlap=10)
    d1 = [t for t in tus if t.source_id == "d1"]
    assert (
        len(d1) == 2 and d1[0].units == (units[0].id, units[1].id) and d1[1].units == (units[1].id,)
    )
    assert all(tok.count(t.text) <= 41 for t in tus)  # decode/encode may differ by a token at a cut
    assert [t.units for t in tus if t.source_id == "d2"] == [(units[2].id,)]
    with pytest.raises(ValueError, match="chunks.overlap"):
        make_text_units(units, tok, chunk_size=10, chunk_overlap=10)


def test_prompt_filling_never_parses_inserted_text_again():
    from memharness.memsys.extraction.parsing import fill

    assert (
        fill(
            '{{"points": []}} {input_text} {max_length}',
            input_text="says {max_length}",
            max_length=5,
        )
        == '{"points": []} says {max_length} 5'
    )


def test_graphrag_chunks_rejoin_units_cut_mid_word_exactly():
    """With chunk_size set, a document's token-window units are read as the original text."""
    from memharness.memsys.extraction.chunks import make_text_units
    from memharness.memsys.services.tokens import chunk_text, get_tokenizer
    from memharness.memsys.types import units_from_texts

    tok = get_tokenizer("cl100k_base")
    text = "The Newcomer Award went to 2-2 draws in Kazakhstan's tournaments. Next year too."
    doc = units_from_texts(chunk_text(text, tok, 5), source_id="article", cut=True)
    chunks = make_text_units(doc, tok, chunk_size=1200, chunk_overlap=100)
    assert [c.text for c in chunks] == [text] and chunks[0].units == tuple(u.id for u in doc)


def test_records_on_separate_lines_parse_only_with_line_records_as_in_neither_reference():
    """A reply with one record per line and no "##": ours reads both records; GraphRAG's split
    (line_records=false) sees one piece, reads its first four fields as one entity whose description
    runs into the next record, and loses the second entity."""
    reply = '("entity"<|>ANA<|>PERSON<|>a pilot)\n("entity"<|>BO<|>PERSON<|>a sailor)<|COMPLETE|>'
    ours = parse_records(reply, "c", FailureLog())[0]
    theirs = parse_records(reply, "c", FailureLog(), line_records=False)[0]
    assert [(e.name, e.description) for e in ours] == [("ANA", "a pilot"), ("BO", "a sailor")]
    assert [e.name for e in theirs] == ["ANA"] and theirs[0].description.startswith("a pilot)")


def test_entity_types_are_upper_cased_in_the_prompt_unless_as_given():
    from memharness.memsys.extraction.entities import extraction_prompt

    def prompt(case):
        settings = ExtractSettings(
            prompt="types: {entity_types} | {input_text}",
            continue_prompt="",
            loop_prompt="",
            entity_types_case=case,
        )
        return extraction_prompt(settings, "text")

    assert prompt("upper") == "types: ORGANIZATION,PERSON,GEO,EVENT | text"
    assert prompt("as_given") == "types: organization,person,geo,event | text"  # GraphRAG, nano
