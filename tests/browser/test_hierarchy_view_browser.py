"""The hierarchy HTML view as a person sees it, in headless Chromium: tree, search, highlighted retrievals."""

from __future__ import annotations

import pytest
from browser import browser_page
from hierarchy_fakes import build_dag
from memharness.memsys.hierarchy.view import render_html
from memtree_fakes import make_tree, unit

TABLE = {
    "a1": [1, 0, 0, 0],
    "a2": [1, 0.2, 0, 0],
    "a3": [1, 0, 0.3, 0],
    "b": [0, 1, 0, 0],
    "c": [0.6, 0, 0, 0.8],
    "d": [0, 0, 0, 1],
}


def _shown(page) -> list[int]:
    return sorted(
        {int(x) for x in page.eval_on_selector_all(".node", "els => els.map(e => e.dataset.i)")}
    )


def test_memtree_view_search_and_highlight(tmp_path):
    tree = make_tree(TABLE, top_k=2)
    for i, t in enumerate(["a1", "a2", "b", "a3", "d"]):
        tree.insert_unit(unit(t, i))
    first = tree.search("a3", 100)
    tree.search("d", 100)
    tree.save(tmp_path)
    hits = {tree.ids.index(i.node_id) for i in first}
    assert any(
        tree.store.levels[v] == 0 and tree.depth[v] >= 2 for v in hits
    )  # a deep node must be revealed
    with browser_page() as page:
        page.goto((tmp_path / "view.html").as_uri())
        assert _shown(page) == sorted(tree.children[0])  # only the root's children at first
        page.fill("#search", "a3")
        matches = page.eval_on_selector_all("#results li", "els => els.map(e => +e.dataset.i)")
        assert sorted(matches) == sorted(v for v in range(1, tree.n_nodes) if "a3" in tree.texts[v])
        assert "match" in page.inner_text("#nres")
        page.click(f"#results li[data-i='{matches[-1]}']")
        focused = page.eval_on_selector_all(".focus", "els => els.map(e => +e.dataset.i)")
        assert focused == [matches[-1]] and page.is_visible(".focus > .row")
        page.select_option("#question", "0")  # the first question: "a3"
        lit = set(page.eval_on_selector_all(".hit", "els => els.map(e => +e.dataset.i)"))
        assert lit == hits
        assert all(page.is_visible(f".hit[data-i='{v}'] > .row") for v in hits)
        listed = page.eval_on_selector_all("#retrieved li", "els => els.map(e => +e.dataset.i)")
        assert listed == [tree.ids.index(i.node_id) for i in first]
        page.select_option("#question", "1")  # switching questions moves the highlight
        assert set(page.eval_on_selector_all(".hit", "els => els.map(e => +e.dataset.i)")) != lit
        assert page.errors == []


def test_dag_view_shows_several_parents_and_unreachable_tops():
    store, idx = build_dag()
    retrievals = [{"question": "b?", "nodes": [idx["b"]], "scores": [0.9]}]
    with browser_page() as page:
        page.set_content(render_html(store, title="dag", retrievals=retrievals))
        assert _shown(page) == sorted(
            [idx["T"], idx["R"]]
        )  # R has no parent: it is shown at the top too
        page.select_option("#question", "0")
        assert page.eval_on_selector_all(".hit", "els => els.map(e => +e.dataset.i)") == [idx["b"]]
        assert "2 parents" in page.inner_text(f".hit[data-i='{idx['b']}'] > .row")
        # b sits under P and under Q: expanding Q shows it a second time
        page.click(f".node[data-i='{idx['Q']}'] > .row")
        assert page.eval_on_selector_all(f".node[data-i='{idx['b']}']", "els => els.length") == 2
        assert page.errors == []


@pytest.mark.parametrize(
    "query,expected", [("bananas", ["b"]), ("FRUIT", ["P", "Q", "T"]), ("zzz", [])]
)
def test_search_is_case_insensitive_over_all_nodes(query, expected):
    store, idx = build_dag()
    with browser_page() as page:
        page.set_content(render_html(store))
        page.fill("#search", query)
        got = page.eval_on_selector_all("#results li", "els => els.map(e => +e.dataset.i)")
        assert sorted(got) == sorted(idx[n] for n in expected)
