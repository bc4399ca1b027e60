"""The text formats the harness writes for people: one HTML page shell, one LaTeX escaper and
one markdown cell escaper, shared by the hierarchy viewer, the run browser and every table."""

from __future__ import annotations

import html
from typing import Any

from memharness.memsys.services.files import json_text

_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "±": r"$\pm$",
    "≈": r"$\approx$",
    "−": "--",
    "–": "--",
    "—": "---",
    "θ": r"$\theta$",
    "λ": r"$\lambda$",
    "Δ": r"$\Delta$",
    "κ": r"$\kappa$",
    "×": r"$\times$",
    "✓": r"$\checkmark$",
    "✗": r"$\times$",
    "⚑": r"$^\dagger$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "’": "'",
    "·": r"$\cdot$",
}


def latex_escape(text: Any) -> str:
    """Text safe inside a LaTeX tabular: specials escaped, the symbols the tables use as math
    (needs ``\\usepackage{amssymb}`` for the check mark)."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text))


def markdown_cell(text: Any) -> str:
    """Text safe inside a markdown table cell."""
    return str(text).replace("|", "\\|")


def html_page(title: str, style: str, body: str, data: Any, script: str) -> str:
    """A self-contained page: inline CSS, the body, the data as a JSON block (``#data``) and the
    script that renders it. ``title`` is escaped; ``body`` is trusted markup."""
    # <, > and & only occur inside JSON strings, where \uXXXX means the same character: no text
    # (</script>, <!--<script, ...) can then end or change the script element that holds it.
    blob = (
        json_text(data, title, ensure_ascii=False, separators=(",", ":"))  # compact: pages grow big
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{body}"
        f"<script type='application/json' id='data'>{blob}</script><script>{script}</script>"
        "</body></html>"
    )
