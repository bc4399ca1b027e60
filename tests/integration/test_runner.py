"""The runner with seeded fakes: run-folder contents, failure accounting, budgets, warm cache."""

from __future__ import annotations

import json

import pytest
from memharness.data_prep.base import subset
from memharness.data_prep.sample import load as load_sample
from memharness.eval.metrics.registry import untimed
from memharness.eval.record.scores import detail, status, value
from memharness.eval.run.runner import run
from paths import TESTS

JUDGE = (
    "You are grading answers"  # a phrase only the judge prompt (conf/eval/default.yaml) contains
)
SCRIPT = f'[["Which striker","perhaps"],["{JUDGE}","1"]]'


def _samples(out):
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_full_run_records_every_sample_and_counts_failures(make_cfg, tmp_path):
    cfg = make_cfg(
        "memory=full_context", f"llm.backend.script={SCRIPT}", "llm.backend.fail_on=Which ankle"
    )
    out = tmp_path / "run"
    metrics = run(cfg, out)
    samples = _samples(out)
    dataset = load_sample()
    assert len(samples) == dataset.num_questions == metrics["counts"]["questions"]
    assert {s["question_id"] for s in samples} == {
        q.id for e in dataset.episodes for q in e.questions
    }
    failed = [s for s in samples if s["status"] == "answer_failed"]
    assert [s["question"] for s in failed] == ["Which ankle was sprained during training?"]
    assert "scripted failure" in failed[0]["error"] and "judge" not in failed[0]["scores"]
    unparsed = [s for s in samples if status(s, "judge") == "judge_unparsed"]
    assert len(unparsed) == 1 and detail(unparsed[0], "judge", "reply") == "perhaps"
    assert value(unparsed[0], "judge") is None  # kept raw, never scored as a guess
    c = metrics["counts"]
    assert (c["scored"], c["answer_failed"], c["judge_unparsed"]) == (len(samples) - 1, 1, 1)
    assert metrics["metrics"]["judge"]["n"] == len(samples) - 2
    assert metrics["metrics"]["judge"]["mean"] == 1.0


def test_run_folder_holds_provenance(make_cfg, tmp_path):
    out = tmp_path / "run"
    metrics = run(make_cfg("memory=full_context", "dataset.limit=3"), out)
    assert {p.name for p in out.iterdir()} >= {
        "config.yaml",
        "samples.jsonl",
        "metrics.json",
        "memory_stats.json",
    }
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk["data"]["checksum"] == subset(load_sample(), 3, 0, "type").checksum()
    assert on_disk["seed"] == 0 and on_disk["env"]["git"]["sha"]
    assert on_disk["env"]["packages"]["numpy"]
    assert set(on_disk["time"]) >= {"build_s", "retrieve_s", "answer_s", "judge_s", "total_s"}
    # 3 judge calls for the answers; the audit (stage "audit"): 3 lenient verdicts, 3 wrong answers
    # written by the judge, 3 x 3 canary verdicts (one of them equals a verdict already made: a cache hit)
    assert on_disk["calls"]["answer"]["calls"] == 3 and on_disk["calls"]["judge"]["calls"] == 3
    audit = on_disk["calls"]["audit"]
    assert (
        audit["calls"] + audit["cache_hits"]
        == 3 + 3 + 3 * 3
        == on_disk["intrinsic"]["audit"]["calls"]
    )
    subset_record = on_disk["data"]["subset"]
    assert (subset_record["limit"], subset_record["subset_seed"], subset_record["stratify_by"]) == (
        3,
        0,
        "type",
    )
    assert sorted(subset_record["question_ids"]) == sorted(s["question_id"] for s in _samples(out))
    assert sum(v["kept"] for v in subset_record["strata"].values()) == 3
    assert on_disk["judge"] == on_disk["llm"] == "fake-chat" and on_disk["judge_config"] == "same"
    assert metrics["counts"]["questions"] == 3
    assert "fakes.ScriptedChat" in (out / "config.yaml").read_text()


def test_answer_prompt_sees_only_retrieved_items_within_budget(make_cfg, tmp_path):
    out = tmp_path / "run"
    run(make_cfg("memory=full_context", "dataset.budget_tokens=120"), out)
    dataset = load_sample()
    units = {u.id: u for e in dataset.episodes for u in e.units}
    for s in _samples(out):
        assert s["context_tokens"] <= 120
        retrieved = {i["node_id"] for i in s["retrieved"]}
        for uid, unit in units.items():
            assert (unit.text in s["prompt"]) == (uid in retrieved)


