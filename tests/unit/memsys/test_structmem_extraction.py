"""Structural memory extraction α: parsing of each structure from hand-written replies (malformed
lines counted), one concurrent batch per insert, provenance to chunks, documents and dataset units."""

from __future__ import annotations

import pytest
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.structmem.extraction import (
    ExtractionCounts,
    extract,
    parse_atomic_facts,
    parse_summary,
    parse_triples,
    source_chunks,
)
from structmem_fakes import FACTS_REPLY, PROMPTS, TRIPLES_REPLY, FakeLLM, by_kind, make_memory, unit

MAX_TOKENS = {"triples": 64, "atomic_facts": 64, "summaries": 64}


def test_triples_are_parsed_and_malformed_lines_counted():
    triples, malformed = parse_triples(TRIPLES_REPLY)
    assert triples == [
        ("Nora", "adopted", "grey cat"),
        ("Nora", "named cat", "Pepper"),
        ("Nora", "lives in", "Leeds"),
    ]
    assert malformed == 3  # the preamble, a two-part line and a line with an empty head


def test_a_bracket_inside_a_triple_is_kept():
    assert parse_triples("1. Pepper; weighs; 4 kg (at one year)") == (
        [("Pepper", "weighs", "4 kg (at one year)")],
        0,
    )
    assert parse_triples("1) (Pepper; likes; fish)\n2: Nora; owns; Pepper") == (
        [("Pepper", "likes", "fish"), ("Nora", "owns", "Pepper")],
        0,
    )


def test_atomic_facts_keep_their_key_elements_and_count_what_breaks_the_format():
    facts, malformed, keyless = parse_atomic_facts(FACTS_REPLY)
    assert facts == [
        ("Nora adopted a grey cat on Monday.", ("Nora", "grey cat", "Monday")),
        ("Nora named the cat Pepper.", ("Nora", "Pepper")),
        ("Nora lives in Leeds.", ()),
    ]
    assert (malformed, keyless) == (2, 1)


def test_a_summary_is_the_whole_reply_and_an_empty_reply_is_malformed():
    assert parse_summary("  Summary: Nora adopted Pepper.\nShe lives in Leeds. ") == (
        ["Nora adopted Pepper.\nShe lives in Leeds."],
        0,
    )
    assert parse_summary("   \n") == ([], 1)


def test_mixed_extraction_is_one_concurrent_batch_with_kinds_and_provenance():
    llm = FakeLLM(by_kind())
    chunks = source_chunks(
        [unit("Nora adopted a cat.", 0, "doc-a"), unit("Nora lives in Leeds.", 1, "doc-b")],
        get_tokenizer(),
        None,
    )
    counts = ExtractionCounts()
    units = extract(
        llm, chunks, ("chunks", "triples", "atomic_facts", "summaries"), PROMPTS, MAX_TOKENS, counts
    )
    assert len(llm.batches) == 1 and len(llm.batches[0]) == 2 * 3  # chunks need no call
    assert all(r.max_tokens == 64 for r in llm.batches[0])
    # chunk-major, kinds in order within a chunk: 1 chunk + 3 triples + 3 facts + 1 summary per chunk
    assert [u.kind for u in units[:8]] == ["chunks"] + ["triples"] * 3 + ["atomic_facts"] * 3 + [
        "summaries"
    ]
    assert {u.chunk.doc_id for u in units[:8]} == {"doc-a"} and {
        u.chunk.doc_id for u in units[8:]
    } == {"doc-b"}
    assert units[0].text == "Nora adopted a cat." and units[1].text == "Nora; adopted; grey cat"
    assert counts.to_json()["requests"] == {"triples": 2, "atomic_facts": 2, "summaries": 2}
    assert counts.malformed_lines == {"triples": 6, "atomic_facts": 4, "summaries": 0}
    assert counts.units == {"chunks": 2, "triples": 6, "atomic_facts": 6, "summaries": 2}
    assert counts.facts_without_keys == 2 and counts.to_json()["requests_per_chunk"] == 3.0


