"""Embedding replies that are no answer, from a real HTTP server on 127.0.0.1 (the fault server):
NaN / inf values, another dimension, too few vectors, a 200 with an error body. Each is refused,
counted (``embed_invalid``), retried and never cached; the cache never hands one back."""

from __future__ import annotations

import numpy as np
import pytest
from memharness.memsys.services.backends.openai_compat import OpenAIEmbedBackend
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.embed import Embedder, _key
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import BackendError
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from paths import ROOT

TEXTS = [f"text {i}" for i in range(6)]


def embedder(url: str, cache: CallCache, retries: int = 1, **backend: object) -> Embedder:
    emb = OpenAIEmbedBackend(
        model="e",
        base_url=url,
        api_key_env=None,
        max_retries=retries,
        base_delay_s=0.0,
        model_id="fault-embed",  # one cache identity whatever the server's port
        **backend,
    )
    return Embedder(emb, meter=Meter(), cache=cache, batch_size=3)


def cached_vectors(cache: CallCache, model_id: str, texts: list[str]) -> dict[str, np.ndarray]:
    return cache.get_embeddings([_key(model_id, t) for t in texts])


@pytest.mark.parametrize("bad", ["nan", "inf", "count", "dim", "error"])
def test_a_broken_reply_is_refused_counted_and_retried(tmp_path, bad):
    cache = CallCache(tmp_path / "c.sqlite")
    config = FaultConfig(embed_dim=16, embed_rate_bad=1.0, embed_bad=bad, embed_transient=1)
    with FaultServer(config) as srv:
        # ``dimensions`` declares the dimension: a reply of 8 is then wrong from the first one
        emb = embedder(srv.url, cache, dimensions=16 if bad == "dim" else None)
        vectors = emb.embed(TEXTS)
        stats = srv.stats()
    counts = emb.meter.stages["other"]
    assert stats["injected_embed_bad"] == 2 and stats["embed_ok"] == 2  # 2 batches, 1 bad each
    assert vectors.shape == (6, 16) and np.isfinite(vectors).all()
    assert counts.embed_retries == 2 and counts.embed_failures == 0
    # an error body is no vector at all: retried, but not counted as an invalid vector
    assert counts.embed_invalid == (0 if bad == "error" else 2)
    kept = cached_vectors(cache, emb.model_id, TEXTS)
    assert len(kept) == 6 and all(v.shape == (16,) and np.isfinite(v).all() for v in kept.values())


@pytest.mark.parametrize("bad", ["nan", "count", "error"])
def test_a_reply_broken_for_good_fails_and_is_never_cached(tmp_path, bad):
    cache = CallCache(tmp_path / "c.sqlite")
    with FaultServer(FaultConfig(embed_rate_bad=1.0, embed_bad=bad)) as srv:
        emb = embedder(srv.url, cache, retries=1)
        with pytest.raises(BackendError, match="/embeddings|invalid embedding reply"):
            emb.embed(TEXTS[:3])
    counts = emb.meter.stages["other"]
    assert counts.embed_failures == 1 and counts.embed_retries == 1
    assert counts.embed_invalid == (0 if bad == "error" else 2)
    assert len(cache) == 0
    with FaultServer(FaultConfig()) as healthy:  # the rerun asks again, and gets finite vectors
        again = embedder(healthy.url, cache)
        vectors = again.embed(TEXTS[:3])
        assert healthy.stats()["embed_requests"] == 1
    assert np.isfinite(vectors).all() and again.meter.stages["other"].embed_cache_hits == 0


def test_a_reply_of_another_dimension_than_the_cached_vectors_is_refused(tmp_path):
    """Without a declared dimension, the first valid vectors (here from the cache) fix it."""
    cache = CallCache(tmp_path / "c.sqlite")
    with FaultServer(FaultConfig(embed_dim=16)) as healthy:
        embedder(healthy.url, cache).embed(TEXTS[:3])
    bad = FaultConfig(embed_dim=16, embed_rate_bad=1.0, embed_bad="dim")
    with FaultServer(bad) as srv:
        emb = embedder(srv.url, cache, retries=0)
        assert emb.embed(TEXTS[:3]).shape == (3, 16)  # all cached
        with pytest.raises(BackendError, match="dimension 8, expected 16"):
            emb.embed(TEXTS[3:])
    assert emb.meter.stages["other"].embed_invalid == 1
    assert len(cached_vectors(cache, emb.model_id, TEXTS)) == 3


