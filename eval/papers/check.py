"""Check published numbers against the papers' text extractions (``shared/papers/``).

Each table names the block of the extraction it comes from (``source.anchor`` .. ``source.end``,
the anchor occurring exactly once) and how that block is laid out (``tsv``: tab-separated lines;
``markdown``: pipe tables; ``html``: ``<table>`` with row/col spans; ``text``: prose). For tables,
each value is looked up at its row (``source_label``, after ``source_after`` if given) and column
(``source_col``, with ``source_head`` checked against the header cells) and must be among the
numbers printed there; ``transposed`` tables swap the roles. For prose, the cell's ``quote`` must
be in the block and contain the value. ``paper_n`` must occur in the paper. The command also
checks the names against the harness (``published_names``).

    memharness papers-check [--papers DIR]
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from memharness.eval.papers.load import load_all
from memharness.eval.papers.names import harness_problems
from memharness.eval.papers.store import Cell, Paper, Table

NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?")
WORDS = {"an": 1, "a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "ten": 10}


def papers_candidates() -> list[Path]:
    """Where the paper texts are looked for: ``$MEMHARNESS_PAPERS``, else ``shared/papers`` in the
    repository's folder or one of the three above it (the lead's checkout has ``../shared/papers``)."""
    env = os.environ.get("MEMHARNESS_PAPERS")
    if env:
        return [Path(env)]
    root = Path(__file__).resolve().parents[2]
    return [base / "shared" / "papers" for base in [root, *root.parents[:3]]]


def papers_folder() -> Path | None:
    """The first candidate folder that exists, or None."""
    return next((p for p in papers_candidates() if p.is_dir()), None)


def numbers_in(text: str) -> list[float]:
    """Every number printed in ``text`` ("3,164" -> 3164.0; "−2.3" -> -2.3)."""
    return [float(m.replace(",", "").replace("−", "-")) for m in NUMBER.findall(text)]


def squash(text: str) -> str:
    return " ".join(text.split())


def block(text: str, source: dict[str, Any]) -> str:
    """The part of the extraction a table comes from: its anchor (unique) up to its end marker."""
    anchor, end = source["anchor"], source["end"]
    count = text.count(anchor)
    if count != 1:
        raise LookupError(f"anchor {anchor!r} occurs {count} times in the paper (needs exactly 1)")
    start = text.index(anchor)
    stop = text.find(end, start + len(anchor))
    if stop < 0:
        raise LookupError(f"end marker {end!r} not found after anchor {anchor!r}")
    return text[start : stop + len(end)]


class _Grid(HTMLParser):
    """Rows of (text, rowspan, colspan) from the first <table> of a block."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, int, int]]] = []
        self._cell: list[str] | None = None
        self._spans = (1, 1)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            a = dict(attrs)
            self._cell, self._spans = [], (int(a.get("rowspan") or 1), int(a.get("colspan") or 1))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append((squash("".join(self._cell)), *self._spans))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def html_grid(text: str) -> list[list[str]]:
    """The table as a rectangular grid, each spanned cell repeated over the positions it covers."""
    start, stop = text.find("<table"), text.find("</table>")
    if start < 0 or stop < 0:
        raise LookupError("no <table> ... </table> in the block")
    parser = _Grid()
    parser.feed(text[start : stop + len("</table>")])
    grid: dict[tuple[int, int], str] = {}
    for r, cells in enumerate(parser.rows):
        c = 0
        for content, rowspan, colspan in cells:
            while (r, c) in grid:
                c += 1
            for dr in range(rowspan):
                for dc in range(colspan):
                    grid[(r + dr, c + dc)] = content
            c += colspan
    width = max((c for _, c in grid), default=-1) + 1
    return [[grid.get((r, c), "") for c in range(width)] for r in range(len(parser.rows))]


def text_rows(text: str, fmt: str) -> list[list[str]]:
    """Lines of a tsv or markdown block as lists of stripped cells (markdown rulers dropped)."""
    rows = []
    for line in text.splitlines():
        if fmt == "tsv":
            rows.append([c.strip() for c in line.split("\t")])
        elif line.strip().startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-", ":"} for c in cells):
                rows.append(cells)
    return rows


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(r"[-+−]?\d[\d,]*(?:\.\d+)?", text.strip()))


def find_row(rows: list[list[str]], label: Any, after: str | None, fmt: str) -> int:
    """Index of the row whose label cells match (the first after ``after``; else it must be unique)."""
    labels = _as_list(label)
    start = 0
    if after is not None:
        start = next((i for i, r in enumerate(rows) if any(after in c for c in r)), None)
        if start is None:
            raise LookupError(f"section marker {after!r} not found")
    hits = []
    for i in range(start, len(rows)):
        cells = rows[i]
        if fmt == "html":
            first_value = next(
                (j for j, c in enumerate(cells) if _is_number(c) or c == "-"), len(cells)
            )
            ok = all(lab in cells[:first_value] for lab in labels)
        else:
            ok = cells[: len(labels)] == labels
        if ok:
            hits.append(i)
    if not hits:
        raise LookupError(f"no row labelled {labels}" + (f" after {after!r}" if after else ""))
    if after is None and len(hits) > 1:
        raise LookupError(f"{len(hits)} rows labelled {labels}; give source_after to pick one")
    return hits[0]


