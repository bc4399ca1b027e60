"""The LoCoMo loader against a hand-written fixture in the exact upstream schema (our own text)."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
from memharness.data_prep import locomo
from memharness.data_prep.base import DatasetError, check_integrity, sha256_file
from paths import TESTS

FIX = TESTS / "fixtures" / "locomo"
FILE = FIX / "locomo10.json"


def load(**kw):
    return locomo.load(str(FILE), **kw)


def by_id(ds):
    return {q.id: q for e in ds.episodes for q in e.questions}


def test_turns_are_units_in_session_order_with_dia_id_speaker_session_and_date():
    ds = load()
    assert [e.id for e in ds.episodes] == ["conv-90", "conv-91"]
    ep = ds.episodes[0]
    # session_3 has a date-time but no dialogue: nothing to insert
    assert [u.metadata["dia_id"] for u in ep.units] == [
        *("D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2", "D2:3")
    ]
    first = ep.units[0]
    assert first.metadata["speaker"] == "Ines" and first.metadata["session"] == 1
    assert (
        first.timestamp == "2023-03-14T09:12:00" and ep.units[4].timestamp == "2023-04-02T18:40:00"
    )
    assert first.text == (
        '9:12 am on 14 March, 2023: Ines said, "Morning Tomas! I finally signed up for the pottery '
        'class at the community centre."'
    )
    assert ep.units[2].text.endswith(
        '"Look what I made in the trial lesson." and shared a photo of a lopsided blue clay bowl on a table'
    )
    assert ep.units[2].metadata["image_caption"].startswith("a photo of a lopsided")
    # observations, event and session summaries are never inserted
    assert not any("ANSWER LEAK" in u.text for e in ds.episodes for u in e.units)
    assert all(q.position == len(e.units) for e in ds.episodes for q in e.questions)


def test_captions_can_be_left_out_and_the_turn_format_changed():
    ds = load(image_captions=False, turn_format="{speaker}: {text}{image}")
    unit = ds.episodes[0].units[2]
    assert unit.text == "Ines: Look what I made in the trial lesson."
    assert unit.metadata["image_caption"]  # still recorded, only not in the text


def test_categories_integer_answers_and_the_other_map():
    qs = by_id(load())
    assert qs["conv-90/qa-0"].categories == {"category": "single-hop", "locomo_category": "4"}
    assert qs["conv-90/qa-4"].categories["category"] == "multi-hop"
    assert qs["conv-90/qa-2"].answers == ("1998",) and qs["conv-90/qa-3"].answers == ("2",)
    mem0 = by_id(load(category_map="mem0"))
    assert mem0["conv-90/qa-4"].categories == {"category": "single-hop", "locomo_category": "1"}
    assert mem0["conv-90/qa-0"].categories["category"] == "open-domain"


def test_category_5_is_asked_with_its_distractor_and_reported_apart():
    ds = load()
    adv = by_id(ds)["conv-90/qa-6"]
    assert adv.answers == () and set(adv.options) == {
        "to pace herself",  # adversarial_answer: the distractor, never the gold
        "Not mentioned in the conversation",
    }
    assert adv.options[adv.gold_option] == "Not mentioned in the conversation"
    assert adv.categories == {
        "category": "adversarial",
        "locomo_category": "5",
        "apart": "adversarial",
    }
    # the item that also carries an 'answer' key is still category 5, scored by the same rule
    assert by_id(ds)["conv-90/qa-7"].options is not None
    assert ds.metadata["categories"] == {"4": 4, "2": 1, "1": 3, "3": 1, "5": 3}
    # the option order is fixed per question id: the same on every load, about half each way
    for q in (q for q in by_id(ds).values() if q.options):
        assert q.gold_option == (0 if locomo.not_mentioned_first(q.id) else 1)
    assert by_id(load())["conv-90/qa-6"].gold_option == adv.gold_option
    firsts = sum(
        locomo.not_mentioned_first(f"conv-{i}/qa-{j}") for i in range(20) for j in range(20)
    )
    assert 160 < firsts < 240  # of 400


def test_category_5_open_merged_and_skipped():
    open_ = by_id(load(adversarial_format="open", adversarial="merged"))["conv-91/qa-2"]
    assert open_.answers == ("Not mentioned in the conversation",) and open_.options is None
    assert "apart" not in open_.categories
    skipped = load(adversarial="skip")
    assert skipped.num_questions == 9 and skipped.metadata["adversarial_skipped"] == 3


def test_evidence_points_at_turns_across_sessions_and_odd_pointers_are_counted():
    ds = load()
    ep, qs = ds.episodes[0], by_id(ds)
    two = qs["conv-90/qa-4"].evidence  # D1:4 and D2:1: two sessions
    assert [(e.position, e.end) for e in two] == [(3, 4), (4, 5)]
    assert [ep.units[e.position].metadata["dia_id"] for e in two] == ["D1:4", "D2:1"]
    assert two[1].source_id == ep.units[4].source_id == "conv-90/session-2"
    odd = qs[
        "conv-90/qa-8"
    ].evidence  # "D1:3; D2:2" (two pointers in one string) and D7:1 (no turn)
    assert [e.position for e in odd] == [2, 5, None]
    assert ds.metadata["evidence_rewritten"] == 1
    assert check_integrity(ds)["dangling_evidence"] == ["conv-90/qa-8->conv-90/D7:1"]


def test_sha256_pin_mismatch_is_one_line_recorded_and_can_be_fatal(caplog):
    with caplog.at_level(logging.WARNING, logger="memharness.data_prep.locomo"):
        ds = load()
    warning = [r.getMessage() for r in caplog.records if "pinned" in r.getMessage()]
    assert len(warning) == 1 and "\n" not in warning[0] and locomo.PINNED_SHA256 in warning[0]
    assert ds.metadata["sha256"] == sha256_file(FILE) and ds.metadata["matches_pin"] is False
    assert ds.files == {str(FILE): sha256_file(FILE)} and ds.revision == "local"
    assert load(sha256=sha256_file(FILE)).metadata["matches_pin"] is True
    with pytest.raises(DatasetError, match="not the pinned") as err:
        load(on_mismatch="raise")
    assert "\n" not in str(err.value)


def test_errata_replace_golds_and_are_recorded():
    ds = load(errata=str(FIX / "errata.json"))
    assert by_id(ds)["conv-90/qa-1"].answers == ("the day before 2 April 2023",)
    rec = ds.metadata["errata"]
    assert rec["applied"] is True and rec["corrections"] == 1
    assert rec["items"][0]["was"] == ["1 April 2023"] and rec["sha256"] == sha256_file(
        FIX / "errata.json"
    )
    assert load().metadata["errata"] == {"applied": False}


@pytest.mark.parametrize(
    "fix, message",
    [
        ({"conv-90/qa-99": {"answer": "x"}}, "no question 'conv-90/qa-99'"),
        ({"conv-90/qa-1": {"answer": "x", "was": "2 April"}}, "another file version"),
    ],
)
def test_errata_for_another_version_are_refused(tmp_path, fix, message):
    errata = tmp_path / "errata.json"
    errata.write_text(json.dumps({"source": "test", "corrections": fix}))
    with pytest.raises(DatasetError, match=message):
        load(errata=str(errata))


def test_no_file_and_no_network_fails_in_one_line_naming_the_place_and_sha256(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("MEMHARNESS_OFFLINE", "1")
    with pytest.raises(DatasetError) as err:
        locomo.load(data_dir=str(tmp_path))
    text = str(err.value)
    assert "\n" not in text and str(tmp_path / "locomo") in text
    assert locomo.PINNED_SHA256 in text and "dataset.loader.path" in text


def test_a_copy_in_the_data_dir_is_used_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMHARNESS_OFFLINE", "1")
    (tmp_path / "locomo").mkdir()
    shutil.copy(FILE, tmp_path / "locomo" / "locomo10.json")
    assert locomo.load(data_dir=str(tmp_path)).num_questions == 12


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d[0]["qa"][0].update(category=7), r"conv-90\.qa\[0\]: category 7 is not 1-5"),
        (lambda d: d[0]["qa"][6].pop("adversarial_answer"), "missing field 'adversarial_answer'"),
        (lambda d: d[1]["conversation"].update(session_2_date_time="yesterday"), "not like"),
        (lambda d: d[1]["qa"][0].update(answer=None), "'answer' should be str or int"),
    ],
)
def test_malformed_records_name_file_and_field(tmp_path, edit, message):
    data = json.loads(FILE.read_text())
    edit(data)
    broken = tmp_path / "locomo10.json"
    broken.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=message) as err:
        locomo.load(str(broken))
    assert str(broken) in str(err.value)


def test_category_labels_registry_and_stats_know_locomo():
    from memharness.data_prep import stats
    from memharness.eval.papers.names import CATEGORY_LABELS

    ds = load()
    seen = {q.categories["category"] for e in ds.episodes for q in e.questions}
    assert seen == set(CATEGORY_LABELS["category"]["locomo"])
    out = stats.dataset_stats(ds)
    assert out["Conversations"] == 2 and out["Total queries"] == 12
    assert out["categories"]["locomo_category"] == {"1": 3, "2": 1, "3": 1, "4": 4, "5": 3}


@pytest.fixture
def local_http():
    """The fixture folder served on 127.0.0.1 (a stand-in for the upstream URL)."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(FIX))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/locomo10.json"
    server.shutdown()


