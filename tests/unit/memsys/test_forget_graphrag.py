"""GraphRAG-lite's own forget (issue 45): plant a unit, derive from it (an entity description, a
summarised description, a relationship, a community report), forget it, and check that nothing
retrievable or stored holds it; the LLM is asked again only for what changed, fewer calls than the
rebuild's."""

from __future__ import annotations

import json

from graphrag_fakes import TEXTS, StepChat, capitalised_records, input_text, report_json, unit
from memharness.memsys.graphrag import GraphRAG
from memharness.memsys.services.llm import LLM
from memharness.memsys.testing.doubles import HashingEmbedder, WordTokenizer

PLANTED = "leads"  # only the first text holds it


def echoing(step, request):
    """Descriptions quote their text unit; summaries and reports quote their inputs, so anything
    derived from the planted unit carries its word."""
    if step == "extract":
        text = input_text(request)
        return capitalised_records(text).replace("appears in the text", f"in: {text}")
    if step == "glean":
        return "<|COMPLETE|>"
    if step == "summarize":
        return "SUM " + request.messages[-1][1].split("Descriptions:", 1)[1].strip()
    if step == "report":
        report = json.loads(report_json("community"))
        report["summary"] = request.messages[-1][1].split("Data:\n", 1)[1]
        return json.dumps(report)
    raise AssertionError(step)


def built_memory(**settings):
    memory = GraphRAG(
        llm=LLM(StepChat(echoing), progress=False),
        embedder=HashingEmbedder(dim=128),
        tokenizer=WordTokenizer(),
        traversal="collapsed",
        top_k=500,
        summaries={"threshold_tokens": 0},  # every entity seen in two chunks is summarised
        communities={"max_cluster_size": 3, "use_lcc": False},
        **settings,
    )
    units = [unit(t, i, source=f"d{i // 3}") for i, t in enumerate(TEXTS)]
    memory.insert(units)
    memory.ensure_built()
    return memory, units


def leaks(memory, gone):
    store = memory.store
    relations = [r for v in range(len(store)) for r in store.meta[v].get("relations", [])]
    return {
        "provenance": [v for v in range(len(store)) if gone in store.source_units(v)],
        "texts": [t for t in store.texts if PLANTED in t],
        "relations": [r for r in relations if gone in r["units"]],
        "text_units": [t.id for t in memory.text_units.values() if gone in t.units],
        "kept_replies": [c.text for c in memory._replies.values() if PLANTED in c.text],
    }


def test_graphrag_own_forget_removes_every_derivation_and_asks_only_for_what_changed():
    memory, units = built_memory()
    gone = units[0].id
    before = leaks(memory, gone)
    assert before["texts"] and before["relations"] and before["provenance"]
    summarised = [t for t in memory.store.texts if t.startswith("ANA: SUM") and PLANTED in t]
    reports = [v for v in range(len(memory.store)) if memory.store.levels[v] > 0]
    assert summarised and any(PLANTED in memory.store.texts[v] for v in reports)
    chat = memory.llm.backend
    build_calls, chat.steps = len(chat.steps), []

    record = memory.forget([gone])

    assert record["method"] == "rebuild_changed_only" and record["units"] == 1
    assert all(not found for found in leaks(memory, gone).values()), leaks(memory, gone)
    items = [i for q in TEXTS for i in memory.retrieve(q, 100_000)]
    assert items and all(gone not in i.source_unit_ids for i in items)
    names = {memory.store.meta[v].get("name") for v in range(len(memory.store))}
    assert "PORT" not in names and "ANA" in names  # only unit 0 named Port; Ana stays from unit 1
    reuse = memory.build_record["reuse"]
    # no text unit other than the forgotten one is extracted again; the Hawks' half is untouched
    assert "extract" not in chat.steps and reuse["graphrag extract"]["reused"] == 6
    assert 0 < chat.steps.count("report") < len(reports)
    assert 0 < len(chat.steps) < build_calls / 2 and record["calls"] == len(chat.steps)
    assert record["prompt_tokens"] == 10 * len(chat.steps)


def test_graphrag_own_forget_costs_fewer_calls_than_the_rebuild_and_leaves_the_same_graph():
    records, graphs = {}, {}
    for method in ("own", "rebuild"):
        memory, units = built_memory()
        records[method] = memory.forget([units[0].id], method=method)
        graphs[method] = (sorted(memory.store.texts), memory.communities_by_members())
        assert not any(leaks(memory, units[0].id).values())
    assert records["rebuild"]["method"] == "rebuild"
    assert records["own"]["calls"] < records["rebuild"]["calls"]
    assert graphs["own"] == graphs["rebuild"]  # reuse changes the cost, never the result


def test_graphrag_forgetting_a_unit_that_named_nothing_asks_for_nothing():
    memory, units = built_memory()
    record = memory.forget([units[6].id])  # "nothing capitalised here at all."
    assert record["method"] == "rebuild_changed_only" and record["calls"] == 0
    assert memory.build_record["reuse"]["communities_changed"] == 0


def test_graphrag_windows_over_a_document_are_extracted_again_only_in_that_document():
    memory, units = built_memory(chunks={"size": 12, "overlap": 0})  # token windows per document
    docs = {tu.id: tu.source_id for tu in memory.text_units.values()}
    assert any(len(tu.units) > 1 for tu in memory.text_units.values())  # windows mix units
    memory.forget([units[0].id])  # d0's windows all start over; d1's and d2's are the same
    chat, reuse = memory.llm.backend, memory.build_record["reuse"]["graphrag extract"]
    d0 = [tu for tu in memory.text_units.values() if tu.source_id == "d0"]
    assert reuse == {"reused": sum(d != "d0" for d in docs.values()), "asked": len(d0)}
    assert not any(leaks(memory, units[0].id).values())
    assert all(units[1].id in tu.units or units[2].id in tu.units for tu in d0) and chat.steps
