"""HotpotQA, 2WikiMultihopQA and MuSiQue loaders: schemas, protocols, evidence, categories, answers."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep import hotpotqa, musique, twowiki
from memharness.data_prep.base import DatasetError, subset
from memharness.eval.run.evidence import covered_units, matches
from paths import TESTS

FIX = TESTS / "fixtures"
HOTPOT = FIX / "hotpotqa" / "hotpot_dev_distractor_v1.json"


def _units_of(ep, evidence):
    return [u for u in ep.units if matches(evidence, u)]


def _broken(tmp_path, src, name, edit):
    """A copy of fixture ``src`` with ``edit`` applied to its parsed records."""
    rows = json.loads(src.read_text())
    edit(rows)
    out = tmp_path / name
    out.write_text(json.dumps(rows))
    return out


def test_hotpotqa_per_question_episodes_hold_their_own_paragraphs():
    ds = hotpotqa.load(str(HOTPOT))
    raw = json.loads(HOTPOT.read_text())
    assert [len(e.units) for e in ds.episodes] == [len(r["context"]) for r in raw]
    ep = ds.episodes[0]
    assert [u.source_id for u in ep.units] == [c[0] for c in raw[0]["context"]]
    assert ep.units[0].text.startswith("Ida Varga\nIda Varga (born 3 May 1901")
    assert "translator. Her first novel" in ep.units[0].text  # sentences rejoined once
    q = ep.questions[0]
    assert q.id == raw[0]["_id"] and q.position == len(ep.units) and q.answers == ("Marlow Press",)
    assert q.categories == {"type": "bridge", "level": "medium"}
    assert ds.metadata["integrity"] == {} and ds.metadata["protocol"] == "per_question"


def test_hotpotqa_supporting_facts_point_at_their_paragraph_or_sentence():
    ep = hotpotqa.load(str(HOTPOT)).episodes[0]
    found = {u.source_id for e in ep.questions[0].evidence for u in _units_of(ep, e)}
    assert found == {"Ida Varga", "The Salt Road (novel)"}
    assert all(len(_units_of(ep, e)) == 1 for e in ep.questions[0].evidence)
    sent = hotpotqa.load(str(HOTPOT), granularity="sentence").episodes[0]
    hits = [_units_of(sent, e) for e in sent.questions[0].evidence]
    assert [h[0].text for h in hits] == [
        "Ida Varga\nIda Varga (born 3 May 1901 in Tessel) was a novelist and translator.",
        'Ida Varga\nHer first novel was "The Salt Road", written in 1926.',
        "The Salt Road (novel)\nIt was printed by Marlow Press in a run of 2,000 copies.",
    ]
    # a retrieval of only the distractor misses all of it
    tessel = [u for u in sent.units if u.source_id == "Tessel"]
    assert not any(matches(e, u) for e in sent.questions[0].evidence for u in tessel)
    assert covered_units([], {u.id: u for u in sent.units}) == []


def test_hotpotqa_shared_corpus_deduplicates_paragraphs_and_keeps_evidence():
    ds = hotpotqa.load(str(HOTPOT), protocol="shared_corpus")
    assert len(ds.episodes) == 1
    ep = ds.episodes[0]
    raw = json.loads(HOTPOT.read_text())
    distinct = {(t, "".join(s)) for r in raw for t, s in r["context"]}
    assert len(ep.units) == len(distinct) < sum(len(r["context"]) for r in raw)
    assert all(q.position == len(ep.units) for q in ep.questions)
    last = ep.questions[2]  # its two paragraphs were already in the corpus from question 1
    assert {u.position for e in last.evidence for u in _units_of(ep, e)} == {2, 3}
    assert ds.metadata["integrity"] == {}


def test_hotpotqa_sample_size_and_stratified_limit():
    ds = hotpotqa.load(str(HOTPOT), sample_size=2, sample_seed=1)
    again = hotpotqa.load(str(HOTPOT), sample_size=2, sample_seed=1)
    assert ds.num_questions == 2 and ds.checksum() == again.checksum()
    full = hotpotqa.load(str(HOTPOT))
    two = subset(full, 2, seed=0, stratify_by="type")
    assert {q.categories["type"] for e in two.episodes for q in e.questions} == {
        "bridge",
        "comparison",
    }


def test_hotpotqa_schema_errors_name_file_record_and_field(tmp_path):
    bad = _broken(tmp_path, HOTPOT, "a.json", lambda r: r[1].pop("answer"))
    with pytest.raises(
        DatasetError, match=r"a\.json\[1\] \(_id 5a7f0000aa11bb22cc33dd02\).*'answer'"
    ):
        hotpotqa.load(str(bad))
    bad = _broken(tmp_path, HOTPOT, "b.json", lambda r: r[0].update(type="multi"))
    with pytest.raises(DatasetError, match=r"b\.json\[0\].*'type' is 'multi'"):
        hotpotqa.load(str(bad))
    bad = _broken(
        tmp_path, HOTPOT, "c.json", lambda r: r[2]["supporting_facts"].append(["Marlow Press"])
    )
    with pytest.raises(DatasetError, match=r"c\.json\[2\].*supporting_facts\[2\]"):
        hotpotqa.load(str(bad))
    bad = _broken(tmp_path, HOTPOT, "d.json", lambda r: r[0]["context"][1].__setitem__(1, "x"))
    with pytest.raises(DatasetError, match=r"d\.json\[0\].*context\[1\]\[1\]"):
        hotpotqa.load(str(bad))


def test_hotpotqa_unknown_title_and_bad_sentence_index_are_counted(tmp_path):
    def edit(rows):
        rows[0]["supporting_facts"].append(["Nowhere", 0])
        rows[1]["supporting_facts"][0][1] = 7

    bad = _broken(tmp_path, HOTPOT, "e.json", edit)
    ds = hotpotqa.load(str(bad))
    assert ds.metadata["supporting_title_not_in_context"] == 1
    assert ds.metadata["supporting_sentence_out_of_range"] == 1
    assert ds.metadata["integrity"] == {"dangling_evidence": 1}
    with pytest.raises(DatasetError, match="dangling_evidence"):
        hotpotqa.load(str(bad), integrity="raise")


def test_hotpotqa_offline_error_names_the_file_and_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        DatasetError,
        match=r"hotpot_dev_distractor_v1\.json not found.*HF_HUB_OFFLINE is set.*curtis.*"
        + str(tmp_path / "hotpotqa"),
    ):
        hotpotqa.load(data_dir=str(tmp_path))
    (tmp_path / "hotpotqa").mkdir()
    (tmp_path / "hotpotqa" / hotpotqa.FILE).write_text(HOTPOT.read_text())
    assert hotpotqa.load(data_dir=str(tmp_path)).num_questions == 3


def test_hotpotqa_hub_rows_are_converted_back_to_the_upstream_file(tmp_path, monkeypatch):
    """The Hub branch with the network replaced by rows in hotpotqa/hotpot_qa's column layout."""
    from memharness.data_prep import hub

    def hub_shape(r):
        return {
            "id": r["_id"],
            **{k: r[k] for k in ("question", "answer", "type", "level")},
            "supporting_facts": {
                "title": [t for t, _ in r["supporting_facts"]],
                "sent_id": [i for _, i in r["supporting_facts"]],
            },
            "context": {
                "title": [t for t, _ in r["context"]],
                "sentences": [s for _, s in r["context"]],
            },
        }

    def fake_rows(hub_id, config, split, cache, revision):
        assert (hub_id, config, split) == ("hotpotqa/hotpot_qa", "distractor", "validation")
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "REVISION").write_text(f"{hub_id}@feedbeef\n")
        return [hub_shape(r) for r in json.loads(HOTPOT.read_text())], {}, "feedbeef"

    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    monkeypatch.setattr(hub, "hub_rows", fake_rows)
    online = hotpotqa.load(data_dir=str(tmp_path))
    assert online.revision == "hotpotqa/hotpot_qa@feedbeef"
    assert online.checksum() == hotpotqa.load(str(HOTPOT)).checksum()
    assert json.loads((tmp_path / "hotpotqa" / hotpotqa.FILE).read_text()) == json.loads(
        HOTPOT.read_text()
    )
    monkeypatch.setattr(hub, "hub_rows", None)  # the second load reads the cache
    assert hotpotqa.load(data_dir=str(tmp_path)).revision == online.revision


