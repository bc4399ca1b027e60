"""Query a saved hierarchical memory, or re-render its view, without rebuilding it.

    memharness hierarchy FOLDER [--html out.html] [--ask "question"] [--budget 1000]

FOLDER is a saved memory (hierarchy.json + embeddings.npy, e.g. ``<run>/memory/<episode>``); the
question is embedded with the embedded default embedder.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from memharness.memsys.hierarchy.memory import load_memory
from memharness.memsys.hierarchy.view import render_html
from memharness.memsys.services import files as fileio
from memharness.memsys.services.tokens import get_tokenizer


def main(argv: list[str] | None = None, embedder=None) -> None:
    """``embedder``: used for ``--ask`` (None = the embedded sentence-transformers default)."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("folder", help="a saved memory (hierarchy.json + embeddings.npy)")
    ap.add_argument("--html", help="write the HTML view here")
    ap.add_argument(
        "--ask", action="append", default=[], help="retrieve for this question (repeatable)"
    )
    ap.add_argument("--budget", type=int, default=1000, help="token budget of each retrieval")
    args = ap.parse_args(argv)
    if args.ask and embedder is None:
        from memharness.memsys.services.backends.local import SentenceTransformerBackend
        from memharness.memsys.services.embed import Embedder

        embedder = Embedder(SentenceTransformerBackend())
    memory = load_memory(args.folder, embedder=embedder, tokenizer=get_tokenizer())
    if args.html:
        fileio.write_text(
            Path(args.html),
            render_html(memory.store, retrievals=memory.retrievals),
        )
        print(f"wrote {args.html}")
    for q in args.ask:
        print(f"Q: {q}")
        for item in memory.search(q, args.budget):
            print(f"  [{item.score:.3f} L{item.level} {item.node_id}] {item.text[:160]!r}")


if __name__ == "__main__":
    main()
