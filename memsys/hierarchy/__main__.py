"""Query a saved hierarchical memory, or re-render its view, without rebuilding it.

    memharness hierarchy FOLDER [--html out.html] [--ask "question"] [--budget 1000]

FOLDER is a saved memory (hierarchy.json + embeddings.npy, e.g. ``<run>/memory/<episode>``); the
question is embedded with the embedded default embedder. A folder that is not a saved memory, a
damaged file in it or an output that cannot be written is one ``error:`` line (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memharness.memsys.hierarchy.memory import load_memory
from memharness.memsys.hierarchy.view import render_html
from memharness.memsys.services import files as fileio
from memharness.memsys.services.tokens import get_tokenizer


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def load_or_fail(folder: str, **services: Any) -> Any:
    """The saved memory in ``folder``, or a one-line error naming the folder or file."""
    try:
        return load_memory(folder, **services)
    except FileNotFoundError as err:
        fail(str(err))
    except json.JSONDecodeError as err:
        fail(f"{Path(folder) / 'hierarchy.json'}: not valid JSON ({err.msg}, line {err.lineno})")
    except (KeyError, TypeError, ValueError, AttributeError, ImportError, OSError) as err:
        reason = " ".join(f"{type(err).__name__}: {err}".split())[:300]
        fail(f"{folder}: not a readable saved hierarchical memory ({reason})")


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
    if args.budget < 1:
        ap.error(f"--budget must be at least 1 token, got {args.budget}")
    if args.ask and embedder is None:
        from memharness.memsys.services.backends.local import SentenceTransformerBackend
        from memharness.memsys.services.embed import Embedder

        embedder = Embedder(SentenceTransformerBackend())
    memory = load_or_fail(args.folder, embedder=embedder, tokenizer=get_tokenizer())
    if args.html:
        try:
            fileio.write_text(
                Path(args.html),
                render_html(memory.store, retrievals=memory.retrievals),
            )
        except OSError as err:
            fail(f"--html {args.html}: cannot be written ({err.strerror or err})")
        print(f"wrote {args.html}")
    for q in args.ask:
        print(f"Q: {q}")
        for item in memory.search(q, args.budget):
            print(f"  [{item.score:.3f} L{item.level} {item.node_id}] {item.text[:160]!r}")


if __name__ == "__main__":
    main()
