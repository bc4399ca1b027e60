"""The LightRAG worker's pure logic (units -> documents, chunks -> units, context -> items),
importable without the product."""

from __future__ import annotations

import logging

import pytest
from memharness.memsys.products.workers import lightrag_units as u
from memharness.memsys.products.workers import lightrag_worker as w

UNITS = [
    {"id": "u-1", "text": "I run.", "speaker": "Ann", "timestamp": "2023-05-08", "session": "s1"},
    {"id": "u-2", "text": "I\nswim.", "speaker": "Bo", "timestamp": None, "session": "s1"},
    {"id": "u-3", "text": "A note.", "speaker": None, "timestamp": None, "session": "s2"},
]


def test_a_unit_is_one_line_with_the_datas_time_and_speaker():
    assert u.unit_line(UNITS[0]) == "[2023-05-08] Ann: I run."
    assert u.unit_line(UNITS[1]) == "Bo: I swim."  # newlines folded: one line per unit
    assert u.unit_line(UNITS[2]) == "A note."


@pytest.mark.parametrize("unit", [{"text": "no id"}, {"id": "u-1", "text": None}])
def test_a_unit_without_id_or_text_is_refused_naming_it(unit):
    with pytest.raises(ValueError, match="needs a non-empty 'id'"):
        u.unit_line(unit)


def test_documents_per_session_group_consecutive_units_of_a_session():
    docs = u.documents(UNITS, "session")
    assert [d["id"] for d in docs] == ["doc-u-1", "doc-u-3"]
    assert docs[0]["text"] == "[2023-05-08] Ann: I run.\nBo: I swim."
    assert [uid for uid, _ in docs[0]["lines"]] == ["u-1", "u-2"]


def test_a_batch_document_holds_every_unit():
    (doc,) = u.documents(UNITS, "batch")
    assert doc["id"] == "doc-u-1" and [uid for uid, _ in doc["lines"]] == ["u-1", "u-2", "u-3"]


def test_documents_per_unit_are_one_each():
    docs = u.documents(UNITS, "unit")
    assert [(d["id"], d["text"]) for d in docs] == [
        ("doc-u-1", "[2023-05-08] Ann: I run."),
        ("doc-u-2", "Bo: I swim."),
        ("doc-u-3", "A note."),
    ]


def test_a_chunk_names_the_units_whose_line_it_holds_whole_or_cut_at_its_edge():
    long = "x" * 30 + " the middle of a long line " + "y" * 30
    lines = [("u-1", "short one"), ("u-2", long), ("u-3", "not here")]
    assert u.units_in("short one\n" + long, lines) == ["u-1", "u-2"]
    assert u.units_in(long[:50], lines) == ["u-2"]  # the chunk ends inside u-2's line
    assert u.units_in(long[-45:] + "\nshort", lines) == ["u-2"]  # ... or starts inside it
    assert u.units_in("nothing", lines) == []


def test_context_becomes_items_in_section_order_with_their_units():
    data = {
        "entities": [
            {"entity_name": "Lisbon", "entity_type": "Location", "description": "A city."}
        ],
        "relationships": [
            {"src_id": "Ann", "tgt_id": "Lisbon", "description": "runs there", "source_id": "c-1"}
        ],
        "chunks": [{"chunk_id": "c-2", "content": "Ann: I run."}],
    }
    data["entities"][0]["source_id"] = "c-1<SEP>c-2"
    units = {"c-1": ["u-1"], "c-2": ["u-2"]}

    def chunk_units(ids):
        return [u for i in ids for u in units[i]]

    items = u.context_items(data, ["chunks", "entities", "relations"], chunk_units)
    assert [(i["id"], i["text"], i["source_ids"], i["level"]) for i in items] == [
        ("c-2", "Ann: I run.", ["u-2"], 0),
        ("entity:Lisbon", "Lisbon (Location): A city.", ["u-1", "u-2"], 1),
        ("relation:Ann->Lisbon", "Ann -> Lisbon: runs there", ["u-1"], 1),
    ]
    assert [i["score"] for i in items] == [1.0, 0.5, 1 / 3]  # LightRAG's order, as a falling score
    assert u.context_items(data, ["chunks"], chunk_units)[0]["id"] == "c-2"


@pytest.mark.parametrize(
    "given,message",
    [
        ({"mode": "fast"}, "option mode='fast'"),
        ({"document": "turn"}, "option document='turn': use session, unit or batch"),
        ({"sections": ["chunks", "facts"]}, "option sections="),
        ({"sections": []}, "option sections="),
        ({"top_n": 3}, r"unknown LightRAG option\(s\) \['top_n'\]"),
    ],
)
def test_bad_options_are_refused_in_one_line(given, message):
    with pytest.raises(ValueError, match=message):
        w.merge_options(given)


def test_defaults_pin_temperature_zero_and_lightrags_mix_mode():
    merged = w.merge_options({"mode": "naive"})
    assert merged["mode"] == "naive" and merged["temperature"] == 0.0
    assert w.merge_options(None)["mode"] == "mix"


def test_logged_extraction_problems_are_counted_by_kind():
    counting = w.Counting()
    log = logging.getLogger("test-lightrag-counting")
    log.addHandler(counting)
    log.warning("chunk-1: LLM output format error; found 2/4 fields on ENTITY `x`")
    log.warning("Entity extraction error: empty description for entity 'x'")
    log.warning("something else")
    log.removeHandler(counting)
    assert counting.counts == {"extraction_malformed": 1, "extraction_record_rejected": 1}


def test_identical_documents_are_inserted_once_and_their_units_kept():
    lines: dict = {}
    texts: dict = {}
    first = [{"id": "doc-u-1", "text": "Ann: ok", "lines": [("u-1", "Ann: ok")]}]
    assert u.place(first, lines, texts) == (first, 0, 0)
    again = [
        {"id": "doc-u-1", "text": "Ann: ok", "lines": [("u-1", "Ann: ok")]},  # re-sent: a duplicate
        {"id": "doc-u-7", "text": "Ann: ok", "lines": [("u-7", "Ann: ok")]},  # same words, new unit
        {"id": "doc-u-8", "text": "Bo: no", "lines": [("u-8", "Bo: no")]},
    ]
    fresh, duplicates, merged = u.place(again, lines, texts)
    assert [d["id"] for d in fresh] == ["doc-u-8"] and (duplicates, merged) == (1, 1)
    assert u.units_in("Ann: ok", lines["doc-u-1"]) == ["u-1", "u-7"]  # the chunk names both


def test_an_extraction_reply_without_rows_or_end_marker_is_unparsed():
    system = "...`entity<|#|>entity_name<|#|>entity_type<|#|>entity_description`..."
    assert w.extraction_unparsed(system, "I am not sure what you mean.")
    assert not w.extraction_unparsed(system, "<|COMPLETE|>")  # nothing to extract: fine
    assert not w.extraction_unparsed(system, "entity<|#|>Ann<|#|>Person<|#|>A runner.")
    assert not w.extraction_unparsed("You extract keywords.", "no rows here")  # not extraction
    assert not w.extraction_unparsed(None, "no rows here")
