"""Dataset loaders against fixtures written in each upstream schema (our own text)."""

from __future__ import annotations

import json
import shutil

import pytest
from memharness.data_prep import msc, msc_e, multihop, novelqa, quality
from memharness.data_prep.base import DatasetError, check_integrity, subset
from paths import TESTS

FIX = TESTS / "fixtures"


def _hf_json_rows(files, tmp_path, field=None):
    """Rows as ``datasets.load_dataset("json", ...)`` (and so the Hub) hands them over."""
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset(
        "json",
        data_files=[str(f) for f in files],
        split="train",
        cache_dir=str(tmp_path / "hf"),
        field=field,
    )
    return [dict(r) for r in ds]


# ----------------------------------------------------------------------------- MSC


def test_msc_rounds_in_order_with_speakers_and_sessions_and_no_personas():
    ds = msc.load(str(FIX / "msc" / "msc_self_instruct.jsonl"))
    assert len(ds.episodes) == 3 and ds.num_questions == 3
    ep = ds.episodes[0]
    assert len(ep.units) == 10  # 4 previous sessions x 2 rounds + session 5 x 2 rounds
    assert ep.units[0].text.startswith("[Session 1]\nSpeaker 1: Session 1 hello")
    assert "Speaker 2: Tell me more" in ep.units[0].text
    assert [u.metadata["session"] for u in ep.units] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert (
        ep.units[-1].text
        == "[Session 5]\nSpeaker 1: Great, I settled on a teal glaze.\nSpeaker 2: That is a good choice."
    )
    q = ep.questions[0]
    assert (q.text, q.answers, q.position) == (
        "What glaze did you pick for the bowls?",
        ("A teal glaze.",),
        10,
    )
    assert not any(
        "ANSWER LEAK" in u.text or "I use a teal glaze" in u.text
        for e in ds.episodes
        for u in e.units
    )
    assert ds.revision == "local" and list(ds.files.values())[0] == msc.hub.sha256_file(
        FIX / "msc" / "msc_self_instruct.jsonl"
    )


def test_msc_turn_units_and_ids_are_deterministic():
    a = msc.load(str(FIX / "msc"), unit="turn")
    b = msc.load(str(FIX / "msc"), unit="turn")
    assert len(a.episodes[0].units) == 20 and a.checksum() == b.checksum()
    assert not any(check_integrity(a).values())


def test_msc_rows_from_datasets_json_parse_identically(tmp_path):
    file = FIX / "msc" / "msc_self_instruct.jsonl"
    rows = _hf_json_rows([file], tmp_path)
    via_hf = msc.episodes_from_rows((f"row{i}", r) for i, r in enumerate(rows))
    direct = msc.load(str(file)).episodes
    assert [u.text for e in via_hf for u in e.units] == [u.text for e in direct for u in e.units]
    assert [q.id for e in via_hf for q in e.questions] == [
        q.id for e in direct for q in e.questions
    ]


def test_msc_schema_error_names_file_line_and_field(tmp_path):
    row = json.loads((FIX / "msc" / "msc_self_instruct.jsonl").read_text().splitlines()[0])
    del row["self_instruct"]["A"]
    bad = tmp_path / "msc_self_instruct.jsonl"
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(
        DatasetError, match=r"msc_self_instruct.jsonl:1: self_instruct: missing field 'A'"
    ):
        msc.load(str(bad))


# ----------------------------------------------------------------------------- QuALITY


def test_quality_merges_article_lines_and_uses_gold_text():
    ds = quality.load(str(FIX / "quality"), split="dev")
    assert [e.id for e in ds.episodes] == ["quality-90001", "quality-90002"]
    ep = ds.episodes[0]
    assert len(ep.questions) == 4 and {q.id.split("_")[1] for q in ep.questions} == {
        "FIX0SET",
        "FIX1SET",
    }
    assert len(ep.units) > 1 and all(q.position == len(ep.units) for q in ep.questions)
    q = ep.questions[0]  # gold_label 2 (1-based) -> option B
    assert q.answers == ("Option B for question 1",) and q.options is None and q.gold_option is None
    assert sorted({q.categories["difficulty"] for e in ds.episodes for q in e.questions}) == [
        "easy",
        "hard",
    ]


