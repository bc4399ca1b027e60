"""dataset=locomo end to end: offline with the scripted LLM (what metrics.json holds, and that no
wall-clock date reaches any prompt), and once through run.py with the real embedded models (slow)."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from memharness.eval.run.runner import run
from memharness.memsys.testing import doubles
from paths import FIXTURES

FILE = FIXTURES / "locomo" / "locomo10.json"
ERRATA = FIXTURES / "locomo" / "errata.json"
# Dates as the data and the prompts may write them: "14 March, 2023", "2023-03-14", "March 2023"
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
DATE = re.compile(
    rf"\b\d{{1,2}} (?:{MONTHS}),? \d{{4}}\b|\b\d{{4}}-\d\d-\d\d\b|\b(?:{MONTHS}) \d{{4}}\b"
)
YEAR = re.compile(r"\b(?:19|20)\d\d\b")


def assert_locomo_metrics(metrics: dict, adversarial: int = 3, multi_hop: int = 3) -> None:
    """What a LoCoMo run's metrics.json must show (issue 25); the counts are the whole fixture's
    unless a run kept a subset (``adversarial`` / ``multi_hop`` questions, of every category)."""
    main, apart = metrics["metrics"], metrics["metrics_apart"]["adversarial"]
    assert {"locomo_f1", "judge", "exact_match", "evidence_recall"} <= set(main)
    assert "locomo_adversarial" not in main  # category 5 never enters the means
    assert apart["n"] == adversarial and "locomo_adversarial" in apart and "locomo_f1" not in apart
    # categories 1-4 only
    assert main["locomo_f1"]["n"] == metrics["counts"]["questions"] - adversarial
    by_category = metrics["breakdowns"]["category"]
    assert set(by_category) == {"adversarial", "multi-hop", "open-domain", "single-hop", "temporal"}
    assert "locomo_adversarial" in by_category["adversarial"]
    assert "locomo_f1" in by_category["multi-hop"] and by_category["multi-hop"]["n"] == multi_hop
    data = metrics["data"]
    assert data["metadata"]["sha256"] == data["files"][str(FILE)]
    assert data["metadata"]["matches_pin"] is False  # the fixture is not the upstream file
    assert isinstance(data["metadata"]["errata"]["applied"], bool)


@pytest.mark.parametrize(
    "memory", ["memory=memorystream memory.scoring=generative_agents", "memory=memtree"]
)
def test_no_wall_clock_date_reaches_any_prompt(make_cfg, tmp_path, monkeypatch, memory):
    prompts: list[str] = []
    chat = doubles.ScriptedChat.chat

    def capture(self, request):
        prompts.extend(text for _, text in request.messages)
        return chat(self, request)

    monkeypatch.setattr(doubles.ScriptedChat, "chat", capture)
    cfg = make_cfg(
        *memory.split(),
        "dataset=locomo",
        f"dataset.loader.path={FILE}",
        f"dataset.loader.errata={ERRATA}",
        "llm=scripted",
        "embedder=hashing",
        "cache.enabled=false",
        "eval.closed_book.enabled=true",
        fake=False,
    )
    metrics = run(cfg, tmp_path / "run")
    assert_locomo_metrics(metrics)
    assert metrics["data"]["metadata"]["errata"]["applied"] is True
    samples = [json.loads(s) for s in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 12 and len(prompts) > 24  # build, answer, judge, audit, closed book
    data_text = FILE.read_text() + ERRATA.read_text()
    today = datetime.now()
    wall = {today.strftime(f) for f in ("%Y-%m-%d", "%d %B, %Y", "%d %B %Y", "%B %Y")}
    wall |= {f"{today.day} {today:%B}, {today.year}", f"{today.day} {today:%B} {today.year}"}
    for prompt in prompts:
        assert not any(w in prompt for w in wall), prompt
        # every date and year in a prompt is one the data holds (the fixture is dated 2023)
        for found in DATE.findall(prompt) + YEAR.findall(prompt):
            iso = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", found)
            assert found in data_text or (iso and iso[1] in data_text), (found, prompt)
    # the answer prompts carry the session dates with the turns, as the official RAG code does
    answers = [s["prompt"] for s in samples if s.get("prompt")]
    assert any("on 14 March, 2023: Ines said" in p for p in answers)


@pytest.mark.slow
def test_run_py_on_the_fixture_with_the_embedded_default(tmp_path):
    """The issue's command on the fixture with the embedded default model. Six of the 12 questions
    (the stratified subset: every category, both conversations) halve the model's calls; the
    scripted run above checks the whole fixture's counts."""
    from test_cli import run_py

    proc = run_py(
        tmp_path,
        "memory=memorystream",
        "dataset=locomo",
        f"dataset.loader.path={FILE}",
        "dataset.limit=6",
        "eval.judge.calibration_max=0",  # the judge audit's canaries and lenient pass: not this test's subject
        "eval.judge_audit.lenient=false",
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["counts"]["questions"] == 6
    assert_locomo_metrics(metrics, adversarial=1, multi_hop=1)
    assert metrics["data"]["episodes"] == 2  # both conversations' memories built and asked
    assert metrics["data"]["metadata"]["errata"] == {"applied": False}
    assert metrics["judge"] == metrics["llm"]  # the harness judge beside the official metric


def test_a_planted_erratum_is_flagged_with_both_scores_and_the_ceilings(make_cfg, tmp_path):
    """errata_wrong.json lists conv-90/qa-2 (single-hop) as a wrong gold: the table names it, shows
    each category's ceiling and the scores with and without it (the scripted judge says 1 to all)."""
    from memharness.eval.report.comparison import build_report

    cfg = make_cfg(
        "memory=full_context",
        "dataset=locomo",
        f"dataset.loader.path={FILE}",
        f"dataset.loader.errata={FIXTURES / 'locomo' / 'errata_wrong.json'}",
        "llm=scripted",
        "embedder=hashing",
        "cache.enabled=false",
        fake=False,
    )
    metrics = run(cfg, tmp_path / "runs" / "r")
    assert metrics["data"]["metadata"]["errata"]["listed_wrong"] == 1
    assert set(metrics["breakdowns"]["gold"]) == {"listed_wrong", "unlisted"}
    md = build_report([tmp_path / "runs"], tmp_path / "t", "x")["md"].read_text()
    section = md.split("## Gold errata")[1].split("\n## ")[0]
    assert "flagged questions" in section and "(1): conv-90/qa-2." in section
    # 9 questions in the means (3 adversarial apart), one listed: ceiling 8/9; single-hop 3/4
    assert "| full_context | locomo | A | all (in the means) | 9 | 1 | 0.889 | 1 / 1 |" in section
    assert "| single-hop | 4 | 1 | 0.750 | 1 / 1 |" in section
    assert "| temporal | 1 | 0 | 1 |" in section