MUSIQUE = FIX / "musique" / "musique_ans_v1.0_dev.jsonl"


def _broken_jsonl(tmp_path, src, name, edit):
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    edit(rows)
    out = tmp_path / name
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def test_musique_hops_from_id_answers_with_aliases_and_paragraph_evidence():
    ds = musique.load(str(MUSIQUE))
    qs = [e.questions[0] for e in ds.episodes]
    assert [q.categories for q in qs] == [
        {"hops": "2hop", "shape": "2hop"},
        {"hops": "3hop", "shape": "3hop1"},
        {"hops": "4hop", "shape": "4hop3"},
    ]
    assert qs[0].answers == ("Sela Wren", "Sela Marie Wren") and qs[2].answers == ("1312",)
    raw = [json.loads(line) for line in MUSIQUE.read_text().splitlines()]
    for ep, rec in zip(ds.episodes, raw, strict=True):
        gold = {p["idx"] for p in rec["paragraphs"] if p["is_supporting"]}
        hit = {u.position for e in ep.questions[0].evidence for u in _units_of(ep, e)}
        assert hit == gold  # by paragraph index, not title
    # the first question has two "Wren & Alder" paragraphs; only the supporting one (idx 3) counts
    first = ds.episodes[0]
    assert [u.source_id for u in first.units].count("Wren & Alder") == 2
    assert {u.position for u in first.units if u.source_id == "Wren & Alder"} == {1, 3}


