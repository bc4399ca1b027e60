"""NarrativeQA (LongBench), QMSum, ODSum-Story and ODSum-Meeting on their upstream-schema fixtures:
episodes, references, evidence, one-line schema errors, the offline error and the composed Hub path."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from memharness.data_prep import hub, narrativeqa, odsum, qmsum
from memharness.data_prep.base import DatasetError
from memharness.eval.run.validate import validate_config
from paths import ROOT, TESTS

FIX = TESTS / "fixtures"
NQA = FIX / "narrativeqa" / "narrativeqa.jsonl"


def _units_of(ep, ev):
    if ev.position is None:
        return [u for u in ep.units if u.source_id == ev.source_id]
    return ep.units[ev.position : ev.end]


def _edit_jsonl(src, dst, edit, line=0):
    rows = [json.loads(x) for x in src.read_text().splitlines()]
    edit(rows[line])
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


# ---------------------------------------------------------------- NarrativeQA (LongBench)


def test_narrativeqa_questions_of_one_story_share_its_episode():
    ds = narrativeqa.load(str(NQA))
    assert [len(e.questions) for e in ds.episodes] == [2, 1] and ds.num_questions == 3
    first = ds.episodes[0]
    q = first.questions[0]
    assert q.id == "nqa-fix-0001" and q.answers == (
        "The furniture of the keeper's cottage",
        "furniture",
    )
    assert all(x.position == len(first.units) for x in first.questions)  # after the whole story
    assert "ninth night" in " ".join(u.text for u in first.units)
    small = narrativeqa.load(str(NQA), chunk_size=16)
    assert len(small.episodes[0].units) > 5 and small.checksum() != ds.checksum()
    assert narrativeqa.load(str(NQA.parent)).checksum() == ds.checksum()  # the folder works too


def test_narrativeqa_schema_errors_name_file_line_and_field(tmp_path):
    bad = _edit_jsonl(NQA, tmp_path / "a.jsonl", lambda r: r.pop("answers"), line=1)
    with pytest.raises(
        DatasetError, match=r"a\.jsonl:2 \(_id nqa-fix-0002\): missing field 'answers'"
    ):
        narrativeqa.load(str(bad))
    bad = _edit_jsonl(NQA, tmp_path / "b.jsonl", lambda r: r.update(dataset="qasper"))
    with pytest.raises(DatasetError, match=r"b\.jsonl:1 .*'dataset' is 'qasper'"):
        narrativeqa.load(str(bad))
    bad = _edit_jsonl(NQA, tmp_path / "c.jsonl", lambda r: r.update(answers=[]))
    with pytest.raises(DatasetError, match=r"c\.jsonl:1 .*non-empty list of strings") as err:
        narrativeqa.load(str(bad))
    assert "\n" not in str(err.value)


def test_narrativeqa_offline_error_names_the_file_and_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError) as err:
        narrativeqa.load(data_dir=str(tmp_path))
    msg = str(err.value)
    assert "narrativeqa.jsonl not found" in msg and "HF_HUB_OFFLINE is set" in msg
    assert str(tmp_path / "narrativeqa") in msg and "THUDM/LongBench" in msg and "\n" not in msg


def _fake_longbench(tmp_path, monkeypatch):
    """The Hub download replaced by a data.zip holding the fixture (as LongBench's data/ folder)."""

    def fake_download(hub_id, filename, cache, revision):
        assert (hub_id, filename) == ("THUDM/LongBench", "data.zip")
        cache.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(cache / filename, "w") as z:
            z.writestr("data/qmsum.jsonl", "{}\n")
            z.write(NQA, "data/narrativeqa.jsonl")
        (cache / "REVISION").write_text(f"{hub_id}@c0ffee\n")
        return cache / filename, "c0ffee"

    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)
    monkeypatch.setattr(hub, "hub_download", fake_download)


