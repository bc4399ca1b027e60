"""dataset=longmemeval end to end with scripted doubles: the official judge's
accuracies in metrics.json, evidence recall, and no wall-clock date in any prompt of the run."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from memharness.eval.record.scores import detail, status
from memharness.eval.report.explorer_data import explorer_data
from memharness.eval.run.runner import run
from memharness.memsys.services import factory
from paths import TESTS

FIX = TESTS / "fixtures" / "longmemeval"
OFFICIAL = "Reply yes or no only"  # a phrase only the official judge prompts contain
HARNESS = "You are grading answers"
SCRIPT = json.dumps(
    [[OFFICIAL, "Yes."], [HARNESS, "1"], ["bathroom", "You never told me about the bathroom."]]
)


def _capture():
    made = []

    def make(section, group):
        backend = factory._instantiate_backend(section, group)
        made.append(backend)
        return backend

    return make, made


def _wall_clock_dates() -> set[str]:
    """Today's and yesterday's date in the formats a prompt could carry one (UTC and local)."""
    out = set()
    for now in (datetime.now(), datetime.now(UTC)):
        for day in (now, now - timedelta(days=1)):
            out |= {
                day.strftime("%Y-%m-%d"),
                day.strftime("%Y/%m/%d"),
                day.strftime("%d/%m/%Y"),
                day.strftime("%m/%d/%Y"),
                day.strftime("%B %d, %Y"),
                day.strftime("%d %B %Y"),
                day.strftime("%b %d %Y"),
            }
    return out


def test_longmemeval_run_official_judge_evidence_and_no_wall_clock(make_cfg, tmp_path):
    cfg = make_cfg(
        "memory=full_context",
        "dataset=longmemeval",
        f"dataset.loader.path={FIX / 'longmemeval_s_cleaned.json'}",
        f"llm.backend.script={SCRIPT}",
        "eval.closed_book.enabled=true",
    )
    out = tmp_path / "run"
    make, made = _capture()
    metrics = run(cfg, out, make_backend=make)
    samples = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert metrics["counts"]["questions"] == 7 == metrics["counts"]["scored"]

    # the official protocol, beside the harness judge
    off = metrics["official_judge"]
    assert off["protocol"] == "longmemeval" and off["judged"] == 7 and off["not_judged"] == 0
    assert off["overall"] == 1.0 and off["task_averaged"] == 1.0
    assert off["abstention"] == {"accuracy": 1.0, "n": 1}
    assert set(off["per_category"]) == {
        "single-session-user",
        "single-session-assistant",
        "single-session-preference",
        "temporal-reasoning",
        "knowledge-update",
        "multi-session",
    }
    assert off["per_category"]["single-session-user"]["n"] == 2  # the _abs item in its type
    assert metrics["metrics"]["official_judge"]["n"] == 7 and metrics["metrics"]["judge"]["n"] == 7
    by_abs = metrics["breakdowns"]["abstention"]
    assert by_abs["abstention"]["n"] == 1 and by_abs["answerable"]["n"] == 6
    abs_sample = next(s for s in samples if s["question_id"] == "5a1c9e02_abs")
    assert status(abs_sample, "official_judge") == "parsed" and detail(
        abs_sample, "official_judge", "reply"
    )
    # evidence recall: full context retrieves every turn; abstention items and the
    # single-session-assistant question (no user turn marked) have no evidence, as officially
    assert metrics["metrics"]["evidence_recall"]["mean"] == 1.0
    assert metrics["metrics"]["evidence_recall"]["n"] == 5
    assert metrics["data"]["metadata"]["no_user_answer_turn"] == 1
    assert (
        list(metrics["data"]["files"].values())[0]
        == metrics["data"]["files"][str(FIX / "longmemeval_s_cleaned.json")]
    )

    # time: the question's date from the data is the answer prompt's current date ...
    asked = {s["question_id"]: s for s in samples}
    assert (
        "Current date: 2023/11/05 (Sun) 09:30\nQuestion: Where do I keep my bike now?"
        in (asked["0c9a41d7"]["prompt"])
    )
    assert asked["0c9a41d7"]["asked_at"] == "2023/11/05 (Sun) 09:30"  # recorded for the explorer
    page = explorer_data([out], tmp_path / "page.html")
    shown = next(q for q in page["questions"] if q["qid"] == "0c9a41d7")
    assert shown["date"] == "2023/11/05 (Sun) 09:30"
    # ... and no wall-clock date reaches any prompt sent in the run (answers, closed book, judges, audit)
    prompts = [m[1] for b in made if hasattr(b, "requests") for r in b.requests for m in r.messages]
    assert len(prompts) > 7 * 4
    leaked = {d for d in _wall_clock_dates() for p in prompts if d in p}
    assert not leaked, leaked
    years = {y for p in prompts for y in re.findall(r"\b20\d\d\b", p)}
    assert years <= {"2023"}, years  # only the fixture's own year appears
