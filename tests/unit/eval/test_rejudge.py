"""``memharness rejudge``: recorded answers re-judged under other prompts, the sensitivity table, the
flip it names, the repeats' majority; no answer call ever. The judge here is the scripted double
(memharness.memsys.testing.doubles.ScriptedChat) named in each run's config.yaml, as a run records it."""

from __future__ import annotations

import json

import pytest
import records
import yaml
from memharness.eval.cli import rejudge as cli
from memharness.eval.judge import variants
from memharness.eval.metrics.sensitivity import agreement, flipped_pairs, kendall_tau, majority
from memharness.eval.metrics.stats import StatsError
from omegaconf import OmegaConf

# The planted judges: the harness prompt accepts answers saying "good", the LoCoMo-style one
# accepts answers saying "alt"; anything else is wrong. The reply is chosen by what the prompt holds.
SCRIPT = [
    ["Generated answer: alt", "CORRECT"],
    ["Generated answer:", "WRONG"],
    ["Predicted: good", "1"],
    ["Model response: ", "no"],
]


def run_config(tmp_path, cache: bool = False) -> dict:
    base = OmegaConf.to_container(OmegaConf.load("conf/eval/default.yaml"))
    return {
        "llm": {
            "backend": {
                "_target_": "memharness.memsys.testing.doubles.ScriptedChat",
                "script": SCRIPT,
                "default": "0",
                "model_id": "planted-judge",
            }
        },
        "judge": {"name": "same", "backend": None},
        "eval": base,
        "cache": {"enabled": cache, "path": str(tmp_path / "calls.sqlite")},
    }


def write_run(tmp_path, memory: str, predictions: list[str], cache: bool = False):
    samples = [
        records.sample(
            f"q{i}",
            {"judge": 1.0},
            prediction=p,
            mode="generative",
            categories={"type": "single-hop"},
        )
        for i, p in enumerate(predictions)
    ]
    doc = records.metrics(memory, counts={"questions": len(samples), "scored": len(samples)})
    folder = records.write(tmp_path / "sweep" / memory, doc, samples)
    (folder / "config.yaml").write_text(yaml.safe_dump(run_config(tmp_path, cache)))
    return folder


@pytest.fixture
def sweep(tmp_path):
    # under the harness judge A (3 "good") beats B (1); under the LoCoMo-style one B (3 "alt") beats A
    write_run(tmp_path, "sys_a", ["good", "good", "good", "alt"])
    write_run(tmp_path, "sys_b", ["good", "alt", "alt", "alt"])
    return tmp_path / "sweep"


def test_the_planted_flip_is_reported_by_name(sweep, tmp_path, capsys):
    code = cli.main([str(sweep), "--judges", "harness,locomo", "--out", str(tmp_path / "out")])
    assert code == 0
    doc = json.loads((tmp_path / "out" / "rejudge.json").read_text())
    (qs,) = doc["sets"]
    res = qs["results"]
    assert (
        res["harness"]["sys_a"]["accuracy"] == 0.75 and res["harness"]["sys_b"]["accuracy"] == 0.25
    )
    assert res["locomo"]["sys_a"]["accuracy"] == 0.25 and res["locomo"]["sys_b"]["accuracy"] == 0.75
    cmp = qs["summary"]["against_reference"]["locomo"]
    assert cmp["flipped"] == [["sys_a", "sys_b"]] and cmp["tau"] == -1.0
    assert qs["summary"]["ranking_changes"] is True
    assert qs["summary"]["bands"]["sys_a"] == [0.25, 0.75]
    md = capsys.readouterr().out
    assert "sys_a > sys_b under harness, sys_b > sys_a under locomo" in md
    assert "The ranking CHANGES" in md
    # no answer was asked again: every call is a judge call
    assert doc["calls"]["spend"]["answer"]["calls"] == 0
    assert doc["calls"]["spend"]["judge"]["calls"] == 16


def test_no_flip_when_the_judges_agree(sweep, tmp_path):
    doc = cli.rejudge([str(sweep)], ["harness", "lenient"])
    (qs,) = doc["sets"]
    # the lenient prompt also reads "Predicted: good" -> 1, so both rank A over B
    assert qs["summary"]["against_reference"]["lenient"] == {"tau": 1.0, "flipped": []}
    assert qs["summary"]["ranking_changes"] is False
    assert qs["majority"]["sys_a"]["accuracy"] == 0.75