def test_narrativeqa_hub_zip_is_extracted_into_the_cache_then_read_offline(tmp_path, monkeypatch):
    _fake_longbench(tmp_path, monkeypatch)
    online = narrativeqa.load(data_dir=str(tmp_path))
    assert online.revision == "THUDM/LongBench@c0ffee"
    assert online.checksum() == narrativeqa.load(str(NQA)).checksum()
    assert (tmp_path / "narrativeqa" / "narrativeqa.jsonl").read_bytes() == NQA.read_bytes()
    monkeypatch.setattr(hub, "hub_download", None)  # the second load reads the cache
    assert narrativeqa.load(data_dir=str(tmp_path)).revision == online.revision


# ---------------------------------------------------------------- QMSum

QMSUM = FIX / "qmsum"


def test_qmsum_one_episode_per_meeting_with_general_and_specific_queries():
    ds = qmsum.load(str(QMSUM))
    assert [e.id for e in ds.episodes] == ["qmsum-Fix002", "qmsum-Fix001"]  # val before test
    ep = ds.episodes[1]
    assert [q.id for q in ep.questions] == ["Fix001-g0", "Fix001-s0"]
    assert [q.categories for q in ep.questions] == [
        {"query_type": "general", "split": "test"},
        {"query_type": "specific", "split": "test"},
    ]
    assert ep.questions[0].evidence == () and ep.questions[1].answers[0].startswith("Priya will")
    assert ep.units[0].text.startswith("Chair: Let's start.")  # turns packed as "speaker: content"
    assert [e.id for e in qmsum.load(str(QMSUM), split="test").episodes] == ["qmsum-Fix001"]


def test_qmsum_spans_are_inclusive_turn_ranges_mapped_to_units():
    ep = qmsum.load(str(QMSUM), chunk_size=None).episodes[1]  # one unit per turn
    assert len(ep.units) == 7
    (ev,) = ep.questions[1].evidence  # relevant_text_span [["4", "6"]]
    assert (ev.position, ev.end) == (4, 7)
    assert [u.text.split(":")[0] for u in _units_of(ep, ev)] == ["Priya", "Tomas", "Priya"]
    packed = qmsum.load(str(QMSUM), chunk_size=40).episodes[1]
    (ev,) = packed.questions[1].evidence
    covered = " ".join(u.text for u in _units_of(packed, ev))
    assert "Nobody waters it" in covered and "weekly rota" in covered


def test_qmsum_jsonl_variant_and_schema_errors(tmp_path):
    meeting = json.loads((QMSUM / "test" / "Fix001.json").read_text())
    (tmp_path / "jsonl").mkdir()
    (tmp_path / "jsonl" / "test.jsonl").write_text(json.dumps(meeting) + "\n")
    ds = qmsum.load(str(tmp_path))
    assert ds.num_questions == 2 and ds.episodes[0].id == "qmsum-test1"
    bad = json.loads(json.dumps(meeting))
    bad["specific_query_list"][0]["relevant_text_span"] = [["4", "9"]]
    (tmp_path / "b.json").write_text(json.dumps(bad))
    with pytest.raises(
        DatasetError,
        match=r"b\.json\.specific_query_list\[0\]\.relevant_text_span\[0\]: span .* outside .*0\.\.6",
    ):
        qmsum.load(str(tmp_path / "b.json"))
    bad = json.loads(json.dumps(meeting))
    del bad["meeting_transcripts"][2]["speaker"]
    (tmp_path / "c.json").write_text(json.dumps(bad))
    with pytest.raises(
        DatasetError, match=r"c\.json\.meeting_transcripts\[2\]: missing field 'speaker'"
    ):
        qmsum.load(str(tmp_path / "c.json"))
    with pytest.raises(
        DatasetError, match=r"no local copy at .*qmsum.*Yale-LILY/QMSum.*dataset\.loader\.path="
    ):
        qmsum.load(data_dir=str(tmp_path / "empty"))


# ---------------------------------------------------------------- ODSum

STORY, MEETING = FIX / "odsum_story", FIX / "odsum_meeting"


