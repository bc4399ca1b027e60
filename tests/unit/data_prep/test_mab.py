"""MemoryAgentBench loader on hand-written rows in the Hub's row schema (tests/fixtures/mab)."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep import hub, mab
from memharness.data_prep.base import DatasetError
from memharness.memsys.services.tokens import get_tokenizer
from paths import FIXTURES

FIX = FIXTURES / "mab"
AR = FIX / "Accurate_Retrieval.jsonl"


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_context_chunked_in_order_at_sentence_ends_questions_after_the_last_chunk():
    ds = mab.load("ar", "ruler_qa1_197K", path=str(FIX), chunk_size=128)
    (ep,) = ds.episodes
    context = _rows(AR)[0]["context"]
    tok = get_tokenizer("cl100k_base")
    assert len(ep.units) > 1 and " ".join(u.text for u in ep.units) == " ".join(context.split(" "))
    assert all(u.text.endswith(".") for u in ep.units)  # never a sentence cut in two
    assert all(tok.count(u.text) <= 128 for u in ep.units)
    assert [u.position for u in ep.units] == list(range(len(ep.units)))
    q1, q2 = ep.questions
    assert (q1.id, q1.answers, q1.position) == ("ruler-q1", ("1726",), len(ep.units))
    assert q2.answers == ("Galloway", "the town of Galloway")  # a list of accepted answers
    assert q1.categories == {"competency": "ar", "mab_source": "ruler_qa1_197K"}
    assert ds.metadata["split"] == "Accurate_Retrieval" and ds.metadata["chunk_size"] == 128
    assert list(ds.files) == [str(AR)] and ds.metadata["integrity"] == {}


def test_source_filter_ids_and_the_default_chunk_size():
    ds = mab.load("ar", "eventqa_65536", path=str(AR))
    (ep,) = ds.episodes
    assert len(ep.units) == 1  # 4,096 tokens hold the whole context
    assert [q.answers for q in ep.questions] == [
        ("she buys bread", "argue about the price"),
        ("Wick Lane",),
    ]
    assert all(q.id.startswith("q-") for q in ep.questions)  # no ids upstream: content ids
    assert mab.load("ar", "eventqa_65536", path=str(AR)).checksum() == ds.checksum()
    cr = mab.load("cr", "factconsolidation_sh_6k", path=str(FIX)).episodes[0]
    assert cr.units[-1].text.endswith("The capital of Veloria is Brenn.")  # the late fact last


def test_single_question_takes_every_answer_as_upstream_pairs_them():
    row = _rows(AR)[0]
    row["questions"], row["answers"] = ["Which towns?"], ["Arlen", ["Brisk"]]
    (ep,) = mab.build_dataset([row], "rows", "ar", "ruler_qa1_197K", 4096).episodes
    assert [q.answers for q in ep.questions] == [("Arlen", "Brisk")]


@pytest.mark.parametrize(
    "change,message",
    [
        ({"context": "too short."}, r"rows\[0\]: context has 10 characters"),
        ({"questions": ["a", "b", "c"]}, r"3 questions but 2 answers"),
        ({"answers": [[], ["x"]]}, r"rows\[0\]\.answers\[0\]: an answer should be"),
        ({"metadata": {"question_ids": []}}, r"rows\[0\]\.metadata: missing field 'source'"),
    ],
)
def test_malformed_rows_are_refused_naming_the_field(change, message):
    row = {**_rows(AR)[0], **change}
    with pytest.raises(DatasetError, match=message):
        mab.build_dataset([row], "rows", "ar", "ruler_qa1_197K", 4096)


def test_unknown_source_lists_the_split_sources_and_offline_names_the_missing_file(
    tmp_path, monkeypatch
):
    with pytest.raises(DatasetError, match=r"sources in this split: eventqa_65536, ruler_qa1_197K"):
        mab.load("ar", "ruler_qa2_421K", path=str(FIX))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError) as err:
        mab.load("lru", "detective_qa", data_dir=str(tmp_path))
    assert str(tmp_path / "mab" / "Long_Range_Understanding.jsonl") in str(err.value)
    assert "ai-hyz/MemoryAgentBench" in str(err.value) and "HF_HUB_OFFLINE" in str(err.value)


def test_the_hubs_parquet_rows_and_the_hub_branch_give_the_same_episodes(tmp_path, monkeypatch):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = _rows(FIX / "Test_Time_Learning.jsonl")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "Test_Time_Learning-00000.parquet")
    source = "icl_banking77_5900shot_balance"
    from_parquet = mab.load("ttl", source, path=str(tmp_path))
    from_jsonl = mab.load("ttl", source, path=str(FIX))
    assert from_parquet.checksum() == from_jsonl.checksum()

    def fake_rows(hub_id, config, split, cache, revision):
        assert (hub_id, config, split) == ("ai-hyz/MemoryAgentBench", None, "Test_Time_Learning")
        return rows, {}, "beefcafe"

    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    monkeypatch.setattr(hub, "hub_rows", fake_rows)
    online = mab.load("ttl", source, data_dir=str(tmp_path / "data"))
    assert online.revision == "ai-hyz/MemoryAgentBench@beefcafe"
    assert online.checksum() == from_jsonl.checksum()
    assert (tmp_path / "data" / "mab" / "Test_Time_Learning.jsonl").is_file()


def test_rows_as_datasets_gives_them_null_filled_give_the_same_episodes(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = datasets.load_dataset("json", data_files=str(AR), split="train", cache_dir=str(tmp_path))
    out = tmp_path / "Accurate_Retrieval.jsonl"
    out.write_text("".join(json.dumps(dict(r)) + "\n" for r in rows))
    for source in ("ruler_qa1_197K", "eventqa_65536"):
        assert (
            mab.load("ar", source, path=str(out)).checksum()
            == mab.load("ar", source, path=str(AR)).checksum()
        )
