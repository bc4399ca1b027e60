"""The judge as its own service, its audit in metrics.json, and the judge reliability report."""

from __future__ import annotations

import json
import sqlite3

import pytest
from memharness.data_prep.base import subset
from memharness.data_prep.sample import load as load_sample
from memharness.eval.judge.prompt import reference_text
from memharness.eval.metrics.stats import cohen_kappa
from memharness.eval.record.scores import status, value
from memharness.eval.report import judge_report
from memharness.eval.run.runner import run
from memharness.memsys.services.types import ConfigError


def questions(limit: int = 4):
    return [q for ep in subset(load_sample(), limit, 0, "type").episodes for q in ep.questions]


def scripted(cfg, rules, group: str = "llm"):
    """Set a ScriptedChat script on the composed config (patterns hold newlines, which overrides cannot)."""
    cfg[group].backend.script = [list(r) for r in rules]
    return cfg


def test_canary_false_accept_rate_with_a_scripted_judge(make_cfg, tmp_path):
    refs = [reference_text(q) for q in questions()]
    rules = [
        ("Wrong answer:", "Zanzibar"),  # the judge writes its plausible wrong answer
        ("Predicted: Zanzibar ->", "1"),
    ]  # ... and then falls for it
    rules += [(f"Reference: {r} | Predicted: {r} ->", "1") for r in refs]  # accepts the reference
    rules += [("| Predicted: ", "0")]  # rejects everything else
    metrics = run(
        scripted(make_cfg("memory=full_context", "dataset.limit=4"), rules), tmp_path / "r"
    )
    can = metrics["judge_reliability"]["canaries"]
    assert can["questions"] == 4
    assert can["accepts_reference"] == {"rate": 1.0, "n": 4, "unparsed": 0, "failed": 0}
    assert can["false_accept_other"]["rate"] == 0.0 and can["false_accept_other"]["n"] == 4
    assert can["false_accept_wrong"] == {
        "rate": 1.0,
        "n": 4,
        "unparsed": 0,
        "failed": 0,
        "discarded": 0,
    }
    wrong = [c for c in can["cases"] if c["kind"] == "wrong_answer"]
    assert {c["answer"] for c in wrong} == {"Zanzibar"} and all(c["verdict"] == 1 for c in wrong)
    assert (
        metrics["calls"]["audit"]["calls"] > 0 and metrics["calls"]["judge"]["calls"] == 4
    )  # audit is its own stage


def test_wrong_answers_equal_to_the_reference_are_discarded(make_cfg, tmp_path):
    rules = [
        (f"Correct answer: {reference_text(q)}\nWrong answer:", reference_text(q))
        for q in questions()
    ]
    rules += [("| Predicted: ", "1")]
    metrics = run(
        scripted(make_cfg("memory=full_context", "dataset.limit=4"), rules), tmp_path / "r"
    )
    wrong = metrics["judge_reliability"]["canaries"]["false_accept_wrong"]
    assert wrong["discarded"] == 4 and wrong["n"] == 0 and wrong["rate"] is None


def test_second_judge_kappa_and_its_own_cost(make_cfg, tmp_path):
    qs = questions()
    strict = [
        (f"Query: {qs[0].text} | Reference:", "1"),
        (f"Query: {qs[1].text} | Reference:", "1"),
        ("| Predicted: ", "0"),
    ]
    second = [(f"Query: {q.text} | Reference:", "1") for q in qs[:3]] + [("| Predicted: ", "0")]
    cfg = scripted(make_cfg("memory=full_context", "dataset.limit=4", "judge@judge2=fake"), strict)
    scripted(cfg, second, "judge2")
    metrics = run(cfg, tmp_path / "r")
    rel = metrics["judge_reliability"]
    assert (
        metrics["judge"] == "fake-chat"
        and metrics["judge2"] == "fake-judge"
        and rel["judge2"] == "fake-judge"
    )
    samples = {
        s["question_id"]: s
        for s in map(json.loads, (tmp_path / "r" / "samples.jsonl").read_text().splitlines())
    }
    a = [value(samples[q.id], "judge") for q in qs]
    b = [value(samples[q.id], "judge2") for q in qs]
    assert (a, b) == ([1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0])
    # p_o = 3/4, p_e = 1/2 * 3/4 + 1/2 * 1/4 = 1/2: κ = 1/2
    assert rel["judge_vs_judge2"]["kappa"] == pytest.approx(0.5) == cohen_kappa(a, b)["kappa"]
    assert metrics["metrics"]["judge2"]["mean"] == pytest.approx(0.75)
    assert rel["strict_vs_lenient"]["kappa"] == pytest.approx(
        1.0
    )  # the scripted judge ignores the prompt
    assert "canaries_judge2" in rel
    assert (
        metrics["intrinsic"]["audit"]["cost_usd"] > 0
        and metrics["intrinsic"]["answer"]["cost_usd"] == 0
    )
    assert "fake-judge" in (tmp_path / "r" / "config.yaml").read_text()


