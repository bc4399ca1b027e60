"""Read MemTree trees saved before the hierarchy core (``tree.json``, format memharness.memtree/1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from memharness.memsys.hierarchy.store import HierarchyStore

FORMAT = "memharness.memtree/1"
_RENAMED = {"retrieval": "traversal"}
_DROPPED = ("revenue_exact_max_leaves", "revenue_samples")


def is_legacy(folder: str | Path) -> bool:
    folder = Path(folder)
    return (folder / "tree.json").is_file() and not (folder / "hierarchy.json").is_file()


def load_legacy(
    cls: type,
    folder: str | Path,
    llm: Any = None,
    embedder: Any = None,
    tokenizer: Any = None,
    **overrides: Any,
) -> Any:
    """Convert a memharness.memtree/1 tree into a MemTree on the core (same nodes, ids, texts, order)."""
    folder = Path(folder)
    data = json.loads((folder / "tree.json").read_text(encoding="utf-8"))
    if data.get("format") != FORMAT:
        raise ValueError(f"{folder / 'tree.json'} is not a {FORMAT} file")
    params = {
        _RENAMED.get(k, k): v for k, v in data["hyperparameters"].items() if k not in _DROPPED
    }
    if params.get("traversal") == "traversal":
        params["traversal"] = "top_down"
    tree = cls(llm=llm, embedder=embedder, tokenizer=tokenizer, **{**params, **overrides})
    nodes = data["nodes"]
    npy = folder / "embeddings.npy"
    emb = (
        np.load(npy)
        if npy.exists()
        else np.vstack(
            [
                np.zeros((1, embedder.embed(["x"]).shape[1]), np.float32),
                embedder.embed([n["text"] for n in nodes[1:]]),
            ]
        )
    )
    store = HierarchyStore(with_root=False)
    for v, n in enumerate(nodes):
        store.add_node(
            n["id"],
            n["text"],
            np.asarray(emb[v], np.float32),
            0,
            units=(n["unit"],) if n["unit"] else (),
        )
    for v, n in enumerate(nodes):
        for c in n["children"]:
            store.link(v, c)
    store.root = 0
    tree.store = store
    tree.depth = [n["depth"] for n in nodes]
    tree.n_units = [n["n_units"] for n in nodes]
    tree.tree_max_depth = max(tree.depth)
    for v in store.leaves():
        tree._raise_heights(v)
    tree.insertions = list(data.get("insertions", []))
    tree.aggregation_failures = int(data.get("aggregation_failures", 0))
    tree.degrade("aggregation_failed", tree.aggregation_failures)
    return tree
