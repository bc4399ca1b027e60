"""The results explorer, as a person uses it in headless Chromium: filter the matrix, open a
question side by side, pick two systems, compare them head to head, diff two runs of one system,
follow a deep link. Every assertion is about what is on screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import browser_page
from memharness.eval.bench.explorer import write_runs
from memharness.eval.judge.separation import judge_flag
from memharness.eval.metrics.stats import paired_test
from memharness.eval.record import scores
from memharness.eval.report.browser import main as browse_main
from memharness.eval.run.runner import run

# A answers the robotics question right (its reference), B answers everything "Mira"; the judge
# says 1 only to the right name, so A and B differ on exactly that question.
JUDGE = [["Predicted: Harbor Robotics", "1"], ["| Predicted: ", "0"]]
RIGHT = json.dumps(JUDGE + [["Which robotics", "Harbor Robotics"]])
WRONG = json.dumps(JUDGE)
# memtree's lenient judge (the audit's second prompt) accepts its answer to one question only
LENIENT = ["nothing else.\nQuery: Did Game Pulse", "1"]


def _samples(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]


@pytest.fixture
def sweep(make_cfg, tmp_path):
    """Three runs on four questions: full_context right on the robotics question, memtree wrong, and a
    second full_context run (the 'after' of a change) wrong too; then the page."""
    runs = tmp_path / "runs"
    plan = {
        "a": ("full_context", RIGHT, "I do not know"),
        "b": ("memtree", WRONG, "Mira"),
        "c": ("full_context", WRONG, "Mira"),
    }
    for name, (memory, script, default) in plan.items():
        cfg = make_cfg(
            f"memory={memory}",
            "dataset.limit=4",
            f"llm.backend.script={script}",
            f"+llm.backend.model_id=scripted-{name}",  # its own cache keys: no reply is shared
        )
        cfg.llm.backend.default = default
        if name == "b":
            cfg.llm.backend.script = [LENIENT, *cfg.llm.backend.script]
        run(cfg, runs / name)
    page = browse_main([str(runs), "--out", str(tmp_path / "t" / "browser.html")])
    return runs, page


def _keys(page) -> dict[str, str]:
    """Each run's link key by its folder name, read off the page's data."""
    data = json.loads(page.text_content("#data"))
    return {Path(r["folder"]).name: r["key"] for r in data["runs"]}


def _rows(page) -> list[str]:
    return page.eval_on_selector_all("#m-body tr", "rs => rs.map(r => r.cells[0].innerText)")


def test_filter_the_matrix_then_open_a_question_side_by_side_with_its_evidence(sweep):
    runs, page_path = sweep
    a, b = _samples(runs / "a"), _samples(runs / "b")
    target = next(s for s in a if "robotics" in s["question"])
    assert scores.value(target, "judge") == 1
    with browser_page() as page:
        page.goto(page_path.as_uri())
        board = page.inner_text("#v-board")
        assert board.count("full_context") == 2 and "memtree" in board
        for name in "abc":  # the tables' judge rule, shown as a flag with its reason on hover
            flag = judge_flag(json.loads((runs / name / "metrics.json").read_text()))
            row = page.locator(f"#v-board tr[data-key='{_keys(page)[name]}']")
            shown = row.locator("span.flag", has_text="judge")
            assert shown.count() == (flag is not None)
            assert flag is None or shown.get_attribute("title") == flag
        page.click("nav button[data-view='matrix']")
        assert len(_rows(page)) == 4
        page.check("#f-disagree")
        assert _rows(page) == [target["question"]]
        page.uncheck("#f-disagree")
        page.check("#f-allwrong")
        assert sorted(_rows(page)) == sorted(s["question"] for s in a if s is not target)
        page.uncheck("#f-allwrong")
        page.select_option("#f-cat", "type=" + target["categories"]["type"])
        assert _rows(page) == [
            s["question"] for s in a if s["categories"]["type"] == target["categories"]["type"]
        ]
        page.select_option("#f-cat", "")
        page.check("#f-judges")  # strict and lenient differ on memtree's Game Pulse answer only
        (lenient,) = [s for s in b if scores.value(s, "judge_lenient") == 1]
        assert scores.value(lenient, "judge") == 0 and "Game Pulse" in lenient["question"]
        assert _rows(page) == [lenient["question"]]
        page.uncheck("#f-judges")
        page.fill("#f-search", "zzz-nothing")
        assert _rows(page) == [] and "0 of 4" in page.inner_text("#m-count")
        page.fill("#f-search", "ROBOTICS COMPANY")
        assert _rows(page) == [target["question"]]
        marks = page.eval_on_selector_all("#m-body td.v", "tds => tds.map(t => t.className)")
        assert sorted(m.split()[-1] for m in marks) == ["v-bad", "v-bad", "v-ok"]
        page.click("#m-body tr")
        assert "q=" in page.evaluate("location.hash")
        assert page.inner_text("#q-ref") == "Reference: " + " / ".join(target["references"])
        assert len(page.query_selector_all("#q-out .col")) == 3  # every run that answered it
        keys = _keys(page)
        page.select_option("#q-a", keys["a"])
        page.select_option("#q-b", keys["b"])
        cols = page.query_selector_all("#q-out .col")
        assert [c.get_attribute("data-run") for c in cols] == [keys["a"], keys["b"]]
        assert cols[0].query_selector(".answer").inner_text() == "Harbor Robotics"
        assert cols[1].query_selector(".answer").inner_text() == "Mira"
        assert f"a={keys['a']}" in page.evaluate("location.hash")
        # the items over gold evidence are the highlighted ones, with the gold units in bold
        for col, sample in (
            (cols[0], target),
            (cols[1], next(s for s in b if s["question_id"] == target["question_id"])),
        ):
            gold = scores.detail(sample, "evidence_recall", "gold_items") or []
            items = col.query_selector_all(".item")
            assert len(items) == len(sample["retrieved"])
            lit = [k for k, it in enumerate(items) if "gold" in (it.get_attribute("class") or "")]
            assert lit == gold
            bold = {e.inner_text() for e in col.query_selector_all(".gold-unit")}
            assert bold == set(scores.detail(sample, "evidence_recall", "gold_units") or []) & {
                u for r in sample["retrieved"] for u in r["source_unit_ids"][:24]
            }
        assert scores.detail(target, "evidence_recall", "gold_items")  # the check is not vacuous
        assert page.errors == []


def test_head_to_head_and_run_diff_count_what_the_run_folders_hold(sweep):
    runs, page_path = sweep
    a, c = _samples(runs / "a"), _samples(runs / "c")
    va = [scores.value(s, "judge") for s in a]
    vc = [scores.value(s, "judge") for s in c]
    expected_p = paired_test(va, vc)["p"]
    with browser_page() as page:
        page.goto(page_path.as_uri())
        keys = _keys(page)
        page.click("nav button[data-view='h2h']")
        page.select_option("#h-a", keys["a"])
        page.select_option("#h-b", keys["c"])
        summary = page.inner_text("#h-summary")
        wins = sum(x > y for x, y in zip(va, vc, strict=True))
        losses = sum(x < y for x, y in zip(va, vc, strict=True))
        assert f"A wins {wins}, ties {4 - wins - losses}, loses {losses} of 4" in summary
        assert f"p = {expected_p:.3g}" in summary.replace("p = 1.00", "p = 1")
        differ = page.eval_on_selector_all("#h-out .qlist a", "as => as.map(a => a.innerText)")
        assert differ == [s["question"] for s, x, y in zip(a, va, vc, strict=True) if x != y]
        page.click("nav button[data-view='diff']")
        page.select_option("#d-a", keys["a"])
        assert page.eval_on_selector_all("#d-b option", "os => os.map(o => o.value)") == [
            keys["c"]
        ]  # only the other run of the same system
        assert "0 became right, 1 became wrong" in page.inner_text("#d-summary")
        page.click("#d-out .qlist a")
        cols = page.query_selector_all("#q-out .col")
        assert [c.query_selector(".answer").inner_text() for c in cols] == [
            "Harbor Robotics",
            "Mira",
        ]
        assert page.errors == []


def test_a_pasted_deep_link_opens_the_question_with_the_two_runs(sweep):
    runs, page_path = sweep
    b = _samples(runs / "b")
    target = b[-1]
    with browser_page() as page:
        page.goto(page_path.as_uri())
        keys = _keys(page)
        page.goto(f"{page_path.as_uri()}#q={target['question_id']}&a={keys['b']}&b={keys['c']}")
        page.wait_for_selector("#q-out .col")
        assert page.is_visible("#v-question") and not page.is_visible("#v-matrix")
        assert target["question"] in page.inner_text("#q-out .qhead")
        cols = page.query_selector_all("#q-out .col")
        assert [c.get_attribute("data-run") for c in cols] == [keys["b"], keys["c"]]
        assert all(c.query_selector(".answer").inner_text() == "Mira" for c in cols)
        verdicts = cols[0].eval_on_selector_all(
            ".judges tr", "rs => rs.map(r => [r.cells[0].innerText, r.cells[1].innerText])"
        )  # every judge's verdict of memtree's answer, as run b recorded them
        assert (
            verdicts == [[m, f"{scores.value(target, m):.2f}"] for m in ("judge", "judge_lenient")]
            and verdicts[0][1] != verdicts[1][1]
        )
        page.goto(f"{page_path.as_uri()}#q=no-such-question")
        assert "No question with id no-such-question" in page.inner_text("#q-out")
        assert page.errors == []


def test_a_long_matrix_draws_its_rows_as_the_reader_scrolls_and_the_board_sorts(tmp_path):
    write_runs(tmp_path / "runs", questions=150, flat=1, tree_runs=1)  # the bench's generator
    page_path = browse_main([str(tmp_path / "runs"), "--out", str(tmp_path / "p.html")])
    with browser_page() as page:
        page.goto(page_path.as_uri())
        names = lambda: page.eval_on_selector_all(  # noqa: E731
            "#v-board tbody tr", "rs => rs.map(r => r.cells[0].firstChild.textContent)"
        )
        assert names() == ["flat_0", "tree_1"]  # the name, then its flags (no judge audit here)
        assert page.locator("#v-board span.flag", has_text="judge").count() == 2
        judge = page.locator("#v-board th").nth(8)  # the judge metric's column
        assert judge.inner_text() == "judge"
        means = lambda: page.eval_on_selector_all(  # noqa: E731
            "#v-board tbody tr", "rs => rs.map(r => parseFloat(r.cells[8].innerText))"
        )
        judge.click()  # highest first
        assert means() == sorted(means(), reverse=True)
        page.locator("#v-board th").nth(8).click()  # again: lowest first
        assert page.locator("#v-board th").nth(8).inner_text() == "judge ▲"
        assert means() == sorted(means())
        page.click("nav button[data-view='matrix']")
        assert len(_rows(page)) == 100 and "150 of 150" in page.inner_text("#m-count")
        page.locator("#m-more").scroll_into_view_if_needed()
        page.wait_for_function("document.querySelectorAll('#m-body tr').length === 150")
        assert page.is_hidden("#m-more") and page.errors == []
