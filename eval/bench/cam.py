"""CAM construction benchmark with stub backends (no model, no network).

    memharness bench cam        (or `make bench`)

A stub LLM answers every call after ``LATENCY_S`` (``MAX_IN_FLIGHT`` calls at once, as the
harness's LLM wrapper sends them); stub embeddings put each chunk near the centre of its topic,
topics running in segments of a few chunks as in a book. Memories are built from the project's
configs (``conf/memory/<name>.yaml``, code defaults), so the figures are for CAM as it ships.

1. ``online_vs_rebuild``: a 2,000-chunk CAM receives a batch of 100. LLM calls and wall time of
   the online update vs a full offline rebuild of all 2,100 chunks, and their ratio beside the
   paper's "over 4x faster" (Sec. 5.3, which compares with RAPTOR / GraphRAG rebuilds); node
   counts per level and level-1 W-coherence of both memories show how close the update stays.
2. ``batch_curve``: from the same 2,000-chunk base, one batch of b chunks for each b in
   ``BATCH_SIZES``, for every system in ``SYSTEMS``: seconds and LLM calls per batch, plotted in
   ``results/bench/cam_batches.png`` (Fig. 3a's layout). RAPTOR and GraphRAG-lite are one line
   each in ``SYSTEMS`` once their configs exist (``rebuild("raptor")``, ``rebuild("graphrag")``).
Wall-clock figures measured on a shared machine are provisional.
"""

from __future__ import annotations

import atexit
import hashlib
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
from memharness.eval.bench import CONF
from memharness.memsys.hierarchy import load_memory
from memharness.memsys.hierarchy.diagnostics import coherence, level_profile
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.testing.doubles import ScriptedChat, TopicEmbedder
from memharness.memsys.types import Unit, content_id

DIM, TOPICS = 384, 40
LATENCY_S, MAX_IN_FLIGHT = 0.02, 8
BASE, BATCH, BATCH_SIZES = 2000, 100, (50, 100, 200, 400, 800)
PAPER_CLAIM = 4.0


def tag_summary(request: Any) -> str:
    """A summary naming the most frequent topic tag (c<k>) of the prompt."""
    prompt = request.messages[-1][1]
    tags = Counter(re.findall(r"\bc\d+\b", prompt))
    tag = tags.most_common(1)[0][0] if tags else "c0"
    return f"summary about {tag} {hashlib.md5(prompt.encode()).hexdigest()[:8]}"


def chunks(n: int, start: int = 0) -> list[Unit]:
    """Chunks of a stub book: topics in segments of 3-12 chunks (the same topic recurs later)."""
    rng = np.random.default_rng(7)
    topics: list[int] = []
    while len(topics) < start + n:
        topics += [int(rng.integers(TOPICS))] * int(rng.integers(3, 13))
    return [
        Unit(
            id=content_id("bench-cam", i, prefix="u-"),
            text=f"chunk {i} about c{topics[i]}",
            source_id="book",
            position=i,
        )
        for i in range(start, start + n)
    ]


def services(latency_s: float) -> SimpleNamespace:
    """The stub LLM (tag summaries after ``latency_s``) and the topic embeddings (cosine ~0.92 within a
    topic)."""
    chat = ScriptedChat(reply=tag_summary, latency_s=latency_s, model_id="stub-chat", log=False)
    llm = LLM(chat, max_in_flight=MAX_IN_FLIGHT, progress=False)
    embed = TopicEmbedder(TOPICS, DIM, spread=3.5, normalise=True, model_id="stub-embed")
    return SimpleNamespace(llm=llm, embedder=Embedder(embed), tokenizer=get_tokenizer())


def make_memory(name: str, svc: SimpleNamespace, **overrides: Any) -> Any:
    """The memory of ``conf/memory/<name>.yaml`` (resolved in the full config), with overrides."""
    from hydra import compose, initialize_config_dir
    from memharness.eval.run.runner import build_memory

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=[f"memory={name}", "dataset=novelqa"]
            + [f"memory.{k}={v}" for k, v in overrides.items()],
        )
    return build_memory(cfg, svc)


def calls(svc: SimpleNamespace) -> int:
    t = svc.llm.meter.totals()
    return t.calls + t.cache_hits


Trial = Callable[[list[Unit], list[Unit]], dict[str, Any]]


def online(name: str, **overrides: Any) -> Trial:
    """An online system: the base is built once with a zero-latency stub and saved; each trial loads
    it and times inserting the batch with the stub's latency."""
    folder = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    built: dict[int, Path] = {}

    def trial(base: list[Unit], batch: list[Unit]) -> dict[str, Any]:
        if len(base) not in built:
            svc = services(0.0)
            memory = make_memory(name, svc, **overrides)
            memory.insert(base)
            memory.save(folder / str(len(base)))
            svc.llm.close()
            built[len(base)] = folder / str(len(base))
        svc = services(LATENCY_S)
        memory = load_memory(
            built[len(base)], llm=svc.llm, embedder=svc.embedder, tokenizer=svc.tokenizer
        )
        start = time.perf_counter()
        memory.insert(batch)
        memory.ensure_built()
        out = {"seconds": time.perf_counter() - start, "llm_calls": calls(svc), "memory": memory}
        svc.llm.close()
        return out

    return trial