def test_memorystream_returns_top_k_with_provenance(make_cfg, tmp_path):
    out = tmp_path / "run"
    run(make_cfg("memory=memorystream", "dataset.top_k=2"), out)
    dataset = load_sample()
    unit_ids = {e.id: {u.id for u in e.units} for e in dataset.episodes}
    for s in _samples(out):
        assert 1 <= len(s["retrieved"]) <= 2
        scores = [i["score"] for i in s["retrieved"]]
        assert scores == sorted(scores, reverse=True)
        for item in s["retrieved"]:
            assert set(item["source_unit_ids"]) <= unit_ids[s["episode_id"]]


def test_warm_rerun_makes_no_backend_calls(make_cfg, tmp_path):
    cfg = make_cfg("memory=memorystream", "dataset.limit=4")
    cold = run(cfg, tmp_path / "cold")
    warm = run(cfg, tmp_path / "warm")
    assert cold["calls"]["total"]["calls"] > 0 and cold["calls"]["total"]["embed_calls"] > 0
    assert warm["calls"]["total"]["calls"] == 0 and warm["calls"]["total"]["embed_calls"] == 0
    # the cold run already served repeated requests (e.g. a canary equal to an answer) from the cache
    assert (
        warm["calls"]["total"]["cache_hits"]
        == cold["calls"]["total"]["calls"] + cold["calls"]["total"]["cache_hits"]
    )
    assert untimed(warm["metrics"]) == untimed(cold["metrics"])


def test_multiple_choice_mode_scores_letters(make_cfg, tmp_path):
    # The sample has no options; a question with options is exercised through the answer helpers.
    from memharness.eval.metrics.scorers import mc_correct
    from memharness.eval.run.answer import answer_request, is_multiple_choice
    from memharness.memsys.types import Question

    q = Question(
        id="q",
        text="Which?",
        answers=(),
        position=0,
        options=("red", "blue", "green"),
        gold_option=1,
    )
    cfg = make_cfg().eval.answer
    req = answer_request(q, [], cfg)
    assert req.choices == ("A", "B", "C") and "(B) blue" in req.messages[-1][1]
    assert is_multiple_choice(q, "auto") and not is_multiple_choice(q, "generative")
    assert (
        mc_correct(q, "B") == (1, 1.0)
        and mc_correct(q, "C") == (2, 0.0)
        and mc_correct(q, "??") == (None, 0.0)
    )
    many = Question(
        id="q11",
        text="Which?",
        answers=(),
        position=0,
        options=tuple("abcdefghijk"),
        gold_option=10,
    )
    with pytest.raises(ValueError, match="question q11 has 11 options; .*at most 10 options"):
        is_multiple_choice(many, "auto")
    assert not is_multiple_choice(
        many, "generative"
    )  # options that are not asked for are no problem
    ten = Question(
        id="q10", text="Which?", answers=(), position=0, options=tuple("abcdefghij"), gold_option=9
    )
    assert answer_request(ten, [], cfg).choices == tuple("ABCDEFGHIJ")


def test_generative_agents_scoring_normalises_components(make_cfg, tmp_path):
    out = tmp_path / "run"
    run(
        make_cfg(
            "memory=memorystream",
            "memory.scoring=generative_agents",
            "dataset.limit=2",
            'llm.backend.script=[["Rating","7"]]',
        ),
        out,
    )
    stats = json.loads((out / "memory_stats.json").read_text())
    for ep in stats.values():
        assert ep["importance_unparsed"] == 0 and ep["importance_mean"] == 7.0


def canary_rates(metrics: dict) -> tuple:
    can = metrics["judge_reliability"]["canaries"]
    ref, other = can["accepts_reference"], can["false_accept_other"]
    return ref["n"], ref["rate"], other["rate"], ref["unparsed"] + other["unparsed"]


