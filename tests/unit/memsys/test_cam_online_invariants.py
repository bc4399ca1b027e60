"""Invariants of CAM's online update that must hold after any sequence of batches: every node's
replicas are exactly the components of its ego-network, and the replica edges are exactly the
images of the level's edges (Sec. 4.1.2), at every level."""

from __future__ import annotations

import random

import pytest
from cam_fakes import SELECT, SUMMARY, FakeLLM
from memharness.memsys.cam import CAM
from memharness.memsys.cam.network import ego_components
from memharness.memsys.services.embed import Embedder
from memharness.memsys.testing.doubles import HashingEmbedder, WordTokenizer
from memharness.memsys.types import Unit, content_id


def topic_stream(n: int, seed: int) -> list[Unit]:
    """Short texts drawn from eight word pools: runs of one topic with random jumps, so edges form,
    disappear and re-form between summaries from batch to batch."""
    rng = random.Random(seed)
    pools = [[f"p{t}x{i}" for i in range(6)] for t in range(8)]
    out = []
    for i in range(n):
        topic = rng.randrange(8) if rng.random() < 0.5 else (i // 6) % 8
        text = " ".join(rng.sample(pools[topic], 3) + rng.sample(pools[rng.randrange(8)], 1))
        out.append(
            Unit(
                id=content_id("stream", i, text, prefix="u-"),
                text=text,
                source_id="doc",
                position=i,
            )
        )
    return out


def online_cam(**kw) -> CAM:
    kw = {"network": {"alpha": 0.6, "theta": 0.45}, **kw}
    return CAM(
        llm=FakeLLM(),
        embedder=Embedder(HashingEmbedder(dim=32)),
        tokenizer=WordTokenizer(),
        summaries={"prompt": SUMMARY},
        selection={"prompt": SELECT},
        **kw,
    )


def stale_replicas(cam: CAM) -> list[tuple[int, str]]:
    """(level, node) for every node whose replicas differ from its ego-network's components or
    whose replica edges differ from the images of its level edges."""
    bad = []
    for index, level in enumerate(cam.development.levels):
        if not level.replicas.owner:  # the top level: no replicas are built above the stop rule
            continue
        order, reps = level.position(), level.replicas
        for v in level.order:
            want = sorted(sorted(c) for c in ego_components(level.adj, v, order)) or [[]]
            have = sorted(sorted(reps.members[r]) for r in reps.of_node.get(v, []))
            edges = (
                {(reps.via[v][u], reps.via[u][v]) for u in level.adj[v]} if want == have else None
            )
            mine = {(r, q) for r in reps.of_node.get(v, []) for q in reps.adj[r]}
            if want != have or edges != mine:
                bad.append((index, v))
    return bad


@pytest.mark.parametrize("seed", [10, 24, 28])
@pytest.mark.parametrize("batch", [1, 5, 20])
def test_replicas_are_the_ego_components_of_every_node_after_online_batches(seed, batch):
    units = topic_stream(80, seed)
    cam = online_cam()
    for i in range(0, len(units), batch):
        cam.insert(units[i : i + batch])
        assert stale_replicas(cam) == [], f"after {i + batch} units"
    assert len(cam.development.levels) >= 3  # the invariant was checked above level 1 too