def test_odsum_story_is_one_pool_with_title_evidence_and_every_reference():
    ds = odsum.load_story(str(STORY))
    (ep,) = ds.episodes
    assert {u.source_id for u in ep.units} == {
        "THE COPPER GARDEN",
        "A CLOCK FOR MARS",
        "SIGNAL FROM VEGA",
    }
    assert all(q.position == len(ep.units) for q in ep.questions) and ds.num_questions == 4
    q = ep.questions[0]
    assert len(q.answers) == 4 and q.categories == {"question_number": "1", "split": "train"}
    hit = _units_of(ep, q.evidence[0])
    assert len(hit) == 2 and all(u.source_id == "THE COPPER GARDEN" for u in hit)
    assert ep.questions[2].categories["split"] == "dev"
    assert odsum.load_story(str(STORY / "raw")).checksum() == ds.checksum()  # raw/ itself works


def test_odsum_story_unknown_title_is_dangling_and_schema_errors_name_the_line(tmp_path):
    shutil.copytree(STORY, tmp_path / "s")
    queries = tmp_path / "s" / "raw" / "queries.jsonl"
    lines = queries.read_text().splitlines()
    items = json.loads(lines[2])
    items[0]["title"] = "NO SUCH STORY"
    queries.write_text("\n".join([*lines[:2], json.dumps(items), *lines[3:]]) + "\n")
    assert odsum.load_story(str(tmp_path / "s")).metadata["integrity"] == {"dangling_evidence": 1}
    with pytest.raises(DatasetError, match="dangling_evidence: 1"):
        odsum.load_story(str(tmp_path / "s"), integrity="raise")
    items[0].pop("responses")
    queries.write_text("\n".join([*lines[:2], json.dumps(items), *lines[3:]]) + "\n")
    with pytest.raises(DatasetError, match=r"queries\.jsonl:3\[0\]: missing field 'responses'"):
        odsum.load_story(str(tmp_path / "s"))
    docs = tmp_path / "s" / "raw" / "documents" / "dev.jsonl"
    _edit_jsonl(docs, docs, lambda r: r.pop("divided_document"))
    with pytest.raises(DatasetError, match=r"dev\.jsonl:1: missing field 'divided_document'"):
        odsum.load_story(str(tmp_path / "s"))


def test_odsum_story_empty_split_file_is_refused_naming_it(tmp_path):
    """Issue 43 case 7: an empty split file dropped its stories and their queries were still asked."""
    shutil.copytree(STORY, tmp_path / "s")
    docs = tmp_path / "s" / "raw" / "documents" / "dev.jsonl"
    docs.write_text("")
    with pytest.raises(DatasetError, match=r"dev\.jsonl: no stories \(the file is empty"):
        odsum.load_story(str(tmp_path / "s"))


def test_odsum_meeting_pool_and_meetings_list_evidence(tmp_path):
    ds = odsum.load_meeting(str(MEETING))
    (ep,) = ds.episodes
    assert [u.source_id for u in ep.units] == ["Fix001", "Fix002", "Fix003"]
    q0, q1 = ep.questions
    assert [e.source_id for e in q0.evidence] == ["Fix001", "Fix002"] and q0.categories == {
        "meetings": "2"
    }
    assert q1.id == "q1" and q1.answers[0].startswith("After the county cut")
    shutil.copytree(MEETING, tmp_path / "m")
    file = tmp_path / "m" / "raw" / "queries.json"
    data = json.loads(file.read_text())
    data["1"]["meetings_list"] = ["Fix009"]
    file.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"dangling_evidence: 1 \(e\.g\. \['q1->Fix009'\]\)"):
        odsum.load_meeting(str(tmp_path / "m"), integrity="raise")
    del data["0"]["query"]
    file.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=r"queries\.json\['0'\]: missing field 'query'"):
        odsum.load_meeting(str(tmp_path / "m"))
    with pytest.raises(
        DatasetError, match=r"dataset 'odsum_meeting': no local copy at .*yale-nlp/ODSum"
    ):
        odsum.load_meeting(data_dir=str(tmp_path / "none"))


