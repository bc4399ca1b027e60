"""FABLES loader: upstream schema, label mapping, the unanswerable filter, evidence quotes, the
copyrighted books' one-line errors, and the config composed with the Hub allowed."""

from __future__ import annotations

import json
import shutil

import pytest
from memharness.data_prep import fables
from memharness.data_prep.base import DatasetError
from memharness.eval.run.evidence import matches
from memharness.eval.run.validate import validate_config
from paths import TESTS

FIX = TESTS / "fixtures" / "fables"
RAW = json.loads((FIX / "FABLES.json").read_text())["FABLES"]


def _copy(tmp_path, edit=None):
    """The fixture copied to tmp_path, its JSON edited by ``edit``."""
    out = tmp_path / "fables"
    shutil.copytree(FIX, out)
    if edit:
        data = json.loads((out / "FABLES.json").read_text())
        edit(data)
        (out / "FABLES.json").write_text(json.dumps(data))
    return out


def test_one_episode_per_book_claims_as_questions_inapplicable_dropped_and_counted():
    ds = fables.load(str(FIX))
    assert [e.metadata["book"] for e in ds.episodes] == list(RAW)
    upstream = [c for b in RAW.values() for s in b.values() for c in s["claims"].values()]
    kept = [c for c in upstream if c["label"] != "Inapplicable"]
    qs = [q for e in ds.episodes for q in e.questions]
    assert [q.text for q in qs] == [c["claim"] for c in kept] and len(qs) == 7
    assert ds.metadata["excluded_inapplicable"] == 1 and ds.metadata["excluded_partial"] == 0
    gold = {"Yes": "faithful", "No": "unfaithful", "PartialSupport": "unfaithful"}
    assert [q.answers for q in qs] == [(gold[c["label"]],) for c in kept]
    assert {q.categories["summarizer"] for q in qs} == {"GPT-4", "CLAUDE-3-OPUS", "MIXTRAL"}
    assert all(q.categories["task"] == "claim_verification" for q in qs)
    for ep in ds.episodes:  # every claim is asked after the whole book
        assert all(q.position == len(ep.units) for q in ep.questions)
    assert len({q.id for q in qs}) == 7 and ds.metadata["integrity"] == {}


def test_partial_support_can_be_dropped_instead_of_counted_unfaithful():
    ds = fables.load(str(FIX), partial_support="drop")
    labels = [q.categories["upstream_label"] for e in ds.episodes for q in e.questions]
    assert "PartialSupport" not in labels and len(labels) == 6
    assert ds.metadata["excluded_partial"] == 1


def test_evidence_quotes_point_at_the_chunks_holding_them():
    ds = fables.load(str(FIX), chunk_size=64)  # several chunks per book
    ep = ds.episodes[0]
    assert len(ep.units) > 3
    relit = next(q for q in ep.questions if q.text.startswith("Tobin relit"))
    (ev,) = relit.evidence
    held = [u for u in ep.units if matches(ev, u)]
    joined = "".join(u.text for u in held)
    assert ev.text in joined and 1 <= len(held) <= 2
    assert not any(matches(ev, u) for u in ep.units[:1])  # the quote is late in the book
    no_quote = next(q for q in ds.episodes[1].questions if "November" in q.text)
    assert no_quote.evidence == ()  # upstream "n/a": no evidence, nothing counted
    assert ds.metadata["evidence_quote_not_in_text"] == 0


def test_a_quote_missing_from_the_book_is_counted(tmp_path):
    def edit(d):
        d["FABLES"]["Nine Bells for Ada"]["MIXTRAL"]["claims"]["0"]["evidence"] = ["not in it"]

    ds = fables.load(str(_copy(tmp_path, edit)))
    assert ds.metadata["evidence_quote_not_in_text"] == 1


def test_missing_book_text_is_one_line_naming_the_file_or_skipped_and_listed(tmp_path):
    root = _copy(tmp_path)
    (root / "books" / "Nine Bells for Ada.txt").unlink()
    with pytest.raises(DatasetError) as err:
        fables.load(str(root))
    message = str(err.value)
    assert "\n" not in message and "Nine Bells for Ada.txt" in message
    assert "copyrighted" in message and "missing_books=skip" in message
    ds = fables.load(str(root), missing_books="skip")
    assert ds.metadata["books_missing"] == ["Nine Bells for Ada"] and len(ds.episodes) == 1
    other = tmp_path / "elsewhere"
    shutil.move(str(root / "books"), other)
    assert fables.load(str(root / "FABLES.json"), books_dir=str(other), missing_books="skip")


def test_schema_errors_name_the_book_summarizer_claim_and_field(tmp_path):
    def bad_label(d):
        d["FABLES"]["The Lantern Keeper"]["GPT-4"]["claims"]["1"]["label"] = "Maybe"

    with pytest.raises(DatasetError, match=r"'The Lantern Keeper'.*'GPT-4'.*'1'.*'label'.*Maybe"):
        fables.load(str(_copy(tmp_path / "a", bad_label)))

    def no_claim(d):
        del d["FABLES"]["Nine Bells for Ada"]["MIXTRAL"]["claims"]["2"]["claim"]

    with pytest.raises(DatasetError, match=r"MIXTRAL.*'2'.*missing field 'claim'"):
        fables.load(str(_copy(tmp_path / "b", no_claim)))
    with pytest.raises(DatasetError, match=r"'FABLES'"):
        fables.load(str(_copy(tmp_path / "c", lambda d: d.pop("FABLES"))))


def test_no_copy_is_one_line_naming_the_file_where_and_the_books(tmp_path):
    with pytest.raises(DatasetError) as err:
        fables.load(data_dir=str(tmp_path))
    message = str(err.value)
    assert "\n" not in message and "FABLES.json not found" in message
    assert "github.com/mungg/FABLES" in message and str(tmp_path / "fables") in message
    assert "dataset.loader.path=" in message and str(tmp_path / "fables" / "books") in message


def test_hub_allowed_config_composes_validates_and_names_what_to_place(make_cfg, monkeypatch):
    """FABLES has no Hub copy: with HF_HUB_OFFLINE=0 the config still composes and validates, and
    the loader says which file to place where (it never tries the network)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    cfg = make_cfg("dataset=fables", "memory=raptor")
    validate_config(cfg)
    assert cfg.dataset.loader._target_ == "memharness.data_prep.fables.load"
    with pytest.raises(DatasetError, match=r"FABLES\.json not found \(no Hub copy\)"):
        fables.load(data_dir=cfg.data_dir)
    cfg = make_cfg("dataset=fables", f"dataset.loader.path={FIX}")
    validate_config(cfg)