def test_download_is_checked_against_the_pin_before_it_is_kept(tmp_path, monkeypatch, local_http):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("MEMHARNESS_OFFLINE", raising=False)
    with pytest.raises(DatasetError, match="downloaded sha256 .* is not the pinned"):
        locomo.load(data_dir=str(tmp_path), url=local_http)
    assert not (tmp_path / "locomo" / "locomo10.json").exists()
    ds = locomo.load(data_dir=str(tmp_path), url=local_http, sha256=sha256_file(FILE))
    kept = tmp_path / "locomo" / "locomo10.json"
    assert kept.read_bytes() == FILE.read_bytes() and ds.metadata["matches_pin"] is True


def test_a_pin_in_upper_case_matches_and_a_malformed_one_is_refused(make_cfg):
    """Issue 43 case 12: hex digits in either case; anything else refused at the command line."""
    from memharness.eval.run.validate import config_problems

    assert load(sha256=sha256_file(FILE).upper()).metadata["matches_pin"] is True
    with pytest.raises(DatasetError, match="sha256 pin 'zz12': expected 64 hexadecimal digits"):
        load(sha256="zz12")
    (line,) = config_problems(make_cfg("dataset=locomo", "dataset.loader.sha256=zz12"))
    assert line.startswith("dataset.loader.sha256='zz12'") and "64 hexadecimal digits" in line
    pins = "dataset.loader.sha256_pins={corpus.json: 'x'}"
    (line,) = config_problems(make_cfg("dataset=multihop", pins))
    assert "dataset.loader.sha256_pins.corpus.json='x'" in line


def test_errata_flag_listed_wrong_golds_and_keep_them():
    ds = load(errata=str(FIX / "errata_wrong.json"))
    q = by_id(ds)["conv-90/qa-2"]
    assert q.answers == ("1998",) and q.categories["gold"] == "listed_wrong"
    assert {x.categories["gold"] for x in by_id(ds).values()} == {"listed_wrong", "unlisted"}
    rec = ds.metadata["errata"]
    assert rec["listed_wrong"] == 1 and rec["corrections"] == 0
    assert rec["wrong_items"][0]["question_id"] == "conv-90/qa-2"
    # without an errata file no question carries the flag
    assert all("gold" not in x.categories for x in by_id(load()).values())


def test_a_listed_wrong_gold_for_another_version_is_refused(tmp_path):
    errata = tmp_path / "errata.json"
    errata.write_text(json.dumps({"source": "t", "wrong": {"conv-90/qa-2": {"was": "1999"}}}))
    with pytest.raises(DatasetError, match="another file version"):
        load(errata=str(errata))
