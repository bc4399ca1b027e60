"""LongMemEval loader on hand-written fixtures in the upstream schema (tests/fixtures/longmemeval)."""

from __future__ import annotations

import json
import shutil

import pytest
from memharness.data_prep import longmemeval
from memharness.data_prep.base import DatasetError, subset
from memharness.eval.run.snapshots import episode_checksum
from paths import TESTS

FIX = TESTS / "fixtures" / "longmemeval"
S, ORACLE = FIX / "longmemeval_s_cleaned.json", FIX / "longmemeval_oracle.json"


def _questions(ds):
    return {q.id: (ep, q) for ep in ds.episodes for q in ep.questions}


def test_each_question_an_episode_turns_as_dated_units_asked_at_its_date():
    ds = longmemeval.load(str(S), split="s")
    raw = {r["question_id"]: r for r in json.loads(S.read_text())}
    qs = _questions(ds)
    assert set(qs) == set(raw) and ds.num_questions == 7
    ep, q = qs["0c9a41d7"]
    rec = raw["0c9a41d7"]
    assert len(ep.units) == sum(len(s) for s in rec["haystack_sessions"]) == q.position
    assert [u.source_id for u in ep.units[:2]] == [rec["haystack_session_ids"][0]] * 2
    first = ep.units[0]
    assert first.timestamp == "2023-02-11T10:00"
    assert (
        first.text
        == f"[{rec['haystack_dates'][0]}] user: {rec['haystack_sessions'][0][0]['content']}"
    )
    assert "has_answer" not in first.metadata  # the mark never reaches a memory
    assert q.asked_at == "2023/11/05 (Sun) 09:30" and q.answers == ("In the garage",)
    assert q.categories == {
        "type": "knowledge-update",
        "abstention": "answerable",
        "stratum": "knowledge-update",
    }
    assert qs["7d30b6f1"][1].answers == ("3",)  # an integer gold read as text
    assert ds.metadata["split"] == "s" and ds.metadata["release"] == "cleaned"
    assert list(ds.files) == [str(S)] and len(ds.files[str(S)]) == 64
    assert ds.metadata["integrity"] == {}


def test_evidence_is_the_marked_turns_across_sessions_and_abstention_has_none():
    qs = _questions(longmemeval.load(str(S)))
    ep, multi = qs["7d30b6f1"]
    spans = [(e.source_id, e.position, e.end) for e in multi.evidence]
    assert spans == [("answer_7d30b6f1_1", 0, 1), ("answer_7d30b6f1_2", 4, 5)]
    assert all("instrument" not in e.text for e in multi.evidence)  # the turn's own text
    assert "cello" in multi.evidence[1].text
    _, assistant = qs["3f8e2a65"]
    assert assistant.evidence == ()  # no user turn holds the answer: left out, as officially
    earlier = _questions(longmemeval.load(str(S), gold="answer_sessions"))
    ep_a, assistant = earlier["3f8e2a65"]
    assert ep_a.units[assistant.evidence[0].position].metadata["role"] == "assistant"
    _, abstain = qs["5a1c9e02_abs"]
    assert abstain.evidence == () and abstain.categories["abstention"] == "abstention"
    assert abstain.categories["stratum"] == "single-session-user_abs"
    by_session = _questions(longmemeval.load(str(S), evidence="session"))["7d30b6f1"][1]
    assert [(e.source_id, e.end) for e in by_session.evidence] == [
        ("answer_7d30b6f1_1", None),
        ("answer_7d30b6f1_2", None),
    ]


def test_identical_haystacks_share_one_episode_and_ids_follow_content():
    ds = longmemeval.load(str(S))
    ep_a, _ = _questions(ds)["5a1c9e02"]
    ep_b, _ = _questions(ds)["5a1c9e02_abs"]
    assert ep_a is ep_b and len(ds.episodes) == 6
    assert ep_a.metadata["question_ids"] == ["5a1c9e02", "5a1c9e02_abs"]
    again = longmemeval.load(str(S))
    assert [e.id for e in again.episodes] == [e.id for e in ds.episodes]
    oracle = longmemeval.load(str(ORACLE), split="oracle")
    assert not {e.id for e in oracle.episodes} & {e.id for e in ds.episodes}
    assert len({u.id for e in ds.episodes for u in e.units}) == sum(
        len(e.units) for e in ds.episodes
    )


def test_an_unchanged_haystack_has_the_same_snapshot_content_in_another_release(tmp_path):
    records = json.loads(S.read_text())
    records[2]["haystack_sessions"][1][0]["content"] += (
        " (edited)"  # the cleaned release's kind of change
    )
    (tmp_path / "longmemeval_s.json").write_text(json.dumps(records))
    cleaned = longmemeval.load(str(S))
    original = longmemeval.load(str(tmp_path), release="original")
    same = {e.id: episode_checksum(e, None) for e in cleaned.episodes}
    other = {e.id: episode_checksum(e, None) for e in original.episodes}
    shared = set(same) & set(other)
    assert len(shared) == 5 and all(same[i] == other[i] for i in shared)


def test_oracle_sessions_go_in_date_order_unless_file_order_is_asked():
    by_date = _questions(longmemeval.load(str(ORACLE), split="oracle"))["7d30b6f1"][0]
    assert [u.timestamp for u in by_date.units] == sorted(u.timestamp for u in by_date.units)
    assert by_date.units[0].source_id == "answer_7d30b6f1_1"
    as_file = _questions(longmemeval.load(str(ORACLE), split="oracle", order="file"))["7d30b6f1"]
    assert as_file[0].units[0].source_id == "answer_7d30b6f1_2"
    assert [e.source_id for e in as_file[1].evidence] == ["answer_7d30b6f1_1", "answer_7d30b6f1_2"]