def test_judge_canaries_expose_a_judge_that_always_says_one(make_cfg, tmp_path):
    always_one = run(
        make_cfg("memory=full_context", "dataset.limit=4", f'llm.backend.script=[["{JUDGE}","1"]]'),
        tmp_path / "a",
    )
    assert canary_rates(always_one) == (4, 1.0, 1.0, 0)
    # another model id, so the first run's cached replies do not apply;
    # a judge that says 1 only when the prediction repeats the reference word for word
    cfg = make_cfg(
        "memory=full_context", "dataset.limit=4", "+llm.backend.model_id=fake-strict-judge"
    )
    from memharness.eval.judge.prompt import reference_text

    ref = reference_text(
        subset(load_sample(), 4, 0, "type").episodes[0].questions[0]
    )  # one of the 4 references
    cfg.llm.backend.script = [[f"Reference: {ref} | Predicted: {ref} ->", "1"], [JUDGE, "0"]]
    assert canary_rates(run(cfg, tmp_path / "b")) == (4, 0.25, 0.0, 0)


def test_integrity_problems_are_recorded_not_fatal(make_cfg, tmp_path):
    cfg = make_cfg("memory=full_context", "dataset.loader._target_=fakes.dataset_with_problems")
    metrics = run(cfg, tmp_path / "r")
    assert metrics["data"]["metadata"]["integrity"] == {"empty_texts": 1, "dangling_evidence": 1}
    assert metrics["counts"]["questions"] == 1 and metrics["counts"]["scored"] == 1


def test_multiple_choice_run_on_quality_fixture(make_cfg, tmp_path):
    fixture = TESTS / "fixtures" / "quality"
    cfg = make_cfg(
        "dataset=quality",
        "memory=full_context",
        f"dataset.loader.path={fixture}",
        "dataset.loader.mode=multiple_choice",
        'llm.backend.script=[["Options:","B"]]',
    )
    metrics = run(cfg, tmp_path / "r")
    samples = _samples(tmp_path / "r")
    assert samples and all(
        s["mode"] == "multiple_choice" and "judge" not in s["scores"] for s in samples
    )
    assert all(
        detail(s, "mc_accuracy", "predicted_option") == 1 and "(B)" in s["prompt"] for s in samples
    )
    expected = sum(s["gold_option"] == 1 for s in samples) / len(samples)
    assert metrics["metrics"]["mc_accuracy"]["mean"] == pytest.approx(expected)
    assert metrics["counts"]["mc_unparsed"] == 0


def test_unparsed_multiple_choice_reply_counts_as_wrong(make_cfg, tmp_path):
    fixture = TESTS / "fixtures" / "quality"
    cfg = make_cfg(
        "dataset=quality",
        "memory=full_context",
        f"dataset.loader.path={fixture}",
        "dataset.loader.mode=multiple_choice",
        'llm.backend.script=[["Options:","none of them"]]',
    )
    metrics = run(cfg, tmp_path / "r")
    n = metrics["counts"]["questions"]
    assert metrics["counts"]["mc_unparsed"] == n and metrics["metrics"]["mc_accuracy"] == {
        "mean": 0.0,
        "n": n,
        "ci_low": 0.0,
        "ci_high": 0.0,
    }


def test_a_memory_that_fails_to_build_fails_its_episode_questions_and_the_run_goes_on(
    make_cfg, tmp_path
):
    cfg = make_cfg(
        "memory=full_context", "memory._target_=fakes.FailingMemory", "+memory.fail_on=greyhound"
    )
    metrics = run(cfg, tmp_path / "r")
    samples = _samples(tmp_path / "r")
    failed = [s for s in samples if s["status"] == "build_failed"]
    assert {s["episode_id"] for s in failed} == {"dlg-garden"}  # the episode holding the greyhound
    assert all("greyhound" in s["error"] and "judge" not in s["scores"] for s in failed)
    assert metrics["counts"]["build_failed"] == len(failed) == 3
    assert metrics["counts"]["scored"] == len(samples) - 3


def test_the_run_evaluates_under_the_configured_switch_interval_and_restores_it(
    make_cfg, tmp_path, monkeypatch
):
    import sys

    from memharness.eval.run import episodes

    seen, real = [], episodes.run_episodes
    monkeypatch.setattr(
        episodes,
        "run_episodes",
        lambda *a, **k: seen.append(sys.getswitchinterval()) or real(*a, **k),
    )
    before = sys.getswitchinterval()
    cfg = make_cfg("memory=full_context", "dataset.limit=2", "run.switch_interval_s=0.031")
    run(cfg, tmp_path / "run")
    assert seen == [pytest.approx(0.031)]
    assert sys.getswitchinterval() == before
