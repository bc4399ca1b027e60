"""Bad data that used to get through: empty corpora, a missing field, repeated question ids.
Each is one DatasetError line naming the file and the field (issue 23, items 8 and 10)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from memharness.data_prep import multihop, novelqa, sample
from memharness.data_prep.base import Dataset, DatasetError, check_integrity
from memharness.memsys.types import Episode, Question, Unit
from paths import TESTS

FIX = TESTS / "fixtures"


def _refused(call, *expected: str) -> str:
    with pytest.raises(DatasetError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and all(e in message for e in expected), message
    return message


def _multihop(tmp_path: Path, corpus=None, queries=None) -> Path:
    folder = tmp_path / "mh"
    shutil.copytree(FIX / "multihop", folder)
    for name, doc in ((multihop.CORPUS, corpus), (multihop.QUERIES, queries)):
        if doc is not None:
            (folder / name).write_text(json.dumps(doc(json.loads((folder / name).read_text()))))
    return folder


def _load_mh(folder: Path, **kw):
    return lambda: multihop.load(str(folder), data_dir=str(folder.parent / "cache"), **kw)


def test_multihop_empty_corpus_is_refused_naming_the_file(tmp_path):
    folder = _multihop(tmp_path, corpus=lambda _: [])
    _refused(_load_mh(folder), str(folder / "corpus.json"), "no articles")


def test_multihop_empty_queries_are_refused_naming_the_file(tmp_path):
    folder = _multihop(tmp_path, queries=lambda _: [])
    _refused(_load_mh(folder), str(folder / "MultiHopRAG.json"), "no queries")


def test_multihop_article_without_category_names_file_record_and_field(tmp_path):
    def drop(corpus):
        del corpus[1]["category"]
        return corpus

    folder = _multihop(tmp_path, corpus=drop)
    _refused(_load_mh(folder), f"{folder / 'corpus.json'}[1]", "missing field 'category'")


def test_multihop_only_null_queries_says_which_setting_asks_them(tmp_path):
    folder = _multihop(
        tmp_path, queries=lambda qs: [q for q in qs if q["question_type"] == "null_query"]
    )
    _refused(_load_mh(folder), "MultiHopRAG.json", "dataset.loader.include_null")
    assert _load_mh(folder, include_null=True)().num_questions == 1


def _sample_copy(tmp_path: Path, edit) -> Path:
    doc = json.loads(sample.BUNDLED.read_text())
    edit(doc)
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(doc))
    return path


def test_sample_article_without_category_names_file_and_field(tmp_path):
    path = _sample_copy(tmp_path, lambda d: d["news"]["articles"][2].pop("category"))
    _refused(lambda: sample.load(str(path)), str(path), "news.articles[2]", "'category'")


def test_a_repeated_question_is_refused_when_the_run_loads_the_dataset(make_cfg, tmp_path):
    """The sample's ids are content addresses: the same question twice gives the same id."""
    from memharness.eval.run.runner import load_dataset

    path = _sample_copy(
        tmp_path, lambda d: d["news"]["questions"].append(dict(d["news"]["questions"][0]))
    )
    cfg = make_cfg("dataset=sample", f"dataset.loader.path={path}")
    _refused(lambda: load_dataset(cfg), "1 question id(s) used more than once", str(path), "x2")


def test_novelqa_repeated_qid_is_refused_even_when_integrity_only_warns(tmp_path):
    shutil.copytree(FIX / "novelqa", tmp_path / "nq")
    qa = tmp_path / "nq" / "Data" / "PublicDomain" / "B01.json"
    items = json.loads(qa.read_text())
    qa.write_text(json.dumps([*items, {**items[1], "Question": "Another question?"}]))
    _refused(
        lambda: novelqa.load(str(tmp_path / "nq"), integrity="warn"),
        "'B01-Q0002' x2 (episode novelqa-B01)",
        str(qa),
    )


def _dataset(*episodes: Episode) -> Dataset:
    return Dataset(name="d", episodes=list(episodes), files={"/data/d.json": "0"})


def test_no_question_or_an_empty_memory_is_refused():
    unit = Unit(id="u0", text="some text", source_id="s", position=0)
    question = Question(id="q0", text="what?", answers=("a",), position=1)
    _refused(
        lambda: check_integrity(_dataset(Episode(id="e", units=[unit], questions=[]))),
        "no question to ask in /data/d.json",
    )
    early = Question(id="q0", text="what?", answers=("a",), position=0)
    _refused(
        lambda: check_integrity(_dataset(Episode(id="e", units=[], questions=[early]))),
        "no text to remember (e.g. 'e')",
    )
    assert check_integrity(_dataset(Episode(id="e", units=[unit], questions=[question]))) == {
        "duplicate_ids": [],
        "empty_texts": [],
        "dangling_evidence": [],
    }
