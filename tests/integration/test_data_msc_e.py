"""The MSC-E generator: robust parsing of weak model output, and an end-to-end run with the embedded model."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from memharness.data_prep import msc_e, msc_e_replies
from memharness.memsys.testing.doubles import ScriptedLLM
from paths import ROOT, TESTS

FIX = TESTS / "fixtures"


def test_parse_turns_pairs_only_complete_alex_bob_rounds():
    text = (
        "Sure! Here is the dialogue:\n**Alex:** I baked bread today.\nIt came out crusty.\n"
        "Bob: Nice, what kind?\nBob: Sorry, ignore that.\nAlex: Rye.\nBob: Yum.\nAlex: trailing"
    )
    turns = msc_e_replies.parse_turns(text)
    assert turns[0] == ("Alex", "I baked bread today. It came out crusty.")
    rounds = msc_e_replies.pair_rounds(turns)
    assert [[t["text"] for t in r] for r in rounds] == [
        ["I baked bread today. It came out crusty.", "Nice, what kind?"],
        ["Rye.", "Yum."],
    ]
    assert msc_e_replies.pair_rounds(msc_e_replies.parse_turns("no speakers here at all")) == []


def test_parse_qa_accepts_valid_items_and_counts_the_rest():
    good, bad = msc_e_replies.parse_qa(
        'Here: [{"question": "Q1?", "response": "A1"}, {"question": "Q2?"}, 3] done'
    )
    assert good == [{"question": "Q1?", "answer": "A1"}] and bad == 2
    good, bad = msc_e_replies.parse_qa(
        '{"question": "Q?", "response": "A"} and {"question": broken}'
    )
    assert good == [{"question": "Q?", "answer": "A"}] and bad == 1  # the broken object is counted
    assert msc_e_replies.parse_qa("I cannot help with that.") == ([], 1)


def _gen(**over):
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(ROOT / "conf" / "dataset" / "msc_e.yaml").generator
    gen = {k: v for k, v in OmegaConf.to_container(cfg).items() if k != "seed"}
    return {**gen, "seed": 0, **over}


def test_generate_extends_with_window_retries_and_never_fabricates():
    row = json.loads((FIX / "msc" / "msc_self_instruct.jsonl").read_text().splitlines()[0])
    llm = ScriptedLLM(
        [
            "garbage",
            "Alex: One.\nBob: Two.\nAlex: Three.\nBob: Four.",
            '[{"question": "Q?", "response": "A."}]',
            "not json",
            "[]",
        ]
    )
    tally = msc_e.Tally()
    records = msc_e.generate([("fx:1", row)], llm, _gen(qa_window_rounds=4), 12, tally)
    rec = records[0]
    assert len(rec["rounds"]) == 12 and rec["rounds"][10]["turns"][0] == {
        "speaker": "Alex",
        "text": "One.",
    }
    window = llm.prompts[0].split("[ Conversation so far ]\n")[1].split("\n[ Continuation ]")[0]
    assert window.count("\n") == 7 and window.endswith(
        "Bob: That is a good choice."
    )  # last 8 turns
    assert (tally.steps, tally.malformed_steps, tally.qa_windows, tally.malformed_qa_windows) == (
        2,
        1,
        3,
        2,
    )
    assert [
        (q["question"], q["asked_after_round"], q["evidence_rounds"]) for q in rec["questions"]
    ] == [("Q?", 4, [0, 4])]


def test_generate_records_truncation_when_steps_keep_failing():
    row = json.loads((FIX / "msc" / "msc_self_instruct.jsonl").read_text().splitlines()[1])
    llm = ScriptedLLM(["x", "y", "z", "[]", "[]"])
    tally = msc_e.Tally()
    rec = msc_e.generate([("fx:2", row)], llm, _gen(max_attempts=3), 14, tally)[0]
    assert len(rec["rounds"]) == 10 and tally.truncated_episodes == [rec["id"]]


@pytest.mark.slow
def test_generator_end_to_end_with_embedded_model_feeds_the_loader(tmp_path):
    out = tmp_path / "msc_e"
    cmd = [
        sys.executable,
        "-m",
        "memharness.data_prep.msc_e",
        "generate",
        "--input",
        str(FIX / "msc" / "msc_self_instruct.jsonl"),
        "--out",
        str(out),
        "--rounds",
        "11",
        "--limit",
        "1",
        f"cache.path={tmp_path / 'calls.sqlite'}",
        f"data_dir={tmp_path}",
        "progress=false",
        "dataset.generator.max_tokens=50",
        "dataset.generator.qa_max_tokens=70",
        "dataset.generator.qa_window_rounds=11",
        "dataset.generator.max_attempts=1",
        "llm=local_tiny",  # the tiny model: plumbing, not text quality
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
    ]  # the generator embeds nothing
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    card = (out / "CARD.md").read_text()
    assert (
        "SmolLM2-135M-Instruct" in card
        and "malformed_steps" in card
        and "Write exactly {n_rounds}" in card
    )
    rec = json.loads((out / msc_e.FILENAME).read_text())
    generated = [r for r in rec["rounds"] if r["origin"] == "generated"]
    if not rec["questions"]:  # the tiny model may write no usable question: the loader says so
        with pytest.raises(msc_e.DatasetError, match="no question to ask"):
            msc_e.load(str(out))
        assert all(t["text"] for r in generated for t in r["turns"])
        return
    ds = msc_e.load(str(out))
    assert len(ds.episodes[0].units) == len(rec["rounds"])
    assert (
        len(rec["rounds"]) == 11 or rec["id"] in card
    )  # extended, or its truncation is on the card
    assert all(t["text"] for r in generated for t in r["turns"])
    assert all(q.position == 11 and q.evidence_position == 0 for q in ds.episodes[0].questions)
