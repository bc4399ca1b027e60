"""The results explorer: one self-contained HTML page over run folders (no server, no network, no
CDN; it opens from ``file://`` or any static host).

    memharness browse results/sweeps/<time> --out results/tables/browser.html

Views (each has a link: the URL fragment selects it, so a link can be pasted into a review):

- ``#board``: the leaderboard, one row per run grouped by question set: headline metrics with
  their CIs, n, failures, judge reliability, cost and latency; sortable by any column.
- ``#matrix``: questions x systems, each cell the verdict (its answer as tooltip); filters for
  dataset, category, systems disagree, all wrong, judges disagree, failed, degraded and
  injection-flagged, and a search over the question text. Rows are rendered as the reader scrolls.
- ``#q=<question id>&a=<run>&b=<run>``: one question side by side: the question, its date,
  references and options, then each system's answer, every judge's verdict and reply, the
  retrieved items with their provenance (items over gold evidence highlighted, the gold units in
  bold), context tokens, the prompt on demand and a link to the memory's saved view.
- ``#h2h&a=<run>&b=<run>``: A against B: wins, ties and losses with the paired test's p, overall
  and per category, and the questions where they differ.
- ``#diff&a=<run>&b=<run>``: two runs of one system: the questions whose verdict flipped.

Long retrieved texts and prompts are cut (``--max-chars``, ``--max-prompt-chars``); the run folder
keeps them whole.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from memharness.eval.record.read import ReportError
from memharness.eval.report.explorer_data import Limits, explorer_data
from memharness.memsys.services import files as fileio
from memharness.memsys.services.formats import html_page

_BODY = """
<header><h3 id='title'></h3><nav>
<button data-view='board'>Leaderboard</button><button data-view='matrix'>Matrix</button>
<button data-view='h2h'>Head-to-head</button><button data-view='diff'>Run diff</button></nav></header>
<section id='v-board'></section>
<section id='v-matrix' hidden><div class='bar'>
<select id='f-dataset'><option value=''>every dataset</option></select>
<select id='f-cat'><option value=''>every category</option></select>
<input id='f-search' placeholder='search question text'>
<label><input type='checkbox' id='f-disagree'> systems disagree</label>
<label><input type='checkbox' id='f-allwrong'> all wrong</label>
<label><input type='checkbox' id='f-judges'> judges disagree</label>
<label><input type='checkbox' id='f-failed'> failed</label>
<label><input type='checkbox' id='f-degraded'> degraded</label>
<label><input type='checkbox' id='f-injection'> injection-flagged</label>
<span id='m-count' class='meta'></span></div>
<table id='matrix'><thead><tr id='m-head'></tr></thead><tbody id='m-body'></tbody></table>
<button id='m-more'>more rows</button></section>
<section id='v-question' hidden><div class='bar'>A <select id='q-a'></select>
B <select id='q-b'></select></div><div id='q-out'></div></section>
<section id='v-h2h' hidden><div class='bar'>A <select id='h-a'></select> B <select id='h-b'></select></div>
<div id='h-out'></div></section>
<section id='v-diff' hidden><div class='bar'>before <select id='d-a'></select> after
<select id='d-b'></select></div><div id='d-out'></div></section>
"""


def _asset(name: str) -> str:
    return (resources.files("memharness.eval.report") / name).read_text(encoding="utf-8")


def render(data: dict[str, Any]) -> str:
    """The page: the explorer's markup, style and script with ``data`` as its JSON block."""
    return html_page(data["title"], _asset("explorer.css"), _BODY, data, _asset("explorer.js"))


def write_browser(
    paths: Sequence[str | Path],
    out: Path,
    max_chars: int = 1500,
    max_prompt_chars: int = 4000,
    title: str = "memharness results",
) -> Path:
    """Write the explorer over every run under ``paths`` to ``out``."""
    limits = Limits(item_chars=max_chars, prompt_chars=max_prompt_chars)
    data = explorer_data(paths, out, limits, title)
    out.parent.mkdir(parents=True, exist_ok=True)
    fileio.write_text(out, render(data))
    return out


def main(argv: Sequence[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "runs",
        nargs="*",
        default=["results/runs", "results/sweeps"],
        help="run folders, sweep folders, or folders holding them",
    )
    ap.add_argument("--out", type=Path, default=Path("results/tables/browser.html"))
    ap.add_argument(
        "--max-chars", type=int, default=1500, help="cut retrieved texts longer than this"
    )
    ap.add_argument(
        "--max-prompt-chars",
        type=int,
        default=4000,
        help="cut each stretch of an answer prompt between retrieved items longer than this",
    )
    args = ap.parse_args(argv)
    try:
        path = write_browser(
            [p for p in args.runs if Path(p).exists()] or args.runs,
            args.out,
            args.max_chars,
            args.max_prompt_chars,
        )
    except ReportError as err:
        raise SystemExit(f"error: {err}") from None
    print(f"browser: {path}")
    return path


if __name__ == "__main__":
    main()
