"""Save / load a MemTree (tree.json + embeddings.npy) and render it as self-contained HTML.

``python -m memsys.memtree_view <folder with tree.json> [--html out.html] [--ask "question"]``
re-renders the view or answers retrieval queries from a saved tree without rebuilding it
(the embedder is the embedded default unless ``--fake-embedder`` is given, for tests).
"""
from __future__ import annotations

import argparse
import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .memtree import MemTree

FORMAT = "memharness.memtree/1"
_HYPERPARAMETERS = ("base_threshold", "rate", "threshold_form", "max_depth", "aggregate_count",
                    "aggregate_max_tokens", "parallel_updates", "retrieval", "top_k", "retrieve_threshold",
                    "insert_order_seed", "aggregate_prompt")


def tree_to_json(tree: "MemTree") -> dict[str, Any]:
    """The tree as a JSON-ready dict (embeddings go to a separate .npy)."""
    nodes = [{"id": tree.ids[v], "parent": tree.parent[v], "depth": tree.depth[v], "text": tree.texts[v],
              "unit": tree.leaf_unit[v], "n_units": tree.n_units[v], "children": tree.children[v]}
             for v in range(tree.n_nodes)]
    return {"format": FORMAT, "hyperparameters": {k: getattr(tree, k) for k in _HYPERPARAMETERS},
            "units": [u.id for u in tree.units], "insertions": tree.insertions,
            "aggregation_failures": tree.aggregation_failures, "nodes": nodes}


def save_tree(tree: "MemTree", out_dir: str | Path) -> None:
    """Write ``tree.json``, ``embeddings.npy`` and ``tree.html`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tree.json").write_text(json.dumps(tree_to_json(tree), ensure_ascii=False), encoding="utf-8")
    np.save(out / "embeddings.npy", tree.embeddings)
    (out / "tree.html").write_text(render_html(tree), encoding="utf-8")


def load_tree(cls: type, in_dir: str | Path, llm: Any = None, embedder: Any = None, tokenizer: Any = None,
              **overrides: Any) -> "MemTree":
    """Rebuild a tree saved by ``save_tree``; missing embeddings are recomputed with ``embedder``."""
    folder = Path(in_dir)
    data = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{folder / 'tree.json'} is not a {FORMAT} file")
    params = {**data["hyperparameters"], **overrides}
    tree = cls(llm=llm, embedder=embedder, tokenizer=tokenizer, **params)
    nodes = data["nodes"]
    npy = folder / "embeddings.npy"
    if npy.exists():
        emb = np.load(npy)
    else:
        emb = np.vstack([np.zeros((1, embedder.embed(["x"]).shape[1]), np.float32),
                         embedder.embed([n["text"] for n in nodes[1:]])])
    tree.ids = [n["id"] for n in nodes]
    tree.texts = [n["text"] for n in nodes]
    tree.parent = [n["parent"] for n in nodes]
    tree.depth = [n["depth"] for n in nodes]
    tree.children = [list(n["children"]) for n in nodes]
    tree.leaf_unit = [n["unit"] for n in nodes]
    tree.n_units = [n["n_units"] for n in nodes]
    tree._tokens = [None] * len(nodes)
    tree.height = [0] * len(nodes)
    for v in range(len(nodes)):
        if not tree.children[v] and v != 0:
            tree._raise_heights(v)
    tree._emb = np.ascontiguousarray(emb, dtype=np.float32)
    tree.tree_max_depth = max(tree.depth)
    tree.insertions = list(data.get("insertions", []))
    tree.aggregation_failures = int(data.get("aggregation_failures", 0))
    return tree


def _node_html(tree: "MemTree", v: int, budget: list[int], preview: int) -> str:
    budget[0] -= 1
    text = tree.texts[v]
    kids = tree.children[v]
    label = "root" if v == 0 else f"d={tree.depth[v]} · {len(kids)} children · {tree.n_units[v]} units"
    snippet = html.escape(text[:preview] + ("…" if len(text) > preview else ""))
    head = f'<span class="meta">{html.escape(label)}</span> {snippet}'
    body = f'<div class="full">{html.escape(text)}</div>' if text else ""
    if not kids:
        return f'<div class="leaf">{head}{body}</div>'
    inner = []
    for c in kids:
        if budget[0] <= 0:
            inner.append('<div class="leaf meta">… (truncated: html_max_nodes reached)</div>')
            break
        inner.append(_node_html(tree, c, budget, preview))
    opened = " open" if v == 0 else ""
    return f"<details{opened}><summary>{head}</summary>{body}{''.join(inner)}</details>"


def render_html(tree: "MemTree", preview: int = 120) -> str:
    """A self-contained page of nested ``<details>`` (no scripts, no server)."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * tree.tree_max_depth + 200))
    try:
        body = _node_html(tree, 0, [tree.html_max_nodes], preview)
    finally:
        sys.setrecursionlimit(limit)
    style = ("body{font-family:sans-serif;font-size:14px} details{margin-left:1.2em;border-left:1px solid #ccc;"
             "padding-left:.4em} .leaf{margin-left:1.2em;padding:.1em 0} .meta{color:#666;font-size:12px}"
             " .full{white-space:pre-wrap;background:#f6f6f6;margin:.2em 0;padding:.3em;font-size:12px}")
    title = f"MemTree: {tree.n_nodes - 1} nodes, max depth {tree.tree_max_depth}"
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title><style>{style}</style>"
            f"</head><body><h3>{title}</h3>{body}</body></html>")


def main(argv: list[str] | None = None) -> None:
    from .memtree import MemTree
    from .tokens import get_tokenizer

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder")
    ap.add_argument("--html", help="write the HTML view here")
    ap.add_argument("--ask", action="append", default=[], help="retrieve for this question (repeatable)")
    ap.add_argument("--budget", type=int, default=1000)
    args = ap.parse_args(argv)
    embedder = None
    if args.ask:
        from .backends.embed import Embedder
        from .backends.local import SentenceTransformerBackend

        embedder = Embedder(SentenceTransformerBackend())
    tree = MemTree.load(args.folder, embedder=embedder, tokenizer=get_tokenizer())
    if args.html:
        Path(args.html).write_text(render_html(tree), encoding="utf-8")
        print(f"wrote {args.html}")
    for q in args.ask:
        print(f"Q: {q}")
        for item in tree.search(q, args.budget):
            print(f"  [{item.score:.3f} h={item.level} {item.node_id}] {item.text[:160]!r}")


if __name__ == "__main__":
    main()