def rebuild(name: str, **overrides: Any) -> Trial:
    """An offline rebuild: everything so far (base + batch) built from scratch with the stub's latency."""

    def trial(base: list[Unit], batch: list[Unit]) -> dict[str, Any]:
        svc = services(LATENCY_S)
        memory = make_memory(name, svc, **overrides)
        start = time.perf_counter()
        memory.insert(base + batch)
        memory.ensure_built()
        out = {"seconds": time.perf_counter() - start, "llm_calls": calls(svc), "memory": memory}
        svc.llm.close()
        return out

    return trial


SYSTEMS: dict[str, Callable[[], Trial]] = {
    "CAM online": lambda: online("cam"),
    "CAM offline rebuild": lambda: rebuild("cam", construction="offline"),
    "MemTree (sequential)": lambda: online("memtree"),
    # "RAPTOR rebuild": lambda: rebuild("raptor"),
    # "GraphRAG-lite rebuild": lambda: rebuild("graphrag"),
}


def shape(memory: Any) -> dict[str, Any]:
    levels = level_profile(memory.store, memory.tokenizer)
    gap = coherence(memory.store, seed=0).get("1", {}).get("gap")
    return {
        "nodes_per_level": [levels[k]["nodes"] for k in sorted(levels, key=int)],
        "coherence_gap_level1": gap,
        "multi_parent_nodes": sum(len(p) > 1 for p in memory.store.parents),
    }


def online_vs_rebuild() -> dict[str, Any]:
    base, batch = chunks(BASE), chunks(BATCH, BASE)
    up = online("cam")(base, batch)
    full = rebuild("cam", construction="offline")(base, batch)
    return {
        "base_chunks": BASE,
        "batch": BATCH,
        "stub_latency_s": LATENCY_S,
        "max_in_flight": MAX_IN_FLIGHT,
        "online_seconds": up["seconds"],
        "online_llm_calls": up["llm_calls"],
        "rebuild_seconds": full["seconds"],
        "rebuild_llm_calls": full["llm_calls"],
        "time_ratio": full["seconds"] / up["seconds"],
        "call_ratio": full["llm_calls"] / max(1, up["llm_calls"]),
        "online_shape": shape(up["memory"]),
        "rebuild_shape": shape(full["memory"]),
    }


def batch_curve(out: Path) -> dict[str, Any]:
    base = chunks(BASE)
    curve: dict[str, dict[int, dict[str, float]]] = {}
    for name, make in SYSTEMS.items():
        trial = make()
        curve[name] = {}
        for b in BATCH_SIZES:
            r = trial(base, chunks(b, BASE))
            curve[name][b] = {"seconds": r["seconds"], "llm_calls": r["llm_calls"]}
            print(
                f"   {name:>22} batch {b:>4}: {r['seconds']:7.2f} s, {r['llm_calls']:>5} LLM calls",
                flush=True,
            )
    plot(curve, out / "cam_batches.png")
    return curve


def plot(curve: dict[str, dict[int, dict[str, float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, points in curve.items():
        sizes = sorted(points)
        axes[0].plot(sizes, [points[b]["seconds"] for b in sizes], marker="o", label=name)
        axes[1].plot(sizes, [points[b]["llm_calls"] for b in sizes], marker="o", label=name)
    for ax, label in zip(axes, ("seconds per batch", "LLM calls per batch"), strict=False):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(f"batch size (chunks, into a {BASE}-chunk memory)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Insertion cost per batch, stub LLM {LATENCY_S * 1000:.0f} ms x {MAX_IN_FLIGHT} in flight"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> dict[str, Any]:
    """Run both CAM benchmarks, print a summary and return the figures."""
    out = Path("results/bench")
    r = online_vs_rebuild()
    print(
        f"CAM, {r['base_chunks']}-chunk memory + a batch of {r['batch']} (stub LLM {LATENCY_S * 1000:.0f} ms, "
        f"{MAX_IN_FLIGHT} in flight): online update {r['online_seconds']:.2f} s / {r['online_llm_calls']} LLM calls, "
        f"full offline rebuild {r['rebuild_seconds']:.2f} s / {r['rebuild_llm_calls']} calls -> "
        f"x{r['time_ratio']:.1f} faster, x{r['call_ratio']:.1f} fewer calls "
        f"(paper: over x{PAPER_CLAIM:.0f}){'' if r['time_ratio'] > PAPER_CLAIM else '  <-- below the claim'}"
    )
    print(f"   shape online {r['online_shape']}\n   shape rebuild {r['rebuild_shape']}")
    curve = batch_curve(out)
    print(f"   plot: {out / 'cam_batches.png'}")
    return {"cam_online_vs_rebuild": r, "cam_batch_curve": curve}


if __name__ == "__main__":
    main()
