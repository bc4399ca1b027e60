"""No text a run writes can change the structure of an HTML page that shows it (headless Chromium)."""

from __future__ import annotations

import json

from browser import browser_page
from memharness.eval.report.browser import main as browse_main
from memharness.eval.run.runner import run
from memharness.memsys.services.formats import html_page

PAYLOADS = [
    "<!--<script",
    "</script><script>document.title='owned'</script>",
    "<script>throw new Error('x')</script>",
    "<!-- a comment that never ends",
    "]]> &amp; &lt;/script&gt; \u2028 \u2029 \\u003c",
    "</SCRIPT >",
]


def test_any_text_in_the_data_block_comes_back_unchanged_and_the_page_keeps_its_elements(tmp_path):
    script = (
        "const d = JSON.parse(document.getElementById('data').textContent);"
        "for (const t of d.texts) { const li = document.createElement('li');"
        " li.textContent = t; document.getElementById('out').appendChild(li); }"
        "document.body.dataset.done = '1';"
    )
    page_file = tmp_path / "p.html"
    page_file.write_text(html_page("t", "", "<ul id='out'></ul>", {"texts": PAYLOADS}, script))
    with browser_page() as page:
        page.goto(page_file.as_uri())
        assert page.get_attribute("body", "data-done") == "1" and page.title() == "t"
        shown = page.eval_on_selector_all("#out li", "els => els.map(e => e.textContent)")
        assert shown == PAYLOADS
        assert page.eval_on_selector_all("script", "els => els.length") == 2
        assert page.errors == []


def test_every_view_of_the_explorer_survives_an_answer_that_opens_a_script_comment(
    make_cfg, tmp_path
):
    runs = tmp_path / "runs"
    for name, memory in (("a", "full_context"), ("b", "memtree")):
        cfg = make_cfg(f"memory={memory}", "dataset.limit=2")
        cfg.llm.backend.default = PAYLOADS[0] + " " + PAYLOADS[1]  # every answer is the payload
        run(cfg, runs / name)
    samples = [json.loads(x) for x in (runs / "a" / "samples.jsonl").read_text().splitlines()]
    assert all(PAYLOADS[0] in s["prediction"] for s in samples)
    page_path = browse_main([str(runs), "--out", str(tmp_path / "t" / "browser.html")])
    with browser_page() as page:
        page.goto(page_path.as_uri())
        keys = [r["key"] for r in json.loads(page.text_content("#data"))["runs"]]
        views = ["#board", "#matrix", f"#q={samples[0]['question_id']}", "#h2h", "#diff"]
        views.append(f"#q={samples[1]['question_id']}&a={keys[0]}&b={keys[1]}")
        for view in views:
            page.goto(page_path.as_uri() + view)
            assert page.get_attribute("body", "data-ready") == "1" and page.title() != "owned"
            assert page.eval_on_selector_all("script", "els => els.length") == 2, view
        page.goto(page_path.as_uri() + "#matrix")
        tips = page.eval_on_selector_all("#m-body td.v", "tds => tds.map(t => t.title)")
        assert len(tips) == 4 and all(PAYLOADS[0] + " " + PAYLOADS[1] in t for t in tips)
        page.click("#m-body tr")
        answers = page.eval_on_selector_all("#q-out .answer", "es => es.map(e => e.textContent)")
        assert answers == [PAYLOADS[0] + " " + PAYLOADS[1]] * 2
        assert page.errors == []