def test_musique_shared_corpus_and_sentence_granularity_refused():
    ep = musique.load(str(MUSIQUE), protocol="shared_corpus").episodes[0]
    assert len(ep.units) == 11 and len(ep.questions) == 3  # 14 paragraphs, 3 repeated verbatim
    for q in ep.questions:
        assert all(len(_units_of(ep, e)) == 1 for e in q.evidence)
    with pytest.raises(DatasetError, match="granularity=sentence.*no sentence boundaries"):
        musique.load(str(MUSIQUE), granularity="sentence")


def test_musique_unanswerable_excluded_and_counted(tmp_path):
    bad = _broken_jsonl(tmp_path, MUSIQUE, "m.jsonl", lambda r: r[1].update(answerable=False))
    ds = musique.load(str(bad))
    assert ds.num_questions == 2 and ds.metadata["excluded_unanswerable"] == 1
    assert musique.load(str(bad), include_unanswerable=True).num_questions == 3


def test_musique_schema_errors_name_file_line_and_field(tmp_path):
    bad = _broken_jsonl(tmp_path, MUSIQUE, "a.jsonl", lambda r: r[1].pop("answer_aliases"))
    with pytest.raises(DatasetError, match=r"a\.jsonl:2 \(id 3hop1__.*'answer_aliases'"):
        musique.load(str(bad))
    bad = _broken_jsonl(tmp_path, MUSIQUE, "b.jsonl", lambda r: r[0].update(id="5hop__1_2"))
    with pytest.raises(DatasetError, match=r"b\.jsonl:1.*field 'id' should start with 2hop__"):
        musique.load(str(bad))
    bad = _broken_jsonl(
        tmp_path, MUSIQUE, "c.jsonl", lambda r: r[2]["paragraphs"][1].pop("is_supporting")
    )
    with pytest.raises(DatasetError, match=r"c\.jsonl:3.*paragraphs\[1\].*'is_supporting'"):
        musique.load(str(bad))
    bad = _broken_jsonl(
        tmp_path, MUSIQUE, "d.jsonl", lambda r: r[0]["question_decomposition"][0].pop("answer")
    )
    with pytest.raises(DatasetError, match=r"d\.jsonl:1.*question_decomposition\[0\].*'answer'"):
        musique.load(str(bad))
    with pytest.raises(DatasetError, match=r"musique_ans_v1\.0_dev\.jsonl not found.*musique"):
        musique.load(data_dir=str(tmp_path))


