"""The explorer's data: which retrieved items are gold, prompts stored as references, the
head-to-head counts and tests, and the embedder named by its model."""

from __future__ import annotations

import pytest
from memharness.eval.metrics.stats import mcnemar, paired_permutation
from memharness.eval.report.explorer_data import (
    Limits,
    Texts,
    cut,
    prompt_parts,
    run_keys,
    run_summary,
    stage_averages,
)
from memharness.eval.report.explorer_pairs import pair
from memharness.eval.report.tables import short_model
from memharness.eval.run.evidence import gold_items
from memharness.memsys.services.backends.local import SentenceTransformerBackend
from memharness.memsys.types import Evidence, RetrievedItem, Unit


def _units() -> dict[str, Unit]:
    sources = ["s1", "s1", "s2", "s2"]
    return {f"u{i}": Unit(f"u{i}", f"t{i}", src, i) for i, src in enumerate(sources)}


def _item(*uids: str) -> RetrievedItem:
    return RetrievedItem("x", 1.0, "n", source_unit_ids=uids)


def test_gold_items_are_the_items_over_gold_units_by_span_or_by_source():
    units = _units()
    items = [_item("u0"), _item("u3", "u1", "elsewhere"), _item("u2")]
    span = gold_items([Evidence("s1", position=1, end=2)], items, units)
    assert span == {"gold_items": [1], "gold_units": ["u1"]}
    whole = gold_items([Evidence("s2")], items, units)  # no span: every unit of the source
    assert whole == {"gold_items": [1, 2], "gold_units": ["u3", "u2"]}
    assert gold_items([Evidence("s9")], items, units) == {"gold_items": [], "gold_units": []}


def test_a_prompt_is_its_quoted_items_and_the_words_between_stored_once():
    texts, limits = Texts(), Limits(item_chars=100, prompt_chars=12)
    items = ["Speaker 1: the dog is Pepper.", "Speaker 2: a greyhound!", "not quoted"]
    a = "Answer from the memory.\n" + items[1] + "\n" + items[0] + "\nQ: dog?"
    b = "Answer from the memory.\n" + items[0] + "\nQ: cat?"
    pa, pb = prompt_parts(a, items, texts, limits), prompt_parts(b, items, texts, limits)
    # the item texts and the shared head are one entry each, whatever prompt quotes them
    assert texts.items.count(items[0]) == 1 and pa[0] == pb[0] and pa[3] == pb[1]
    assert "not quoted" not in texts.items
    head = "Answer from the memory.\n"
    assert texts.items[pa[0]] == cut(head, 12) != head  # only the words between are cut
    assert "".join(texts.items[i] for i in pa[1:]) == a[len(head) :]
    whole = Texts()
    assert "".join(whole.items[i] for i in prompt_parts(a, items, whole, Limits())) == a


def test_cut_keeps_head_and_tail_and_says_how_much_went():
    assert cut("short", 10) == "short"
    shown = cut("a" * 50 + "b" * 50, 20)
    assert shown.startswith("a" * 10) and shown.endswith("b" * 10) and "80 characters cut" in shown


def _cell(v: float) -> dict:
    return {"v": {"judge": v}}


def test_head_to_head_counts_and_tests_the_shared_questions_per_category():
    a = {i: _cell(v) for i, v in enumerate([1, 1, 1, 0, 0, 1, 1])}
    b = {i: _cell(v) for i, v in enumerate([0, 0, 1, 0, 1, 1, 0])}
    b[6] = {"v": {}}  # B has no verdict there: not a pair
    del a[5]  # A never answered question 5
    cats = [["type=x"], ["type=x"], ["type=y"], ["type=y"], ["type=y"], ["type=x"], ["type=x"]]
    r = pair(a, b, "judge", cats)
    shared = [0, 1, 2, 3, 4]
    assert (r["n"], r["win"], r["tie"], r["loss"]) == (5, 2, 2, 1)
    expected = mcnemar([a[i]["v"]["judge"] for i in shared], [b[i]["v"]["judge"] for i in shared])
    assert r["test"] == "mcnemar" and r["p"] == pytest.approx(expected["p"])
    assert r["differ"] == [0, 1, 4]
    assert r["categories"]["type=x"]["win"] == 2 and r["categories"]["type=x"]["n"] == 2
    assert r["categories"]["type=y"]["loss"] == 1 and r["categories"]["type=y"]["n"] == 3
    f1a = {i: _cell(x) for i, x in enumerate([0.2, 0.9, 0.5])}
    f1b = {i: _cell(x) for i, x in enumerate([0.1, 0.4, 0.5])}
    cont = pair(f1a, f1b, "judge", [[], [], []])
    assert cont["test"] == "permutation"
    assert cont["p"] == pytest.approx(paired_permutation([0.2, 0.9, 0.5], [0.1, 0.4, 0.5])["p"])
    assert pair(a, {}, "judge", cats) is None