# ---------------------------------------------------------------- the composed Hub path


@pytest.mark.parametrize("name", ["narrativeqa", "qmsum", "odsum_story", "odsum_meeting"])
def test_hub_path_composes_validates_and_downloads_or_says_where_to_place_the_files(
    name, tmp_path, monkeypatch
):
    """`HF_HUB_OFFLINE=0 python run.py dataset=<name>` with no local copy: the config composes and
    validates; NarrativeQA then downloads LongBench's data.zip (faked here), the others (no Hub copy
    in their schema) fail with one line naming the files and where to put them."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[
                f"dataset={name}",
                f"data_dir={tmp_path}",
                f"cache.path={tmp_path / 'c.sqlite'}",
            ],
        )
    validate_config(cfg)
    assert cfg.dataset.name == name and cfg.dataset.loader.path is None
    if name == "narrativeqa":
        _fake_longbench(tmp_path, monkeypatch)
        ds = instantiate(cfg.dataset.loader)
        assert ds.revision == "THUDM/LongBench@c0ffee" and ds.num_questions == 3
        return
    monkeypatch.setattr(hub, "hub_offline_reason", lambda: None)  # the network would be there
    with pytest.raises(Exception) as err:  # Hydra wraps the loader's DatasetError
        instantiate(cfg.dataset.loader)
    assert isinstance(err.value.__cause__, DatasetError)
    msg = str(err.value.__cause__)
    assert str(tmp_path / name) in msg and "dataset.loader.path=" in msg and "\n" not in msg


# ---------------------------------------------------------------- the original NarrativeQA release

DEEPMIND = FIX / "narrativeqa_deepmind"


def test_narrativeqa_deepmind_layout_cuts_stories_at_their_markers():
    ds = narrativeqa.load(str(DEEPMIND), source="deepmind")
    book, movie = ds.episodes
    assert [q.id for q in book.questions] == ["0a1b2c3d4e5f-1", "0a1b2c3d4e5f-2"]
    assert book.questions[1].answers == ("A bell for the chapel", "a chapel bell")
    text = " ".join(u.text for u in book.units)
    assert text.startswith("THE SALT ROAD") and text.endswith("End of the Project")  # markers kept
    assert "START OF THIS PROJECT" not in text and "boilerplate" not in text
    script = " ".join(u.text for u in movie.units)
    assert script.startswith("FADE IN") and script.endswith("THE END") and "<b>" not in script
    assert movie.questions[0].categories == {"kind": "movie"}
    assert ds.metadata["split"] == "test" and ds.metadata["stories_missing"] == 0


def test_narrativeqa_deepmind_missing_stories_are_counted_and_bad_csv_named(tmp_path):
    shutil.copytree(DEEPMIND, tmp_path / "n")
    next((tmp_path / "n" / "tmp").glob("1f2e*.content")).unlink()
    ds = narrativeqa.load(str(tmp_path / "n"), source="deepmind")
    assert ds.num_questions == 2
    assert (ds.metadata["stories_missing"], ds.metadata["questions_skipped"]) == (1, 1)
    with pytest.raises(
        DatasetError, match="no question to ask"
    ):  # the train story was never fetched
        narrativeqa.load(str(tmp_path / "n"), source="deepmind", split="train")
    qaps = tmp_path / "n" / "qaps.csv"
    qaps.write_text(qaps.read_text().replace("answer1,", "answer_one,", 1))
    with pytest.raises(DatasetError, match=r"qaps\.csv:2: missing column 'answer1'"):
        narrativeqa.load(str(tmp_path / "n"), source="deepmind")
    with pytest.raises(DatasetError, match=r"no documents\.csv .*google-deepmind/narrativeqa"):
        narrativeqa.load(str(tmp_path), source="deepmind")
