"""Table A.1 statistics over the fixtures, checked against hand-counted values."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep import msc, multihop, quality, stats
from paths import TESTS

FIX = TESTS / "fixtures"


def test_msc_stats_match_hand_counts():
    s = stats.dataset_stats(msc.load(str(FIX / "msc")))
    assert s["Conversation sessions"] == 3
    assert s["Rounds per session"] == {"mean": 10.0, "std": 0.0}
    assert s["Queries per episode"] == {"mean": 1.0, "std": 0.0}
    assert s["categories"] == {"type": {"msc": 3}} and s["Tokens per round"]["mean"] > 10


def test_multihop_counts_articles_and_types():
    ds = multihop.load(str(FIX / "multihop"), include_null=True)
    s = stats.dataset_stats(ds)
    assert s["Articles"] == 4 and s["Total queries"] == 4
    assert s["categories"]["type"] == {"comparison": 1, "inference": 1, "null": 1, "temporal": 1}
    from memharness.memsys.services.tokens import get_tokenizer

    corpus = json.loads((FIX / "multihop" / "corpus.json").read_text())
    expected = [get_tokenizer().count(multihop.article_text(a)) for a in corpus]
    assert s["Tokens per article"]["mean"] == pytest.approx(sum(expected) / 4, abs=2)


def test_quality_easy_hard_split():
    s = stats.dataset_stats(quality.load(str(FIX / "quality")))
    assert s["Documents"] == 2 and s["Queries per episode"] == {"mean": 4.0, "std": 0.0}
    assert s["categories"]["difficulty"] == {"easy": 4, "hard": 4}


def test_cli_reports_available_and_unavailable(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert (
        stats.main(
            [
                "--data-dir",
                str(tmp_path),
                "--path",
                f"novelqa={FIX / 'novelqa'}",
                "--path",
                f"msc_e={FIX / 'msc_e'}",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "== novelqa\n  Books                    2" in out and "- aspect=character" in out
    assert (
        "== msc_e\n  Conversation sessions    1" in out
        and "Queries per episode      3.0 ± 0.0" in out
    )
    assert "== msc: not available locally" in out and "== multihop: not available locally" in out
    import os

    assert "HF_HUB_OFFLINE" not in os.environ


def test_longmemeval_counts_haystacks_and_their_turns():
    from memharness.data_prep import longmemeval

    path = FIX / "longmemeval" / "longmemeval_s_cleaned.json"
    records = json.loads(path.read_text())
    haystacks = {json.dumps(r["haystack_sessions"], sort_keys=True): r for r in records}
    turns = [sum(len(s) for s in r["haystack_sessions"]) for r in haystacks.values()]
    s = stats.dataset_stats(longmemeval.load(str(path)))
    assert s["Haystacks (questions)"] == len(haystacks) and s["Total queries"] == len(records)
    assert s["Turns per haystack"]["mean"] == pytest.approx(sum(turns) / len(turns))


def test_a_broken_file_passed_explicitly_fails_the_command_naming_it(tmp_path, capsys):
    """Issue 43 case 11: it exited 0; ODSum, QMSum and NarrativeQA were unknown to it."""
    broken = tmp_path / "narrativeqa.jsonl"
    broken.write_text('{"input": "q"\n')
    argv = ["--data-dir", str(tmp_path / "none"), "--path", f"narrativeqa={broken}"]
    argv += ["--path", f"qmsum={FIX / 'qmsum'}", "--path", f"odsum_story={FIX / 'odsum_story'}"]
    assert stats.main(argv) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"error: --path narrativeqa={broken}: {broken}:1")
    assert "== qmsum\n  Meetings                 2" in captured.out
    assert "== odsum_story\n  Stories                  3" in captured.out
    with pytest.raises(SystemExit) as usage:
        stats.main(["--path", "qmsum"])
    assert usage.value.code == 2 and "--path takes NAME=PATH" in capsys.readouterr().err