def test_the_stratum_keeps_abstention_items_apart_when_subsetting():
    ds = longmemeval.load(str(S))
    cut = subset(ds, 6, 0, "stratum")
    assert "single-session-user_abs" in cut.metadata["strata"]
    assert sum(v["kept"] for v in cut.metadata["strata"].values()) == 6


@pytest.mark.parametrize(
    "edit,message",
    [
        (
            lambda r: r["haystack_dates"].pop(),
            r"\[0\]: haystack_session_ids \(3\), haystack_dates \(2\)",
        ),
        (
            lambda r: r.update(question_type="open-domain"),
            r"\[0\]: unknown question_type 'open-domain'",
        ),
        (lambda r: r.update(question_date="May 30"), r"\[0\]\.question_date: date 'May 30'"),
        (
            lambda r: r["haystack_sessions"][0][0].pop("role"),
            r"\[0\]\.haystack_sessions\[0\]\[0\]: missing field 'role'",
        ),
        (lambda r: r.pop("answer"), r"\[0\]: missing field 'answer'"),
    ],
)
def test_schema_errors_name_the_file_record_and_field(tmp_path, edit, message):
    records = json.loads(S.read_text())
    edit(records[0])
    path = tmp_path / "longmemeval_s_cleaned.json"
    path.write_text(json.dumps(records))
    with pytest.raises(DatasetError, match=str(path).replace(".", r"\.") + message):
        longmemeval.load(str(path))


def test_offline_without_a_copy_fails_in_one_line_naming_where_and_the_pin(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError) as err:
        longmemeval.load(None, data_dir=str(tmp_path), split="oracle")
    message = str(err.value)
    assert "\n" not in message and "longmemeval_oracle.json" in message
    assert str(tmp_path / "longmemeval_cleaned") in message and "dataset.loader.path=" in message
    assert "no sha256 pinned" in message
    with pytest.raises(DatasetError, match="expected sha256 ab12"):
        longmemeval.load(
            None,
            data_dir=str(tmp_path),
            release="original",
            sha256_pins={"longmemeval_s.json": "ab12"},
        )


def test_a_cached_copy_is_used_and_the_pin_is_checked(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "longmemeval_cleaned").mkdir()
    shutil.copy(ORACLE, tmp_path / "longmemeval_cleaned" / ORACLE.name)
    digest = longmemeval.load(str(ORACLE), split="oracle").files[str(ORACLE)]
    ok = longmemeval.load(None, str(tmp_path), split="oracle", sha256_pins={ORACLE.name: digest})
    assert ok.revision == "cache" and ok.metadata["matches_sha256_pin"] is True
    bad = longmemeval.load(None, str(tmp_path), split="oracle", sha256_pins={ORACLE.name: "0" * 64})
    assert bad.metadata["matches_sha256_pin"] is False
    assert "differs from the pinned" in caplog.text


def _retrieval_means(ds, retrieved_sessions, k=2):
    """Mean session-level recall_all@k / ndcg_any@k over the questions with gold (the runner's
    means skip questions without a value), each question retrieving ``retrieved_sessions``."""
    from memharness.eval.run.evidence import recall_scores
    from memharness.memsys.types import RetrievedItem

    values = []
    for ep in ds.episodes:
        by_session = {u.source_id: u.id for u in ep.units}
        items = [
            RetrievedItem(s, 1.0, s, 0, (by_session[s],))
            for s in retrieved_sessions
            if s in by_session
        ]
        units = {u.id: u for u in ep.units}
        cfg = {"k": [k], "source_k": [k]}
        for q in ep.questions:
            got = recall_scores(q, items, units, cfg)
            if got:
                values.append((got[f"source_recall_all_at_{k}"], got[f"source_ndcg_any_at_{k}"]))
    return values


def test_official_gold_keeps_only_answer_sessions_with_a_marked_user_turn(tmp_path):
    # 7d30b6f1 with the answer mark of its second answer session moved from the user turn to the
    # assistant's reply: run_retrieval.py renames that session "noans" (not relevant), so
    # retrieving only the first answer session is full recall; and the single-session-assistant
    # question is left out of the means (no user turn marked anywhere in its haystack).
    recs = json.loads(S.read_text())
    rec = next(r for r in recs if r["question_id"] == "7d30b6f1")
    second = rec["haystack_session_ids"].index("answer_7d30b6f1_2")
    turns = rec["haystack_sessions"][second]
    for t in turns:
        t.pop("has_answer", None)
    assistant_turn = next(t for t in turns if t["role"] == "assistant")
    assistant_turn["has_answer"] = True
    file = tmp_path / "longmemeval_s_cleaned.json"
    file.write_text(json.dumps([rec, next(r for r in recs if r["question_id"] == "3f8e2a65")]))
    official = longmemeval.load(str(file), evidence="session")
    q = _questions(official)["7d30b6f1"][1]
    assert [e.source_id for e in q.evidence] == ["answer_7d30b6f1_1"]
    assert official.metadata["no_user_answer_turn"] == 1
    assert _retrieval_means(official, ["answer_7d30b6f1_1"]) == [(1.0, 1.0)]
    earlier = longmemeval.load(str(file), evidence="session", gold="answer_sessions")
    # before: the second session was gold (recall_all 0) and the assistant question was scored
    means = _retrieval_means(earlier, ["answer_7d30b6f1_1"])
    assert len(means) == 2 and means[0][0] == 0.0
    with pytest.raises(DatasetError, match="dataset.loader.gold"):
        longmemeval.load(str(file), gold="all")