def test_a_failed_call_is_counted_and_gives_no_unit():
    llm = FakeLLM(lambda p: None if "Leeds" in p else by_kind()(p))
    chunks = source_chunks(
        [unit("Nora adopted a cat.", 0), unit("Nora lives in Leeds.", 1)], get_tokenizer(), None
    )
    counts = ExtractionCounts()
    units = extract(llm, chunks, ("triples",), PROMPTS, MAX_TOKENS, counts)
    assert counts.failed["triples"] == 1 and counts.requests["triples"] == 2
    assert {u.chunk.unit_id for u in units} == {chunks[0].unit_id}


def test_long_units_are_cut_into_chunks_that_keep_their_unit():
    text = " ".join(f"word{i}" for i in range(300))
    u = unit(text, 0, "book")
    chunks = source_chunks([u], get_tokenizer(), 100)
    assert len(chunks) > 1 and all(get_tokenizer().count(c.text) <= 100 for c in chunks)
    assert [c.id for c in chunks] == [f"{u.id}#{i}" for i in range(len(chunks))]
    assert {(c.unit_id, c.doc_id) for c in chunks} == {(u.id, "book")}
    assert source_chunks([u], get_tokenizer(), None)[0].id == u.id


def test_the_store_keeps_kind_chunk_document_and_unit_provenance():
    llm = FakeLLM(by_kind())
    memory = make_memory(llm, structure="mixed")
    units = [unit("Nora adopted a cat.", 0, "doc-a"), unit("Nora lives in Leeds.", 1, "doc-b")]
    memory.insert(units)
    store = memory.store
    assert len(store) == 2 * 8 and set(store.levels) == {0}
    kinds = [m["kind"] for m in store.meta]
    assert (
        kinds.count("chunks") == 2 and kinds.count("triples") == 6 and kinds.count("summaries") == 2
    )
    for v in range(len(store)):
        owner = units[0] if v < 8 else units[1]
        assert store.source_units(v) == (owner.id,)
        assert store.meta[v]["chunk"] == owner.id and store.meta[v]["doc"] == owner.source_id
    fact = kinds.index("atomic_facts")
    assert store.meta[fact]["keys"] == ["Nora", "grey cat", "Monday"]
    stats = memory.stats()
    assert (
        stats["extraction"]["malformed_lines"]["triples"] == 6
        and stats["units_by_kind"]["atomic_facts"] == 6
    )
    assert len(set(store.ids)) == len(store)  # content-addressed ids, unique


@pytest.mark.parametrize(
    "structure,calls",
    [("chunks", 0), ("triples", 1), ("atomic_facts", 1), ("summaries", 1), ("mixed", 3)],
)
def test_extraction_calls_per_chunk_by_structure(structure, calls):
    llm = FakeLLM(by_kind())
    memory = make_memory(llm, structure=structure)
    memory.insert([unit("Nora adopted a cat.", 0), unit("Nora lives in Leeds.", 1)])
    assert len(llm.requests) == 2 * calls and len(llm.batches) == (1 if calls else 0)


def test_bad_settings_name_the_key():
    """Declared settings are checked before a run (the validator); cross-field rules also in the constructor."""
    from memharness.memsys.settings_check import check_target

    def problems(**settings):
        return check_target(
            {
                "_target_": "memharness.memsys.structmem.memory.StructuralMemory",
                "prompts": PROMPTS,
                **settings,
            },
            "memory",
        )

    assert problems() == []
    assert problems(structure="graphs")[0].startswith(
        "memory.structure='graphs': expected one of chunks"
    )
    assert problems(retrieval="twice")[0].startswith(
        "memory.retrieval='twice': expected one of single"
    )
    assert problems(top_r=0) == ["memory.top_r=0: expected an integer >= 1"]
    assert problems(structure="triples", prompts={**PROMPTS, "triples": "no placeholder"}) == [
        "memory.prompts.triples: must contain the placeholder(s) {text}"
    ]
    with pytest.raises(ValueError, match=r"memory.prompts.triples.*\{text\}"):
        make_memory(
            FakeLLM(by_kind()),
            structure="triples",
            prompts={**PROMPTS, "triples": "no placeholder"},
        )


