"""The static results browser, as a person uses it in headless Chromium."""

from __future__ import annotations

import json

from browser import browser_page
from memharness.eval.record import scores
from memharness.eval.report.browser import main as browse_main
from memharness.eval.run.runner import run

SCRIPT = '[["Which striker","Rosa Lind"],["| Predicted: ","1"]]'


def test_browser_lists_runs_filters_and_opens_a_sample_with_its_provenance(make_cfg, tmp_path):
    runs = tmp_path / "runs"
    run(
        make_cfg("memory=full_context", "dataset.limit=4", f"llm.backend.script={SCRIPT}"),
        runs / "a",
    )
    run(make_cfg("memory=memtree", "dataset.limit=4", f"llm.backend.script={SCRIPT}"), runs / "b")
    page_path = browse_main([str(runs), "--out", str(tmp_path / "t" / "browser.html")])
    samples = [json.loads(x) for x in (runs / "b" / "samples.jsonl").read_text().splitlines()]
    with browser_page() as page:
        page.goto(page_path.as_uri())
        rows = page.inner_text("#runs")
        assert (
            "full_context" in rows
            and "memtree" in rows
            and page.eval_on_selector_all("#runs tr", "e => e.length") == 2
        )
        page.fill("#runfilter", "memtree")
        assert page.eval_on_selector_all("#runs tr", "e => e.length") == 1
        page.click("#runs tr")
        assert page.eval_on_selector_all("#samples tr", "e => e.length") == len(samples) == 4
        target = next(s for s in samples if s["retrieved"])
        page.fill("#samplefilter", target["question"][:25])
        page.click("#samples tr")
        detail = page.inner_text("#sample")
        assert target["question"] in detail and target["references"][0] in detail
        assert (scores.detail(target, "judge", "reply") or "-") in detail
        cells = page.eval_on_selector_all(
            "#retrieved tr", "rows => rows.slice(1).map(r => [...r.cells].map(c => c.innerText))"
        )
        assert len(cells) == len(target["retrieved"])
        first = target["retrieved"][0]
        assert cells[0][3] == first["node_id"] and cells[0][4] == ", ".join(
            first["source_unit_ids"]
        )
        assert cells[0][5].strip() == first["text"].strip()
        assert page.errors == []