def check_head(rows: list[list[str]], col: int, head: Any, fmt: str, body_start: int) -> list[str]:
    """Each header text must sit in column ``col`` of a header row (html: exact; tsv/markdown: contained)."""
    header = rows[:body_start] if fmt == "html" else rows
    problems = []
    for text in _as_list(head):
        cells = [r[col] for r in header if col < len(r)]
        if not any((c == text) if fmt == "html" else (text in c) for c in cells):
            problems.append(f"column {col} has no header {text!r} (header cells there: {cells})")
    return problems


def _value_matches(cell: Cell, printed: list[float]) -> list[str]:
    missing = [v for v in cell.numbers() if not any(abs(v - p) < 1e-9 for p in printed)]
    return [f"value(s) {missing} not among the numbers printed there {printed}"] if missing else []


def check_table_cell(cell: Cell, table: Table, rows: list[list[str]], fmt: str) -> list[str]:
    """Locate one cell in a tsv / markdown / html block and compare the printed numbers."""
    row, col = table.row(cell.row), table.column(cell.column)
    labelled, indexed = (col, row) if table.source.get("transposed") else (row, col)
    if "source_label" not in labelled.locate or "source_col" not in indexed.locate:
        return ["no source_label / source_col to locate it"]
    i = find_row(rows, labelled.locate["source_label"], labelled.locate.get("source_after"), fmt)
    j = int(indexed.locate["source_col"])
    if j >= len(rows[i]):
        return [f"row {i} of the block has only {len(rows[i])} cells, wanted index {j}"]
    problems = []
    if "source_head" in indexed.locate:
        body = next((k for k, r in enumerate(rows) if any(_is_number(c) for c in r)), len(rows))
        problems += check_head(rows, j, indexed.locate["source_head"], fmt, body)
    printed = numbers_in(rows[i][j])
    if cell.value is None and cell.low is None:
        return problems + (
            [f"published as empty, but the paper prints {rows[i][j]!r}"] if printed else []
        )
    return problems + _value_matches(cell, printed)


def check_prose_cell(cell: Cell, text: str) -> list[str]:
    """The cell's quote must be in the block and state the value."""
    if not cell.numbers():
        return (
            []
            if not cell.quote or squash(cell.quote) in squash(text)
            else [f"quote not in block: {cell.quote!r}"]
        )
    if not cell.quote:
        return ["a value from prose has no quote"]
    if squash(cell.quote) not in squash(text):
        return [f"quote not in block: {cell.quote!r}"]
    if cell.value_text is not None:
        if cell.value_text not in cell.quote:
            return [f"value_text {cell.value_text!r} not in the quote"]
        spelled = WORDS.get(cell.value_text.split()[0].lower())
        if spelled is not None and spelled != cell.value:
            return [f"value_text {cell.value_text!r} says {spelled}, the cell says {cell.value}"]
        if spelled is not None:
            return []
    return _value_matches(cell, numbers_in(cell.quote))


def check_table(table: Table, text: str) -> list[str]:
    """Problems with one table's cells against the paper text (empty = every value checked)."""
    fmt = table.source["format"]
    try:
        part = block(text, table.source)
        rows = html_grid(part) if fmt == "html" else text_rows(part, fmt) if fmt != "text" else []
    except LookupError as err:
        return [f"table {table.id}: {err}"]
    problems = []
    for cell in table.cells.values():
        try:
            found = (
                check_prose_cell(cell, part)
                if fmt == "text"
                else check_table_cell(cell, table, rows, fmt)
            )
            if fmt != "text" and cell.quote:
                found += check_prose_cell(cell, part)
        except LookupError as err:
            found = [str(err)]
        problems += [f"table {table.id} cell {cell.row}/{cell.column}: {p}" for p in found]
    return problems


def check_paper(paper: Paper, folder: Path) -> list[str]:
    """Every problem found in one paper's file, against its extraction in ``folder``."""
    source = folder / paper.source
    if not source.is_file():
        return [f"{paper.key}: source text {source} not found"]
    text = source.read_text(encoding="utf-8")
    problems = [p for t in paper.tables for p in check_table(t, text)]
    printed = numbers_in(text)
    for table in paper.tables:
        for col in table.columns:
            if col.paper_n is not None and float(col.paper_n) not in printed:
                problems.append(
                    f"table {table.id} column {col.id}: paper_n {col.paper_n} is not printed in the paper"
                )
    return [f"{paper.path.name}: {p}" for p in problems]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--papers", type=Path, default=None, help="folder of the text extractions")
    args = parser.parse_args(argv)
    folder = args.papers or papers_folder()
    if folder is None or not folder.is_dir():
        raise SystemExit(
            f"error: no papers folder (set --papers or MEMHARNESS_PAPERS); looked in "
            f"{[str(p) for p in papers_candidates()]}"
        )
    problems = []
    for paper in load_all():
        found = check_paper(paper, folder) + harness_problems(paper)
        print(
            f"{paper.key}: {len(paper.cells())} cells, {'ok' if not found else f'{len(found)} problems'}"
        )
        problems += found
    for p in problems:
        print(f"  {p}")
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