def test_judge_group_uses_its_own_model_and_cache_identity(make_cfg, tmp_path):
    cfg = scripted(
        make_cfg("memory=full_context", "dataset.limit=3", "judge=fake"), [("| Predicted: ", "0")]
    )
    metrics = run(cfg, tmp_path / "r")
    assert (
        metrics["judge"] == "fake-judge"
        and metrics["judge_config"] == "fake"
        and metrics["llm"] == "fake-chat"
    )
    assert (
        metrics["metrics"]["judge"]["mean"] == 1.0
    )  # the judge model said 1; the LLM would have said 0
    assert (
        metrics["intrinsic"]["judge"]["cost_usd"] > 0
        and metrics["intrinsic"]["answer"]["cost_usd"] == 0
    )
    models = {
        m
        for (m,) in sqlite3.connect(tmp_path / "cache.sqlite").execute(
            "SELECT DISTINCT model FROM chat"
        )
    }
    assert models == {"fake-chat", "fake-judge"}


def test_a_second_judge_given_as_a_plain_value_is_a_clear_error(make_cfg, tmp_path):
    with pytest.raises(ConfigError, match=r"judge@judge2=<name>"):
        run(make_cfg("memory=full_context", "dataset.limit=2", "judge2=local_tiny"), tmp_path / "r")


def test_judge_report_pairs_runs_judged_by_different_models(make_cfg, tmp_path, capsys):
    q0 = questions()[0]
    rules = [(f"Query: {q0.text} | Reference:", "1"), ("| Predicted: ", "0")]
    run(
        scripted(make_cfg("memory=full_context", "dataset.limit=4"), rules), tmp_path / "runs" / "a"
    )
    run(
        scripted(make_cfg("memory=full_context", "dataset.limit=4", "judge=fake"), rules),
        tmp_path / "runs" / "b",
    )
    judge_report.main([str(tmp_path / "runs"), "--out", str(tmp_path / "t"), "--name", "j"])
    assert "md: " + str(tmp_path / "t" / "j.md") in capsys.readouterr().out
    data = json.loads((tmp_path / "t" / "j.json").read_text())
    assert len(data["runs"]) == 2 and {r["judge"] for r in data["runs"]} == {
        "fake-chat",
        "fake-judge",
    }
    [pair] = data["between_judges"]
    assert pair["questions"] == 4 and {pair["accuracy_a"], pair["accuracy_b"]} == {0.25, 1.0}
    assert pair["kappa"] == pytest.approx(cohen_kappa([1, 0, 0, 0], [1, 1, 1, 1])["kappa"])
    md = (tmp_path / "t" / "j.md").read_text()
    assert "Between judges" in md and "far_wrong" in md


def test_no_judge_no_judge_identity(make_cfg, tmp_path):
    metrics = run(
        make_cfg(
            "memory=full_context", "dataset.limit=2", "eval.judge.enabled=false", "judge=fake"
        ),
        tmp_path / "runs" / "r",
    )
    assert (
        metrics["judge"] is None
        and metrics["judge_reliability"] is None
        and "judge" not in metrics["metrics"]
    )
    assert metrics["intrinsic"]["judge"]["calls"] == 0
    from memharness.eval.report.comparison import build_report

    wide = build_report([tmp_path / "runs"], tmp_path / "t", "x")["csv"].read_text()
    assert ",-,-," in wide  # judge and judge2 columns say no judge