TWOWIKI = FIX / "twowiki" / "dev.json"


def test_twowiki_four_types_sentence_evidence_and_alias_answers(tmp_path):
    ds = twowiki.load(str(TWOWIKI))
    qs = [e.questions[0] for e in ds.episodes]
    assert [q.categories for q in qs] == [
        {"type": t} for t in ("compositional", "comparison", "inference", "bridge_comparison")
    ]
    assert qs[0].answers == ("Mira Doran", "Mira Anna Doran", "M. Doran")  # answer_id Q90000004
    assert qs[1].answers == ("The Glass Orchard",)  # answer_id null: the answer alone
    assert ds.metadata["questions_with_aliases"] == 2
    assert any(p.endswith("id_aliases.json") for p in ds.files)
    # 2Wiki sentences carry no leading space: rejoined with one
    assert (
        ds.episodes[0].units[0].text.endswith("Pavel Doran. It was shot in the hills above Vessa.")
    )
    sent = twowiki.load(str(TWOWIKI), granularity="sentence").episodes[3]
    hits = [_units_of(sent, e) for e in sent.questions[0].evidence]
    assert [h[0].text.split("\n")[1] for h in hits] == [
        "The Glass Orchard is a 1958 drama film directed by Pavel Doran.",
        "It was directed by Hanne Sol.",
        "Pavel Doran (1921-1990) was a film director.",
        "Hanne Sol (born 1930) is a director.",
    ]
    # without the alias file (or with use_aliases=false) only the answer is a reference
    (tmp_path / "dev.json").write_text(TWOWIKI.read_text())
    assert twowiki.load(str(tmp_path)).episodes[0].questions[0].answers == ("Mira Doran",)
    off = twowiki.load(str(TWOWIKI), use_aliases=False)
    assert off.episodes[0].questions[0].answers == ("Mira Doran",)


def test_twowiki_shared_corpus_and_schema_errors(tmp_path):
    ep = twowiki.load(str(TWOWIKI), protocol="shared_corpus").episodes[0]
    assert len(ep.units) == 9 and len(ep.questions) == 4  # 13 paragraphs, 4 repeated verbatim
    # "Night Ferry" comes with two different texts: both kept, each question's evidence on its own
    ferry = [u.position for u in ep.units if u.source_id == "Night Ferry"]
    assert len(ferry) == 2
    hits = [{u.position for u in _units_of(ep, e)} for q in ep.questions[1::2] for e in q.evidence]
    assert hits[0] == {ferry[0]} and hits[3] == {ferry[1]}
    bad = _broken(tmp_path, TWOWIKI, "a.json", lambda r: r[3].update(type="bridge-comparison"))
    with pytest.raises(DatasetError, match=r"a\.json\[3\] \(_id a1b2c3d7.*'type' is 'bridge-comp"):
        twowiki.load(str(bad))
    bad = _broken(tmp_path, TWOWIKI, "b.json", lambda r: r[1]["evidences"].append(["x", "y"]))
    with pytest.raises(DatasetError, match=r"b\.json\[1\].*evidences\[2\]"):
        twowiki.load(str(bad))
    bad = _broken(tmp_path, TWOWIKI, "c.json", lambda r: r[0].pop("supporting_facts"))
    with pytest.raises(DatasetError, match=r"c\.json\[0\].*'supporting_facts'"):
        twowiki.load(str(bad))
    with pytest.raises(DatasetError, match=r"dev\.json not found.*2wikimultihop.*twowiki"):
        twowiki.load(data_dir=str(tmp_path / "none"))