def test_every_judge_call_goes_through_the_cache(tmp_path):
    write_run(tmp_path, "sys_a", ["good", "bad"], cache=True)
    write_run(tmp_path, "sys_b", ["alt", "good"], cache=True)
    cold = cli.rejudge([str(tmp_path / "sweep")], ["harness", "locomo"])
    warm = cli.rejudge([str(tmp_path / "sweep")], ["harness", "locomo"])
    assert cold["calls"]["spend"]["judge"]["calls"] == 8
    assert warm["calls"]["spend"]["judge"]["calls"] == 0
    assert warm["calls"]["spend"]["judge"]["cache_hits"] == 8
    assert warm["calls"]["intrinsic"]["judge"]["calls"] == 8  # the ledger counts what was used
    assert warm["sets"][0]["results"] == cold["sets"][0]["results"]


def test_longmemeval_prompts_fall_back_and_count_it(sweep):
    doc = cli.rejudge([str(sweep)], ["longmemeval"])
    res = doc["sets"][0]["results"]["longmemeval"]["sys_a"]
    assert res["fallback"] == 4 and res["accuracy"] == 0.0  # the planted judge says no


def test_repeats_keep_the_majority_and_report_agreement(sweep):
    doc = cli.rejudge(
        [str(sweep)], ["harness"], ["eval.judge.repeats=3", "eval.judge.temperature=0.7"]
    )
    res = doc["sets"][0]["results"]["harness"]["sys_a"]
    assert res["repeats"] == 3 and res["agreement"]["unanimous"] == 1.0
    assert doc["calls"]["spend"]["judge"]["calls"] == 3 * 8


def test_repeats_at_temperature_zero_are_refused(sweep, tmp_path, capsys):
    code = cli.main([str(sweep), "--judges", "harness", "eval.judge.repeats=3"])
    assert code == 2
    assert "needs eval.judge.temperature > 0" in capsys.readouterr().err


def test_an_unknown_judge_prompt_is_one_line(sweep, capsys):
    assert cli.main([str(sweep), "--judges", "harsh"]) == 2
    err = capsys.readouterr().err
    assert "unknown judge prompt 'harsh'" in err and "locomo" in err and err.count("\n") == 1


def test_a_judge_backend_that_cannot_be_built_is_one_line_naming_it(tmp_path, capsys):
    folder = write_run(tmp_path, "sys_a", ["good"])
    cfg = yaml.safe_load((folder / "config.yaml").read_text())
    cfg["llm"]["backend"]["no_such_option"] = 1  # ScriptedChat takes no such argument
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert cli.main([str(folder), "--judges", "harness"]) == 2
    err = capsys.readouterr().err
    assert "could not build judge.backend" in err and err.count("\n") == 1


def test_judge_models_default_to_the_runs_in_flight_budget():
    section = OmegaConf.create({"backend": run_config_backend()})
    models = cli.JudgeModels(cache=None)
    try:
        assert models.get(section).max_in_flight == 8  # as judges._build: not one call at a time
    finally:
        models.close()


def run_config_backend() -> dict:
    return {"_target_": "memharness.memsys.testing.doubles.ScriptedChat", "script": SCRIPT}


def test_label_verdicts_never_guess():
    spec = variants.load("locomo")
    assert variants.read_verdict("CORRECT.", spec) == 1
    assert variants.read_verdict("wrong", spec) == 0
    assert variants.read_verdict("I think it is correct", spec) is None


def test_kendall_tau_and_flips():
    a = {"x": 0.9, "y": 0.5, "z": 0.1}
    assert kendall_tau(a, a) == 1.0
    assert kendall_tau(a, {"x": 0.1, "y": 0.5, "z": 0.9}) == -1.0
    assert flipped_pairs(a, {"x": 0.5, "y": 0.9, "z": 0.1}) == [("x", "y")]
    assert kendall_tau(a, {"x": 0.5, "y": 0.5, "z": 0.5}) is None  # constant: undefined
    assert flipped_pairs(a, {"x": 0.5, "y": 0.5, "z": 0.1}) == []  # a tie is not a flip


def test_majority_and_agreement():
    assert majority([1, 1, 0]) == 1 and majority([1, 0]) is None and majority([None]) is None
    got = agreement([[1, 1, 1], [1, 0, 1], [None, 0, 1]])
    assert got["unanimous"] == pytest.approx(1 / 3) and got["undecided"] == 1
    with pytest.raises(StatsError):
        agreement([])


def test_repeated_runs_of_one_setting_are_told_apart_by_folder():
    from memharness.eval.cli.rejudge import distinct_labels

    run = lambda memory, folder: {"memory": memory, "folder": folder, "setting": ""}  # noqa: E731
    labels = distinct_labels([run("memtree", "/r/1"), run("memtree", "/r/2"), run("rag", "/r/3")])
    assert labels == ["memtree @1", "memtree @2", "rag"]