def test_quality_chunks_are_512_tokens_without_overlap():
    ds = quality.load(str(FIX / "quality"))
    from memharness.memsys.services.tokens import get_tokenizer

    tok = get_tokenizer()
    counts = [tok.count(u.text) for u in ds.episodes[0].units]
    assert max(counts) <= 512 and counts[0] >= 500
    line = json.loads(
        (FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev").read_text().splitlines()[0]
    )
    assert tok.count(line["article"]) == pytest.approx(sum(counts), abs=3)


def test_quality_multiple_choice_mode_keeps_options_and_zero_based_gold():
    ds = quality.load(str(FIX / "quality"), mode="multiple_choice")
    q = ds.episodes[0].questions[0]
    assert (
        q.gold_option == 1 and q.answers == ()
    )  # scored by letter; the reference is the gold option
    from memharness.eval.judge.prompt import reference_text
    from memharness.eval.run.answer import is_multiple_choice

    assert is_multiple_choice(q, "auto") and reference_text(q) == q.options[1]
    free = quality.load(str(FIX / "quality")).episodes[0].questions[0]
    assert (
        free.options is None
        and free.answers == (q.options[1],)
        and not is_multiple_choice(free, "auto")
    )


def test_quality_mirror_parquet_and_jsonl_agree_with_official(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [
        json.loads(x)
        for x in (FIX / "quality" / "emozilla_quality.validation.jsonl").read_text().splitlines()
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "validation.parquet")
    from_parquet = quality.load(str(tmp_path / "validation.parquet"), mode="multiple_choice")
    from_jsonl = quality.load(
        str(FIX / "quality" / "emozilla_quality.validation.jsonl"), mode="multiple_choice"
    )
    official = quality.load(str(FIX / "quality"), mode="multiple_choice")
    key = lambda d: [
        (q.text, q.answers, q.gold_option, q.categories["difficulty"])
        for e in d.episodes
        for q in e.questions
    ]
    assert key(from_parquet) == key(from_jsonl) == key(official)
    assert from_parquet.checksum() == from_jsonl.checksum()


def test_quality_rows_from_datasets_json(tmp_path):
    file = tmp_path / "QuALITY.v1.0.1.htmlstripped.dev"
    shutil.copy(FIX / "quality" / file.name, file)
    rows = _hf_json_rows([file], tmp_path)
    eps = quality.episodes_from_rows([(f"r{i}", r) for i, r in enumerate(rows)])
    assert [len(e.questions) for e in eps] == [4, 4]


def test_quality_raw_html_is_stripped_and_test_split_without_labels_fails(tmp_path):
    line = json.loads(
        (FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev").read_text().splitlines()[0]
    )
    line["article"] = "<html><body><p>The keeper &amp; the gulls.</p></body></html>"
    raw = tmp_path / "QuALITY.v1.0.1.dev"
    raw.write_text(json.dumps(line) + "\n")
    assert quality.load(str(raw)).episodes[0].units[0].text.strip() == "The keeper & the gulls."
    for q in line["questions"]:
        del q["gold_label"]
    raw.write_text(json.dumps(line) + "\n")
    with pytest.raises(
        DatasetError, match=r"QuALITY.v1.0.1.dev:1: questions\[0\]: missing field 'gold_label'"
    ):
        quality.load(str(raw))


# ----------------------------------------------------------------------------- MultiHop-RAG


def test_multihop_one_episode_evidence_linked_and_null_excluded():
    ds = multihop.load(str(FIX / "multihop"), chunk_size=128)
    assert len(ds.episodes) == 1
    ep = ds.episodes[0]
    assert [q.categories["type"] for q in ep.questions] == ["inference", "temporal", "comparison"]
    assert ds.metadata["excluded_null_queries"] == 1
    assert ep.units[0].text.startswith(
        "Title: Harbor town opens a floating library\nSource: Dockside Daily\n"
        "Published: 2023-10-02T09:15:00+00:00"
    )
    corpus = json.loads((FIX / "multihop" / "corpus.json").read_text())
    for q in ep.questions:
        assert len(q.evidence) == 2
        for ev in q.evidence:
            first = ep.units[ev.position]
            assert first.source_id == ev.source_id and (
                ev.position == 0 or ep.units[ev.position - 1].source_id != ev.source_id
            )
    assert len({u.source_id for u in ep.units}) == len(corpus)
    assert ds.metadata["matches_sha256_pins"] == {"corpus.json": False, "MultiHopRAG.json": False}


def test_multihop_include_null_and_chunk_size_switch():
    small = multihop.load(str(FIX / "multihop"), chunk_size=128, include_null=True)
    big = multihop.load(str(FIX / "multihop"), chunk_size=1024)
    assert [q.categories["type"] for q in small.episodes[0].questions][-1] == "null"
    assert len(small.episodes[0].units) > len(big.episodes[0].units) == 4


def test_multihop_dangling_evidence_is_reported_or_raised(tmp_path):
    for name in ("corpus.json", "MultiHopRAG.json"):
        shutil.copy(FIX / "multihop" / name, tmp_path / name)
    queries = json.loads((tmp_path / "MultiHopRAG.json").read_text())
    queries[0]["evidence_list"][0]["url"] = "https://missing.invalid/x"
    queries[0]["evidence_list"][0]["title"] = "No such article"
    (tmp_path / "MultiHopRAG.json").write_text(json.dumps(queries))
    ds = multihop.load(str(tmp_path))
    assert ds.metadata["integrity"] == {"dangling_evidence": 1}
    with pytest.raises(DatasetError, match="dangling_evidence"):
        multihop.load(str(tmp_path), integrity="raise")


def test_multihop_rows_from_datasets_json(tmp_path):
    corpus = _hf_json_rows([FIX / "multihop" / "corpus.json"], tmp_path)
    queries = _hf_json_rows([FIX / "multihop" / "MultiHopRAG.json"], tmp_path)
    ds = multihop.build_dataset(corpus, queries, ("corpus", "queries"))
    assert ds.checksum() == multihop.load(str(FIX / "multihop")).checksum()


def test_multihop_bad_type_names_file_and_field(tmp_path):
    shutil.copy(FIX / "multihop" / "corpus.json", tmp_path / "corpus.json")
    queries = json.loads((FIX / "multihop" / "MultiHopRAG.json").read_text())
    queries[1]["question_type"] = "riddle_query"
    (tmp_path / "MultiHopRAG.json").write_text(json.dumps(queries))
    with pytest.raises(
        DatasetError, match=r"MultiHopRAG.json\[1\]: unknown question_type 'riddle_query'"
    ):
        multihop.load(str(tmp_path))


# ----------------------------------------------------------------------------- NovelQA


def test_novelqa_books_layout_labels_and_modes():
    ds = novelqa.load(str(FIX / "novelqa"), chunk_size=128)
    assert [e.id for e in ds.episodes] == ["novelqa-B01", "novelqa-B02"]
    b1, b2 = ds.episodes
    assert b1.metadata["title"] == "The Island Maps" and len(b1.units) > 1
    mc = b1.questions[1]
    assert (mc.options, mc.gold_option, mc.answers) == (("Yes", "No"), 0, ())
    assert mc.categories == {"aspect": "character", "complexity": "sh", "mode": "multiple_choice"}
    gen = b2.questions[1]
    assert gen.answers == ("She is a clockmaker.",) and gen.options[gen.gold_option] == "Clockmaker"
    assert gen.categories["mode"] == "generative" and gen.id == "B02-Q0002"


def test_novelqa_raw_novels_layout_and_missing_pairs(tmp_path):
    (tmp_path / "Raw_Novels").mkdir()
    (tmp_path / "Data").mkdir()
    shutil.copy(FIX / "novelqa/Books/PublicDomain/B01.txt", tmp_path / "Raw_Novels/B01.txt")
    shutil.copy(FIX / "novelqa/Data/PublicDomain/B01.json", tmp_path / "Data/B01.json")
    shutil.copy(FIX / "novelqa/Data/PublicDomain/B02.json", tmp_path / "Data/B02.json")
    ds = novelqa.load(str(tmp_path))
    assert [e.id for e in ds.episodes] == ["novelqa-B01"]
    assert ds.metadata["skipped"]["questions_without_text"] == ["B02"]


def test_novelqa_unlabelled_item_and_missing_folder_fail_clearly(tmp_path):
    shutil.copytree(FIX / "novelqa", tmp_path / "nq")
    qa = tmp_path / "nq/Data/PublicDomain/B01.json"
    items = json.loads(qa.read_text())
    del items[0]["Gold"]
    qa.write_text(json.dumps(items))
    with pytest.raises(DatasetError, match=r"B01.json\[0\]: no gold label"):
        novelqa.load(str(tmp_path / "nq"))
    with pytest.raises(DatasetError, match=r"dataset.loader.path=.*request access"):
        novelqa.load(None, data_dir=str(tmp_path / "empty"))


# ----------------------------------------------------------------------------- MSC-E (loader side)


def test_msc_e_fixture_is_online_with_evidence_positions():
    ds = msc_e.load(str(FIX / "msc_e"))
    ep = ds.episodes[0]
    assert ep.is_online and len(ep.units) == 12
    assert ep.units[0].text.startswith("Alex: ") and "\nBob: " in ep.units[0].text
    positions = [(q.position, q.evidence_position) for q in ep.questions]
    assert positions == [(4, 0), (8, 4), (12, 8)]
    events = list(ep.events())
    assert [k for k, _ in events] == ["insert", "ask", "insert", "ask", "insert", "ask"]


def test_msc_e_bad_record_names_field(tmp_path):
    rec = json.loads((FIX / "msc_e" / "msc_e.v1.jsonl").read_text().splitlines()[0])
    rec["questions"][0]["evidence_rounds"] = [3, 1]
    (tmp_path / "msc_e.v1.jsonl").write_text(json.dumps(rec) + "\n")
    with pytest.raises(
        DatasetError, match=r"msc_e.v1.jsonl:1: questions\[0\]: field 'evidence_rounds'"
    ):
        msc_e.load(str(tmp_path))


# ----------------------------------------------------------------------------- subsets


def test_stratified_subset_covers_every_multihop_type():
    ds = multihop.load(str(FIX / "multihop"), include_null=True)
    sub = subset(ds, limit=4, seed=0, stratify_by="type")
    assert sorted(q.categories["type"] for q in sub.episodes[0].questions) == [
        "comparison",
        "inference",
        "null",
        "temporal",
    ]
    two = subset(ds, limit=2, seed=3, stratify_by="type")
    assert two.num_questions == 2 and subset(ds, 2, 3, "type").checksum() == two.checksum()


def test_token_window_units_say_they_continue_the_cut_so_memories_rejoin_them_exactly():
    """QuALITY and MultiHop-RAG units are token windows of one text: each unit after a
    document's first is marked as continuing it, and rejoining them gives the text back."""
    from memharness.memsys.raptor.chunker import join_units, source_runs

    ds = quality.load(str(FIX / "quality"))
    units = ds.episodes[0].units
    assert len(units) > 1 and "continues" not in units[0].metadata
    assert all(u.metadata["continues"] is True for u in units[1:])
    line = json.loads(
        (FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev").read_text().splitlines()[0]
    )
    assert join_units(units)[0] == line["article"]
    news = multihop.load(str(FIX / "multihop"), chunk_size=128).episodes[0].units
    for run in source_runs(news):
        assert [u.metadata.get("continues", False) for u in run] == [False] + [True] * (
            len(run) - 1
        )