class CountingLLM:
    """Replies by kind (``by_kind``) and reports the reply's words as its completion tokens."""

    def __init__(self, summary: str, finish_reason: str | None = None):
        self.reply, self.finish_reason = by_kind(summary=summary), finish_reason

    def complete(self, requests, desc=None):
        from memharness.memsys.services.types import Completion

        out = []
        for r in requests:
            text = self.reply(r.messages[-1][1])
            extra = {"finish_reason": self.finish_reason} if self.finish_reason else {}
            out.append(Completion(text=text, completion_tokens=len(text.split()), extra=extra))
        return out


def test_replies_that_reach_their_output_cap_are_counted_per_kind():
    """A summary that used every token of its cap was cut there: kept, and counted."""
    chunks = source_chunks([unit("Nora adopted a cat.", 0)], get_tokenizer(), None)
    caps = {"summaries": 4}
    for summary, finish, expected in (
        ("Nora adopted a cat", None, 1),  # 4 tokens = the cap
        ("Nora adopted Pepper", None, 0),  # 3 tokens: under it
        ("Nora adopted Pepper", "length", 1),  # the backend says it stopped at the cap
    ):
        counts = ExtractionCounts()
        units = extract(CountingLLM(summary, finish), chunks, ("summaries",), PROMPTS, caps, counts)
        assert [u.text for u in units] == [summary]
        assert counts.at_cap == {"triples": 0, "atomic_facts": 0, "summaries": expected}
        assert counts.to_json()["replies_at_cap"]["summaries"] == expected
        assert ExtractionCounts.from_json(counts.to_json()).at_cap == counts.at_cap


def test_the_constructors_output_caps_are_the_shipped_ones():
    from memharness.memsys.structmem import StructuralMemory
    from structmem_fakes import CONF

    assert (
        StructuralMemory(tokenizer=get_tokenizer()).extraction.max_tokens
        == dict(CONF["extraction"]["max_tokens"])
        == {"triples": 512, "atomic_facts": 1024, "summaries": 256}
    )


def test_deduplicate_stores_the_set_union_and_counts_what_it_drops():
    """Both chunks give the same triples, facts and summary (the fake replies by kind). Kept apart by
    default (ours); extraction.deduplicate=true stores each text once, the first with its provenance, also
    across inserts."""
    units = [unit("Nora adopted a cat.", 0, "doc-a"), unit("Nora lives in Leeds.", 1, "doc-b")]
    every = make_memory(FakeLLM(by_kind()), structure="mixed")
    every.insert(units)
    union = make_memory(FakeLLM(by_kind()), structure="mixed", extraction={"deduplicate": True})
    union.insert(units[:1])
    union.insert(units[1:])
    assert len(every.store) == 16 and every.stats()["extraction"]["duplicates_dropped"] == 0
    # chunk 2 adds nothing: its triples, facts and summary repeat chunk 1's, and its own text
    # ("Nora lives in Leeds.") is one of chunk 1's facts: the union runs across kinds
    assert len(union.store) == 8 and union.stats()["extraction"]["duplicates_dropped"] == 8
    assert [m["kind"] for m in union.store.meta].count("chunks") == 1
    assert len(set(union.store.texts)) == len(union.store)
    assert union.store.meta[union.store.texts.index("Nora adopted Pepper.")]["doc"] == "doc-a"
    assert (
        make_memory(FakeLLM(by_kind())).extraction.deduplicate is False
    )  # the default: every unit stored


def test_a_misspelled_prompt_or_cap_name_is_refused_not_ignored():
    from memharness.memsys.structmem.memory import StructuralMemory

    problems = dict(
        StructuralMemory.check_settings(
            {
                "structure": "triples",
                "prompts": {"triples": "{text}", "tripels": "x"},
                "extraction": {"max_tokens": {"triples": 64, "sumaries": 9}},
            }
        )
    )
    assert problems["prompts.tripels"].endswith(
        "known: triples, atomic_facts, summaries, rerank, thought"
    )
    assert "extraction.max_tokens.sumaries" in problems and len(problems) == 2
