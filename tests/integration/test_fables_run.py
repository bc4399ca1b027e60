"""`run.py dataset=fables` on the fixture: claims answered faithful / unfaithful and scored as F1_P /
F1_N. The scripted run pins the numbers (the script's verdicts are known); the slow one runs the
embedded default models over full_context and raptor in one Hydra multirun."""

from __future__ import annotations

import json

import pytest
from memharness.eval.record.scores import value
from paths import ROOT
from processes import run_py

FIX = ROOT / "tests" / "fixtures" / "fables"
# Gold: faithful x4 (odile, verity, bell, november), unfaithful x3 (relit, ferry [PartialSupport],
# prudence). Script: "unfaithful" for relit and odile, "faithful" for the rest except ferry, which
# gets the default reply (unparsed: counted as the label other than its gold, as CAM's code counts it).
#   faithful:   TP 3 (verity bell november), FP 2 (prudence, ferry unparsed), FN 1 (odile) -> 6 / 9 = 0.667
#   unfaithful: TP 1 (relit), FP 1 (odile), FN 2 (ferry unparsed, prudence)               -> 2 / 5 = 0.4
# (eval.answer.claim_unparsed=neither, a miss of the gold label only: F1_P 6 / 8 = 0.75)
SCRIPT = [
    ["Claim: Tobin relit", "unfaithful"],
    ["Claim: Odile Marsh kept", "unfaithful"],
    ["Claim: Tobin and Verity arrived", "no idea"],
    ["Claim: ", "faithful"],
]


def test_scripted_claims_give_the_hand_checked_f1_p_and_f1_n(tmp_path):
    script = "[" + ",".join(f'["{p}","{r}"]' for p, r in SCRIPT) + "]"
    proc = run_py(
        tmp_path,
        "memory=full_context",
        "dataset=fables",
        f"dataset.loader.path={FIX}",
        "llm=scripted",
        "embedder=hashing",
        f"llm.backend.script={script}",
        "eval.closed_book.enabled=true",  # the claim prompt with no passages, scored by its verdict
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    samples = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 7 and {s["mode"] for s in samples} == {"claim_verification"}
    assert metrics["metrics"]["f1_p"]["mean"] == pytest.approx(6 / 9)
    assert metrics["metrics"]["f1_n"]["mean"] == pytest.approx(0.4)
    assert metrics["metrics"]["f1_p"]["n"] == 7 and metrics["counts"]["claim_unparsed"] == 1
    assert metrics["metrics"]["claim_accuracy"]["mean"] == pytest.approx(4 / 7)
    assert "judge" not in metrics["metrics"]  # a verdict is never sent to the judge
    assert metrics["data"]["metadata"]["excluded_inapplicable"] == 1
    # closed book: the script answers by the claim alone, so each claim is right exactly as with memory
    for sample in samples:
        book = sample["scores"]["closed_book_accuracy"]
        assert book["details"]["criterion"] == "claim_accuracy"
        assert book["value"] == value(sample, "claim_accuracy")


@pytest.mark.slow
def test_embedded_default_full_context_and_raptor_in_one_multirun(tmp_path):
    proc = run_py(
        tmp_path,
        "memory=full_context,raptor",
        "dataset=fables",
        f"dataset.loader.path={FIX}",
        "dataset.limit=2",  # one faithful and one unfaithful claim (stratified by label): time, not scores
        "eval.judge.calibration_max=0",
        "eval.judge_audit.lenient=false",
        multirun=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = sorted((tmp_path / "runs").rglob("metrics.json"))
    assert [p.relative_to(tmp_path / "runs").parts[0] for p in found] == [
        "full_context-fables",
        "raptor-fables",
    ]
    for path in found:
        metrics = json.loads(path.read_text())
        assert metrics["llm"].startswith("llama.cpp:")
        assert metrics["counts"]["questions"] == metrics["counts"]["scored"] == 2
        assert metrics["counts"]["claim_unparsed"] == 0  # the reply is constrained to a label
        for key in ("f1_p", "f1_n"):  # both labels are gold for some claims: both defined
            assert metrics["metrics"][key]["n"] == 2
            assert 0.0 <= metrics["metrics"][key]["mean"] <= 1.0
