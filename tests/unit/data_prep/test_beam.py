"""BEAM loader on hand-written conversations in the Hub's row schema (tests/fixtures/beam)."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep import beam
from memharness.data_prep.base import DatasetError
from paths import FIXTURES

FIX = FIXTURES / "beam"


def _row(name="100K.jsonl", i=0):
    return json.loads((FIX / name).read_text().splitlines()[i])


def test_each_conversation_an_episode_messages_as_dated_units_questions_after_them():
    ds = beam.load("128k", path=str(FIX))
    assert [e.id for e in ds.episodes] == ["beam-128k-1", "beam-128k-2"]
    ep = ds.episodes[0]
    assert len(ep.units) == 8 and [u.source_id for u in ep.units[3:5]] == ["batch-1", "batch-2"]
    assert ep.units[0].timestamp == "2024-04-02" and ep.units[3].timestamp == "2024-04-02"
    assert ep.units[4].timestamp == "2024-04-20"  # the next batch's anchor
    assert (
        ep.units[1].text
        == "[2024-04-02] assistant: Great choice. Basil likes six hours of sun and moist soil."
    )
    assert ep.units[2].metadata == {"role": "user", "chat_id": 2}
    qs = {q.categories["ability"]: q for q in ep.questions}
    assert set(qs) == {"abstention", "event_ordering", "knowledge_update", "summarization"}
    assert all(q.position == 8 for q in ep.questions)
    order = qs["event_ordering"]
    assert order.id == "beam-128k-1-event_ordering-0" and len(order.rubric) == 3
    assert qs["abstention"].answers[0].startswith("Based on the provided chat")  # ideal_response
    assert qs["summarization"].answers[0].startswith("You began with basil")  # ideal_summary
    assert ds.metadata["split"] == "100K" and ds.metadata["integrity"] == {}


def test_ten_million_rows_read_their_plans_in_order_and_conversations_select():
    (ep,) = beam.load("10m", path=str(FIX)).episodes
    assert len(ep.units) == 8 + 4 and ep.units[-1].source_id == "plan-2/batch-1"
    assert "project p2" in ep.units[8].text
    only = beam.load("128k", path=str(FIX), conversations=["2"])
    assert [e.id for e in only.episodes] == ["beam-128k-2"]
    with pytest.raises(DatasetError, match=r"\['9'\] not in"):
        beam.load("128k", path=str(FIX), conversations=["9"])


def test_parquet_rows_stream_one_at_a_time_and_give_the_same_episodes(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    rows = [_row(i=0), _row(i=1)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "100K-00000-of-00001.parquet")
    assert len(list(beam.iter_rows(tmp_path / "100K-00000-of-00001.parquet"))) == 2
    a, b = beam.load("128k", path=str(tmp_path)), beam.load("128k", path=str(FIX))
    assert a.checksum() == b.checksum()


@pytest.mark.parametrize(
    "change,message",
    [
        ({"probing_questions": "{'feelings': []}"}, r"unknown abilities \['feelings'\]"),
        ({"probing_questions": "not a literal ["}, r"neither a Python literal nor JSON"),
        (
            {"probing_questions": repr({"abstention": [{"question": "q", "rubric": []}]})},
            r"abstention\[0\]: the rubric should be a non-empty list",
        ),
        (
            {"probing_questions": repr({"abstention": [{"question": "q", "rubric": ["r"]}]})},
            r"no gold answer",
        ),
    ],
)
def test_malformed_probing_questions_are_refused_naming_the_field(change, message):
    with pytest.raises(DatasetError, match=message):
        beam.conversation_episode({**_row(), **change}, "row", "128k", "{role}: {content}")


def test_offline_without_a_copy_names_the_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError) as err:
        beam.load("10m", data_dir=str(tmp_path))
    assert str(tmp_path / "beam" / "10M.jsonl") in str(err.value)
    assert "Mohammadta/BEAM-10M" in str(err.value)


def test_a_rebuilding_memory_on_a_long_conversation_is_warned_about_in_one_line():
    from memharness.eval.run.rebuild_warning import ingest_warning
    from omegaconf import OmegaConf

    ds = beam.load("10m", path=str(FIX))
    raptor = OmegaConf.create(
        {
            "memory": {"_target_": "memharness.memsys.raptor.Raptor", "name": "raptor"},
            "llm": {"prices": {"m": {"prompt": 2.5, "completion": 10.0}}},
        }
    )
    line = ingest_warning(raptor, ds, threshold=50)
    tokens = int(line.split(" has ")[1].split(" tokens")[0].replace(",", ""))
    assert "memory=raptor rebuilds" in line and "\n" not in line
    assert "force 1 rebuild(s)" in line  # every BEAM question comes after the conversation
    assert f"re-reading {tokens:,} tokens (~${tokens * 2.5 / 1e6:,.2f}" in line
    assert ingest_warning(raptor, ds, threshold=10**7) is None  # short enough
    stream = OmegaConf.create(
        {"memory": {"_target_": "memharness.memsys.memorystream.MemoryStream"}}
    )
    assert ingest_warning(stream, ds, threshold=50) is None  # inserts online: no rebuild


def test_rows_as_datasets_gives_them_null_filled_give_the_same_episodes(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = datasets.load_dataset(
        "json", data_files=str(FIX / "100K.jsonl"), split="train", cache_dir=str(tmp_path)
    )
    out = tmp_path / "100K.jsonl"
    out.write_text("".join(json.dumps(dict(r)) + "\n" for r in rows))
    assert (
        beam.load("128k", path=str(out)).checksum() == beam.load("128k", path=str(FIX)).checksum()
    )


def test_the_hub_branch_asks_the_10m_repo_and_keeps_its_rows_for_offline_runs(
    tmp_path, monkeypatch
):
    from memharness.data_prep import hub

    def fake_rows(hub_id, config, split, cache, revision):
        assert (hub_id, config, split) == ("Mohammadta/BEAM-10M", None, "10M")
        return [_row("10M.jsonl")], {}, "c0ffee"

    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    monkeypatch.setattr(hub, "hub_rows", fake_rows)
    online = beam.load("10m", data_dir=str(tmp_path))
    assert online.revision == "Mohammadta/BEAM-10M@c0ffee"
    monkeypatch.setattr(hub, "hub_rows", None)  # the second load reads the kept jsonl
    again = beam.load("10m", data_dir=str(tmp_path))
    assert again.checksum() == online.checksum() == beam.load("10m", path=str(FIX)).checksum()


def test_jsonl_rows_are_read_line_by_line_never_the_whole_file(tmp_path):
    path = tmp_path / "100K.jsonl"
    lines = (FIX / "100K.jsonl").read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"caf\xe9 " + lines[1])
    rows = beam.iter_rows(path)
    where, first = next(rows)  # the first conversation comes before the second line is read
    assert where == f"{path}:1" and first["conversation_id"] == "1"
    with pytest.raises(DatasetError, match=rf"{path}:2:4: not valid UTF-8"):
        next(rows)