def test_run_keys_are_the_memory_unless_two_runs_share_it():
    runs = [
        {"memory": "memtree", "dataset": "locomo", "folder": "/r/1"},
        {"memory": "full_context", "dataset": "locomo", "folder": "/r/2"},
    ]
    assert run_keys(runs) == ["memtree", "full_context"]
    runs.append({"memory": "memtree", "dataset": "msc", "folder": "/r/3"})
    assert run_keys(runs) == ["memtree.locomo", "full_context.locomo", "memtree.msc"]
    runs.append({"memory": "memtree", "dataset": "msc", "folder": "/r/4"})
    keys = run_keys(runs)
    assert len(set(keys)) == 4 and keys == run_keys(runs)  # distinct and stable
    assert all(
        k.startswith(r["memory"] + "." + r["dataset"] + ".")
        for k, r in zip(keys, runs, strict=True)
    )


def test_the_bundled_embedder_is_named_by_its_model_everywhere():
    assert SentenceTransformerBackend().model_id == "st:all-MiniLM-L6-v2"  # no model is loaded
    assert SentenceTransformerBackend(model="/models/bge-small").model_id == "st:/models/bge-small"
    assert short_model("st:all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    assert short_model("st:model") == "all-MiniLM-L6-v2"  # a record from before the rename


def test_stage_figures_are_the_ledger_per_question():
    run = {
        "counts": {"questions": 4},
        "intrinsic": {
            "build": {"calls": 2, "prompt_tokens": 30, "completion_tokens": 10, "call_s": 1.0},
            "retrieve": {"calls": 0, "embed_texts": 8, "call_s": 0.0},
            "closed_book": {"calls": 0},
        },
    }
    assert stage_averages(run) == {"build": [10.0, 0.25], "retrieve": [0.0, 0.0]}


def test_a_leaderboard_row_reads_the_run_record():
    run = {
        "memory": "memtree",
        "dataset": "locomo",
        "setting": "memory.top_k=3",
        "folder": "/r/1",
        "llm": "llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf:ctx4096",
        "embedder": "st:model",
        "judge": None,
        "counts": {"questions": 4, "scored": 3, "judge_injection": 1},
        "metrics": {"judge": {"mean": 0.5, "ci_low": 0.1, "ci_high": 0.9, "n": 3}, "other": {}},
        "time": {"total_s": 10.0},
        "intrinsic": {"answer": {"calls": 4, "prompt_tokens": 80, "call_s": 2.0}},
    }
    row = run_summary(run, "memtree", "locomo:abc")
    assert row["label"] == "memtree [memory.top_k=3]" and row["embedder"] == "all-MiniLM-L6-v2"
    assert (row["n"], row["failed"], row["injection"]) == (4, 1, 1)
    assert row["metrics"] == {"judge": run["metrics"]["judge"]}
    assert row["cost"]["s_per_question"] == 2.5 and row["cost"]["tokens_per_question"] == 20
    assert row["stages"] == {"answer": [20.0, 0.5]}
    assert row["judge_flag"] == "judge audit not measured"  # a judged run without canaries


@pytest.mark.parametrize(
    "accepts,false_other,flag",
    [
        (1.0, 0.0, None),
        (0.95, 0.05, None),
        (0.8, 0.0, "judge canaries 0.80 / 1.00 below 0.9"),
        (1.0, 0.5, "judge canaries 1.00 / 0.50 below 0.9"),
    ],
)
def test_the_leaderboard_flags_a_judge_as_the_tables_do(accepts, false_other, flag):
    from memharness.eval.judge.separation import judge_flag

    canaries = {"accepts_reference": {"rate": accepts}, "false_accept_other": {"rate": false_other}}
    run = {"metrics": {"judge": {"mean": 0.5}}, "judge_reliability": {"canaries": canaries}}
    assert judge_flag(run) == flag
    assert judge_flag({"metrics": {"f1": {"mean": 0.5}}}) is None  # no judge column, no flag