def test_non_finite_vectors_already_in_a_cache_are_embedded_again(tmp_path):
    """A cache written before the checks may hold NaN vectors: they are not served."""
    cache = CallCache(tmp_path / "c.sqlite")
    with FaultServer(FaultConfig(embed_dim=16)) as srv:
        emb = embedder(srv.url, cache)
        poisoned = np.full(16, np.nan, dtype=np.float32)
        cache.put_embeddings(emb.model_id, {_key(emb.model_id, TEXTS[0]): poisoned})
        vectors = emb.embed(TEXTS[:2])
        assert srv.stats()["embed_texts"] == 2
    assert np.isfinite(vectors).all()
    assert emb.meter.stages["other"].embed_invalid == 1
    assert np.isfinite(
        cached_vectors(cache, emb.model_id, TEXTS[:1])[_key(emb.model_id, TEXTS[0])]
    ).all()


def test_an_error_body_with_status_200_is_retryable_on_both_endpoints():
    """The same rule on /embeddings as on /chat/completions: a 200 without an answer is retried."""
    with FaultServer(FaultConfig(embed_rate_bad=1.0, embed_bad="error")) as srv:
        backend = OpenAIEmbedBackend(model="e", base_url=srv.url, api_key_env=None)
        with pytest.raises(BackendError) as info:
            backend.embed(["a"])
    assert info.value.retryable and info.value.status == 200
    assert "error body" in str(info.value) and "overloaded" in str(info.value)


def _run(make_cfg, tmp_path, url: str, name: str, *extra: str) -> tuple[dict, list[dict]]:
    from memharness.eval.run.runner import run
    from test_run_record import _strict

    out = tmp_path / name
    cfg = make_cfg(
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
        "llm=fake",
        "embedder=openai",
        f"embedder.backend.base_url={url}",
        "embedder.backend.api_key_env=null",
        "embedder.backend.base_delay_s=0",
        "embedder.backend.model_id=fault-embed",
        "embedder.batch_size=4",
        "memory=memorystream",
        "dataset.limit=6",
        *extra,
        fake=False,
    )
    metrics = run(cfg, out)
    samples = [_strict(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return metrics, samples


def test_a_run_retries_nan_replies_and_a_rerun_is_served_finite_vectors(make_cfg, tmp_path):
    bad = FaultConfig(embed_rate_bad=0.3, embed_bad="nan", embed_transient=1, seed=2)
    with FaultServer(bad) as srv:
        metrics, samples = _run(make_cfg, tmp_path, srv.url, "a")
        stats = srv.stats()
    total = metrics["calls"]["total"]
    assert stats["injected_embed_bad"] > 0
    assert total["embed_invalid"] == total["embed_retries"] == stats["injected_embed_bad"]
    assert total["embed_failures"] == 0 and metrics["outcome"]["exit_code"] == 0
    assert all(s["status"] == "scored" for s in samples)
    with FaultServer(FaultConfig(seed=2)) as healthy:  # everything cached, and all of it valid
        again, resamples = _run(make_cfg, tmp_path, healthy.url, "b")
        assert healthy.stats()["embed_requests"] == 0
    assert again["calls"]["total"]["embed_invalid"] == 0
    assert [s["retrieved"] for s in resamples] == [s["retrieved"] for s in samples]


def test_a_run_counts_replies_that_stay_broken_as_failed_questions(make_cfg, tmp_path):
    bad = FaultConfig(embed_rate_bad=0.3, embed_bad="nan", seed=5)
    with FaultServer(bad) as srv:
        metrics, samples = _run(
            make_cfg,
            tmp_path,
            srv.url,
            "a",
            "embedder.backend.max_retries=1",
            "eval.max_failed_fraction=1",
        )
    total = metrics["calls"]["total"]
    failed = [s for s in samples if s["status"] != "scored"]
    assert total["embed_failures"] > 0 and total["embed_invalid"] == 2 * total["embed_failures"]
    assert failed and all("invalid embedding reply" in s["error"] for s in failed)
    assert metrics["outcome"]["failed"] == len(failed)
