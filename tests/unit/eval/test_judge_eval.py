"""The labelled judge set and `memharness judge-eval`
(scripted judge; the real one is in the slow tests)."""

from __future__ import annotations

import json
from collections import Counter
from importlib.resources import files

import pytest
from memharness.eval.judge import labelled_set as judge_eval
from memharness.eval.judge.prompt import judge_request
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.types import ConfigError
from memharness.memsys.testing.doubles import ScriptedChat
from memharness.memsys.types import Question
from omegaconf import OmegaConf
from paths import ROOT, TESTS

JUDGE_CFG = OmegaConf.load(ROOT / "conf" / "eval" / "default.yaml").judge


def test_bundled_set_is_package_data_balanced_and_covers_our_question_kinds():
    assert files("memharness.eval.judge").joinpath("items.jsonl").is_file()
    items, digest = judge_eval.load_items()
    labels = Counter(it.label for it in items)
    assert len(items) >= 60 and labels[0] >= 25 and labels[1] >= 25 and len(digest) == 64
    assert {it.domain for it in items} == {"dialogue", "document", "news"}
    kinds = {it.kind for it in items}
    assert {
        "paraphrase",
        "more_detail",
        "wrong_entity",
        "wrong_number",
        "yes_no_flip",
        "no_answer",
        "other_reference",
    } <= kinds
    # every question has at least one right and one wrong prediction, so a judge cannot pass on the question alone
    by_q: dict[str, set[int]] = {}
    for it in items:
        by_q.setdefault(it.question, set()).add(it.label)
    assert sum(v == {0, 1} for v in by_q.values()) >= 30


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", r"bad\.jsonl:2: not JSON"),
        (
            '{"id": "x", "question": "Q", "reference": "R", "prediction": "P", "label": 2}',
            r"bad\.jsonl:2: label must be 0 or 1",
        ),
        (
            '{"id": "x", "question": "Q", "reference": "R", "label": 1}',
            r"bad\.jsonl:2: field 'prediction'",
        ),
        (
            '{"id": "a", "question": "Q", "reference": "R", "prediction": "P", "label": 1}',
            r"ids unique",
        ),
    ],
)
def test_malformed_items_name_file_and_line(tmp_path, line, message):
    good = '{"id": "a", "question": "Q", "reference": "R", "prediction": "P", "label": 1}'
    (tmp_path / "bad.jsonl").write_text(good + "\n" + line + "\n")
    with pytest.raises(ConfigError, match=message):
        judge_eval.load_items(tmp_path / "bad.jsonl")


def test_scores_count_false_accepts_rejects_unparsed_and_failures():
    items = [
        judge_eval.JudgeItem(
            id=f"i{n}", question=f"Q{n}?", reference="R", prediction=p, label=label, kind=k
        )
        for n, (p, label, k) in enumerate(
            [
                ("right-1", 1, "a"),
                ("right-2", 1, "a"),
                ("right-3", 1, "b"),
                ("wrong-1", 0, "b"),
                ("wrong-2", 0, "b"),
                ("wrong-3", 0, "c"),
                ("odd", 1, "c"),
                ("boom", 0, "c"),
            ]
        )
    ]
    backend = ScriptedChat(
        script=[
            ["right-1", "1"],
            ["right-2", "1"],
            ["right-3", "0"],
            ["wrong-1", "1"],
            ["wrong-2", "0"],
            ["wrong-3", "0"],
            ["odd", "maybe"],
        ],
        fail_on="boom",
    )
    llm = LLM(backend, max_in_flight=2, progress=False)
    results = judge_eval.judge_items(items, llm, JUDGE_CFG)
    s = judge_eval.score(results)
    assert (s["n"], s["positives"], s["negatives"], s["correct"]) == (8, 4, 4, 4)
    assert s["accuracy"] == 0.5
    assert (s["false_accepts"], s["false_accept_rate"]) == (1, 0.25)
    assert (s["false_rejects"], s["false_reject_rate"]) == (1, 0.25)
    assert (s["unparsed"], s["failed"]) == (1, 1)
    assert (
        s["by"]["kind"]["a"] == {"n": 2, "accuracy": 1.0}
        and s["by"]["kind"]["c"]["accuracy"] == 1 / 3
    )
    # exactly the runner's judge request (so runs and judge_eval share the call cache), constrained to a digit
    expected = judge_request(
        Question(id="i0", text="Q0?", answers=("R",), position=0), "R", "right-1", JUDGE_CFG
    )
    assert expected in backend.requests
    assert all(r.choices == ("0", "1") for r in backend.requests)


def test_command_reports_accuracy_and_errors_for_any_judge_config(tmp_path, capsys):
    out = tmp_path / "report.json"
    code = judge_eval.main(
        [
            "--json",
            str(out),
            f"hydra.searchpath=[file://{TESTS / 'conf'}]",
            "llm=fake",
            "llm.backend.default='1'",
            f"cache.path={tmp_path / 'c.sqlite'}",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    report = json.loads(out.read_text())
    n_neg = report["scores"]["negatives"]
    assert report["scores"]["accuracy"] == report["scores"]["positives"] / report["scores"]["n"]
    assert f"false accepts  1.000  ({n_neg}/{n_neg} wrong answers judged 1)" in text
    assert "false rejects  0.000" in text and "judge: fake-chat" in text and "errors:" in text
    assert report["judge"]["prompt_sha256"] and report["items"]["sha256"]


def test_command_names_a_missing_items_file(tmp_path, capsys):
    code = judge_eval.main(
        [
            "--items",
            str(tmp_path / "none.jsonl"),
            f"hydra.searchpath=[file://{TESTS / 'conf'}]",
            "llm=fake",
            "cache.enabled=false",
        ]
    )
    assert code == 2 and "none.jsonl" in capsys.readouterr().err


def test_the_cache_is_memharness_cache_as_in_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMHARNESS_CACHE", str(tmp_path / "shared.sqlite"))
    assert judge_eval.compose_config([]).cache.path == str(tmp_path / "shared.sqlite")
    monkeypatch.delenv("MEMHARNESS_CACHE")
    monkeypatch.chdir(tmp_path)
    assert judge_eval.compose_config([]).cache.path == str(tmp_path / ".cache" / "calls.sqlite")