def test_the_audit_never_judges_an_empty_answer(make_cfg, tmp_path):
    asked = questions()[0]
    cfg = make_cfg("memory=full_context", "dataset.limit=4", "eval.judge.calibration_max=0")
    cfg.llm.backend.script = [[f"Question: {asked.text}", "   "], ["| Predicted: ", "1"]]
    metrics = run(cfg, tmp_path / "r")
    samples = {
        s["question_id"]: s
        for s in map(json.loads, (tmp_path / "r" / "samples.jsonl").read_text().splitlines())
    }
    empty = samples[asked.id]
    assert (
        empty["answer_empty"]
        and value(empty, "judge_lenient") == 0.0
        and status(empty, "judge_lenient") == "answer_empty"
    )
    rel = metrics["judge_reliability"]
    assert (
        rel["n"] == 3 and rel["strict_vs_lenient"]["n"] == 3
    )  # κ over the three real answers only
    assert metrics["calls"]["audit"]["calls"] + metrics["calls"]["audit"]["cache_hits"] == 3
    assert (
        metrics["metrics"]["judge_lenient"]["n"] == 4
        and metrics["metrics"]["judge_lenient"]["mean"] == 0.75
    )


def test_report_from_real_runs_says_whether_the_judge_separates_them(make_cfg, tmp_path):
    """Two runs through the runner: one answers every question with its reference, one never does;
    the report's note under the scores table names the pair the sound judge separates."""
    from memharness.eval.report.comparison import build_report

    refs = {q.text: reference_text(q) for q in questions()}
    rules = [(f"Reference: {r} | Predicted: {r} ->", "1") for r in refs.values()]
    rules += [(f"KEYED {text}\n", ref) for text, ref in refs.items()]
    rules += [("| Predicted: ", "0")]
    for name, prompt in (("plain", None), ("keyed", "KEYED {question}\n{context}")):
        cfg = scripted(make_cfg("memory=full_context", "dataset.limit=4"), rules)
        if prompt:
            cfg.eval.answer.prompt = prompt
        run(cfg, tmp_path / "runs" / name)
    md = build_report([tmp_path / "runs"], tmp_path / "t", "x")["md"].read_text()
    note = next(line for line in md.splitlines() if line.startswith("Means with bootstrap"))
    assert "sample: the judge separates full_context (" in note and "n = 4" in note
    separated = note.split("the judge separates ")[1].split(" (disjoint")[0]
    better, worse = separated.split(" > ")
    assert "prompt" in better and better != worse

    # the same runs judged by a judge that says 1 to everything: the note says it cannot rank them
    always_one = [("| Predicted: ", "1")] + rules[len(refs) : -1]
    for name in ("plain", "keyed"):
        cfg = scripted(
            make_cfg("memory=full_context", "dataset.limit=4", "+llm.backend.model_id=yes-judge"),
            always_one,
        )
        if name == "keyed":
            cfg.eval.answer.prompt = "KEYED {question}\n{context}"
        run(cfg, tmp_path / "yes" / name)
    md = build_report([tmp_path / "yes"], tmp_path / "t2", "x")["md"].read_text()
    assert "the judge column cannot rank these systems" in md and "(1.00/0.00)" in md


def test_canaries_depend_on_the_question_set_only_so_a_sweep_asks_them_once(make_cfg, tmp_path):
    """A second memory system on the same questions gets the same canaries from the call cache, even
    when its own answers differ (here one answer is empty, which the rest of the audit skips)."""
    qs = questions()
    wrong = [("Correct answer:", "Zanzibar")]
    first = run(scripted(make_cfg("memory=full_context", "dataset.limit=4"), wrong), tmp_path / "a")
    empty_first = wrong + [(f"Question: {qs[0].text}", "")]  # only this row's answer prompt
    second = run(
        scripted(make_cfg("memory=memorystream", "dataset.limit=4"), empty_first),
        tmp_path / "b",
    )
    assert second["judge_reliability"]["n"] == 3  # the empty answer is not judged
    assert second["judge_reliability"]["canaries"] == first["judge_reliability"]["canaries"]
    assert first["calls"]["audit"]["calls"] > 0
    # every audit call of the second row (lenient verdicts of the same answers, canaries) is a hit
    assert second["calls"]["audit"]["calls"] == 0 and second["calls"]["audit"]["cache_hits"] > 0
