"""With no network and no local copy, choosing a dataset fails fast and says what to do."""

from __future__ import annotations

import time

import pytest
from memharness.data_prep import hub, msc, msc_e, multihop, quality
from memharness.data_prep.base import DatasetError
from paths import TESTS

LOADERS = [
    (msc, "MemGPT/MSC-Self-Instruct", "msc"),
    (quality, "emozilla/quality", "quality"),
    (multihop, "yixuantt/MultiHopRAG", "multihop"),
]


@pytest.mark.parametrize("module,hub_id,name", LOADERS)
def test_offline_env_fails_fast_naming_id_cache_and_setting(
    module, hub_id, name, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(DatasetError) as err:
        module.load(path=None, data_dir=str(tmp_path))
    message = str(err.value)
    assert time.monotonic() - start < 2
    assert (
        hub_id in message and str(tmp_path / name) in message and "dataset.loader.path=" in message
    )
    assert "HF_HUB_OFFLINE is set" in message


@pytest.mark.parametrize("module,hub_id,name", LOADERS)
def test_unreachable_hub_fails_fast(module, hub_id, name, tmp_path, monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: refused at once
    monkeypatch.setattr(hub, "HUB_TIMEOUT_S", 1.0)
    with pytest.raises(
        DatasetError, match=r"127\.0\.0\.1:9 is unreachable.*dataset\.loader\.path="
    ):
        module.load(path=None, data_dir=str(tmp_path))


def test_cached_copy_is_used_without_network(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import shutil

    fixture = TESTS / "fixtures" / "msc" / "msc_self_instruct.jsonl"
    (tmp_path / "msc").mkdir()
    shutil.copy(fixture, tmp_path / "msc" / fixture.name)
    (tmp_path / "msc" / "REVISION").write_text("MemGPT/MSC-Self-Instruct@abc123\n")
    ds = msc.load(path=None, data_dir=str(tmp_path))
    assert ds.revision == "MemGPT/MSC-Self-Instruct@abc123" and len(ds.episodes) == 3


def test_missing_local_path_and_msc_e_without_file(tmp_path):
    with pytest.raises(DatasetError, match=r"dataset.loader.path='.*nowhere' does not exist"):
        quality.load(path=str(tmp_path / "nowhere"))
    with pytest.raises(DatasetError, match=r"memharness msc-e generate.*dataset.loader.path="):
        msc_e.load(path=None, data_dir=str(tmp_path))


def test_hub_path_downloads_into_cache_records_revision_and_then_works_offline(
    tmp_path, monkeypatch
):
    """The Hub branch with the network replaced by rows that datasets.load_dataset("json") produced."""
    from pathlib import Path

    datasets = pytest.importorskip("datasets")
    fix = TESTS / "fixtures" / "multihop"

    def fake_rows(hub_id, config, split, cache, revision):
        name = {"corpus": "corpus.json", "MultiHopRAG": "MultiHopRAG.json"}[config]
        ds = datasets.load_dataset(
            "json", data_files=str(fix / name), split="train", cache_dir=str(tmp_path / "hf")
        )
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "REVISION").write_text(f"{hub_id}@feedbeef\n")
        return [dict(r) for r in ds], {}, "feedbeef"

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    monkeypatch.setattr(hub, "hub_rows", fake_rows)
    online = multihop.load(path=None, data_dir=str(tmp_path / "data"))
    assert online.revision == "yixuantt/MultiHopRAG@feedbeef"
    assert set(Path(p).name for p in online.files) == {"corpus.json", "MultiHopRAG.json"}
    assert online.checksum() == multihop.load(str(fix)).checksum()  # same text as the files
    monkeypatch.setattr(hub, "hub_rows", None)  # a second load must not touch the Hub
    again = multihop.load(path=None, data_dir=str(tmp_path / "data"))
    assert again.revision == online.revision and again.checksum() == online.checksum()


def test_msc_hub_branch_uses_the_downloaded_file(tmp_path, monkeypatch):
    import shutil

    fixture = TESTS / "fixtures" / "msc" / "msc_self_instruct.jsonl"

    def fake_download(hub_id, filename, cache, revision):
        cache.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixture, cache / filename)
        return cache / filename, "cafe01"

    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    monkeypatch.setattr(hub, "hub_download", fake_download)
    ds = msc.load(path=None, data_dir=str(tmp_path))
    assert ds.revision == "MemGPT/MSC-Self-Instruct@cafe01"
    assert list(ds.files) == [str(tmp_path / "msc" / "msc_self_instruct.jsonl")]
