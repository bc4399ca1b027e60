"""The A-Mem worker's pure logic (units -> notes, hits -> items), importable without the product."""

from __future__ import annotations

import io
import json

import pytest
from memharness.memsys.products.workers import amem_worker as w
from memharness.memsys.products.workers import protocol


def test_iso_timestamps_become_the_products_minute_format():
    assert w.note_time("2023-05-08T13:56:00") == ("202305081356", None)
    assert w.note_time("2023-05-08T13:56:00Z") == ("202305081356", None)
    assert w.note_time("2023-05-08") == ("202305080000", None)


def test_missing_or_odd_times_are_counted_and_never_the_wall_clock():
    assert w.note_time(None) == (w.NO_TIME, "no_timestamp")
    assert w.note_time("") == (w.NO_TIME, "no_timestamp")
    assert w.note_time("8 May, 2023") == ("8 May, 2023", "timestamp_unparsed")


def test_speaker_leads_the_note_only_when_the_text_does_not_name_them():
    unit = {"id": "u-1", "text": "I adopted a cat.", "speaker": "Caroline"}
    assert w.note_content(unit) == "Caroline: I adopted a cat."
    named = {"id": "u-2", "text": 'Caroline said, "I adopted a cat."', "speaker": "Caroline"}
    assert w.note_content(named) == named["text"]
    assert w.note_content(unit, speaker_prefix=False) == "I adopted a cat."
    assert w.note_content({"id": "u-3", "text": "a chunk"}) == "a chunk"


def test_unit_to_note_keeps_the_unit_id_as_the_note_id():
    note = w.unit_to_note(
        {"id": "u-9", "text": "hello", "speaker": "Mel", "timestamp": "2024-01-02T03:04:00"}
    )
    assert note == {"id": "u-9", "content": "Mel: hello", "time": "202401020304", "problem": None}


@pytest.mark.parametrize(
    "unit", [{"text": "no id"}, {"id": "u-1", "text": None}, {"id": "", "text": "x"}]
)
def test_a_unit_without_id_or_text_is_refused_naming_it(unit):
    with pytest.raises(ValueError, match="needs a non-empty 'id'"):
        w.unit_to_note(unit)


def test_hits_become_items_with_the_unit_id_as_source_and_cosine_scores():
    stored = {
        "u-1": {
            "content": "Mel: I paint.",
            "timestamp": "202401020304",
            "context": "hobbies",
            "keywords": '["paint", "art"]',
            "tags": '["hobby"]',
        },
        "u-2": {"content": "Mel: I run.", "timestamp": "202401030000", "keywords": "[]"},
    }
    hits = [{"id": "u-1", "score": 0.5}, {"id": "u-2"}, {"id": "u-gone", "score": 0.1}]
    items = w.to_items(hits, stored, "{time} | {content} | {keywords} | {tags}")
    assert items == [
        {
            "id": "u-1",
            "text": "202401020304 | Mel: I paint. | paint, art | hobby",
            "score": 0.5,
            "source_ids": ["u-1"],
        },
        {
            "id": "u-2",
            "text": "202401030000 | Mel: I run. |  | ",
            "score": 0.0,
            "source_ids": ["u-2"],
        },
    ]


def test_distances_become_cosine_similarity_in_the_stores_space():
    assert w.distance_to_score(0.25) == w.distance_to_score(0.25, "cosine") == 0.75
    assert w.distance_to_score(0.5, "l2") == 0.75  # squared L2 of unit vectors = 2 - 2 cos
    assert w.distance_to_score(None) == 0.0


def test_the_stores_space_is_read_from_hnsw_else_spann_and_never_guessed():
    assert w.store_space({"hnsw": {"space": "cosine"}, "spann": None}) == "cosine"
    assert w.store_space({"hnsw": None, "spann": {"space": "l2"}}) == "l2"
    with pytest.raises(ValueError, match="distance space is unknown"):
        w.store_space({"hnsw": None, "spann": None})


def test_links_are_counted_over_notes():
    metas = [{"links": '["a", "b"]'}, {"links": "[]"}, {}, {"links": ["c"]}, {"links": "not json"}]
    assert w.count_links(metas) == 3


def test_unusable_json_replies_are_classified():
    fmt = {"json_schema": {"schema": {"properties": {"a": {}, "b": {}}, "required": ["a"]}}}
    assert w.reply_problem('{"a": 1}', fmt) is None
    assert w.reply_problem('{"b": 1}', fmt) == "llm_schema_mismatch"
    assert w.reply_problem("[1]", fmt) == "llm_schema_mismatch"
    assert w.reply_problem("not json", fmt) == "llm_bad_json"
    assert w.reply_problem(None, fmt) == "llm_bad_json"


def test_options_refuse_unknown_names_and_bad_search_modes():
    assert w.merge_options({"search": "vector"})["search"] == "vector"
    with pytest.raises(ValueError, match="unknown A-Mem option"):
        w.merge_options({"evo_treshold": 5})
    with pytest.raises(ValueError, match="search='bm25'"):
        w.merge_options({"search": "bm25"})
    with pytest.raises(ValueError, match="json_mode='grammar'"):
        w.merge_options({"json_mode": "grammar"})


def test_hello_without_a_store_dir_fails_in_one_line_and_the_worker_keeps_serving():
    worker = w.AMemWorker(env={"MEMHARNESS_LLM_MODEL": "m"})
    stdin = io.StringIO('{"op": "hello"}\n{"op": "nope"}\n{"op": "close"}\n')
    out = io.StringIO()
    protocol.serve(worker.handlers(), stdin=stdin, stdout=out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert replies[0]["ok"] is False and "MEMHARNESS_STORE_DIR" in replies[0]["error"]
    assert replies[1]["ok"] is False and "unknown op" in replies[1]["error"]
    assert replies[2] == {"ok": True, "closing": True}


def test_bad_options_in_the_environment_are_named():
    worker = w.AMemWorker(env={"MEMHARNESS_PRODUCT_OPTIONS": "{oops"})
    with pytest.raises(ValueError, match="MEMHARNESS_PRODUCT_OPTIONS is not JSON"):
        worker.hello({"op": "hello"})


def test_json_object_mode_carries_the_same_schema():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "response", "schema": schema}}
    assert w.as_json_object(fmt) == {"type": "json_object", "schema": schema}
    assert w.as_json_object({"type": "text"}) == {"type": "text"}
    assert w.as_json_object(None) is None


def test_a_schema_without_required_keys_accepts_any_object():
    fmt = {"json_schema": {"schema": {"properties": {"a": {}}}}}
    assert w.reply_problem("{}", fmt) is None


def test_notes_left_without_annotations_are_counted():
    metas = [
        {"context": "General", "keywords": "[]"},
        {"context": "General"},
        {"context": "a trip", "keywords": "[]"},
        {"context": "General", "keywords": '["cat"]'},
    ]
    assert w.count_unannotated(metas) == 2
