"""The product adapter against a real worker process (tests/product_fake_worker.py, stdlib only)."""

import sys

import pytest
from memharness.memsys.products.adapter import ProductMemory, WorkerError, venv_python
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.types import ConfigError
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat, WordTokenizer
from memharness.memsys.types import Unit
from paths import TESTS

WORKER = str(TESTS / "product_fake_worker.py")
UNITS = [
    Unit(
        id=f"u{i}",
        text=text,
        source_id="s1",
        position=i,
        timestamp=f"2023-05-0{i + 1}",
        metadata={"speaker": "Ann", "session": 1},
    )
    for i, text in enumerate(["Ann grows red tomatoes", "Ann adopted a dog", "Ann runs marathons"])
]


@pytest.fixture
def services(request):
    meter = Meter()
    chat = ScriptedChat(default="ok", latency_s=getattr(request, "param", 0.0))
    llm = LLM(chat, meter=meter, progress=False)
    yield llm, Embedder(HashingEmbedder(dim=16), meter=meter), meter, chat
    llm.close()


def memory(services, mode="ok", **settings):
    llm, embedder, _, _ = services
    return ProductMemory(
        llm,
        embedder,
        WordTokenizer(),
        product="fake",
        worker=WORKER,
        python=sys.executable,
        options={"mode": mode},
        **settings,
    )


def test_ingest_search_stats_and_close(services):
    _, _, meter, chat = services
    mem = memory(services, top_k=5)
    with meter.stage("build"):
        mem.insert(UNITS)
    with meter.stage("retrieve"):
        items = mem.retrieve("Ann dog tomatoes", 8)  # 4 words each: two fit the budget
    assert [i.source_unit_ids for i in items] == [("u0",), ("u1",)]
    assert all(i.tokens == 4 and i.level == 1 for i in items)
    assert meter.to_json()["build"]["calls"] == 1 and chat.calls == 1  # the worker's chat call
    stats = mem.stats()
    assert stats["product"]["version"] == "0.0.1" and stats["product"]["clock"] == "data"
    assert stats["product"]["env"] == {
        "MEMHARNESS_LLM_MODEL": "fake-chat",
        "MEMHARNESS_EMBED_DIM": "16",
    }
    assert stats["product_stats"] == {"memories": 3}
    assert stats["adapter"]["items_cut_by_budget"] == 1 and stats["adapter"]["units_sent"] == 3
    assert stats["endpoint"]["chat"] == 1 and stats["endpoint"]["embedded_texts"] == 3
    assert stats["degradation"] == {}
    proc, store = mem._proc, mem.store
    mem.close()
    assert (
        proc.poll() == 0 and not store.exists() and mem.stats()["product_stats"] == {"memories": 3}
    )


def test_missing_venv_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMHARNESS_VENVS", str(tmp_path))
    with pytest.raises(ConfigError, match=r"make product-mem0"):
        venv_python("mem0")
    with pytest.raises(ConfigError, match=r"not installed .*nosuch"):
        ProductMemory(product="nosuch")


def test_failed_ingest_is_a_counted_degradation(services):
    mem = memory(services, "ingest_error")
    mem.insert(UNITS)
    assert mem.degraded == {"ingest_failed": 3}
    stats = mem.stats()
    assert stats["adapter"]["ingest_errors"] == 1
    assert "the product refused the batch" in stats["worker_errors"][0]
    mem.close()


def test_failures_the_worker_reports_are_degradations(services):
    mem = memory(services, "partial")
    mem.insert(UNITS)
    assert mem.degraded == {"extraction_unparsed": 1}
    mem.close()


def test_search_error_raises_and_is_counted(services):
    mem = memory(services, "search_error")
    mem.insert(UNITS)
    with pytest.raises(WorkerError, match="index unavailable"):
        mem.retrieve("dog", 100)
    assert mem.stats()["adapter"]["search_errors"] == 1
    mem.close()


def test_worker_crash_raises_with_its_last_log_line(services):
    mem = memory(services, "crash_on_search")
    mem.insert(UNITS)
    with pytest.raises(WorkerError, match=r"exited \(code 3\).*the product crashed"):
        mem.retrieve("dog", 100)
    with pytest.raises(WorkerError, match="exited"):  # later requests fail the same way
        mem.retrieve("dog", 100)
    mem.close()
    assert mem.stats()["adapter"]["worker_deaths"] >= 1


def test_search_before_any_insert_is_empty(services):
    mem = memory(services)
    assert mem.retrieve("dog", 100) == [] and mem._proc is None
    mem.close()


def test_a_silent_worker_is_stopped_after_the_timeout(services):
    mem = memory(services, "hang", timeout_s=1)
    mem.insert(UNITS)
    with pytest.raises(WorkerError, match="no progress on search for memory.timeout_s=1s"):
        mem.retrieve("dog", 100)
    assert mem._proc.poll() is not None and mem.stats()["adapter"]["worker_timeouts"] == 1
    mem.close()


@pytest.mark.parametrize("services", [1.0], indirect=True)
def test_a_worker_making_model_calls_is_not_timed_out(services):
    _, _, meter, chat = services
    # 4 calls of 1 s: 4 s in all, more than the timeout, but never 3 s without a call (the slack
    # is for the worker's own work between calls on a loaded machine)
    mem = memory(services, "busy", timeout_s=3)
    mem.insert(UNITS)
    assert chat.calls == 4 and mem.degraded == {} and mem.stats()["adapter"]["added"] == 3
    mem.close()


def _run_values(n_ctx, memory_yaml="mem0", **memory):
    """The resolved values the run check sees: the product's YAML with ``memory`` over it."""
    import yaml
    from paths import ROOT

    settings = yaml.safe_load((ROOT / "conf" / "memory" / f"{memory_yaml}.yaml").read_text())
    settings.update(memory)
    return {"llm": {"backend": {"n_ctx": n_ctx}}, "memory": settings, "dataset": {}}


def test_mem0_prompts_refuse_a_window_that_would_cut_them():
    from memharness.eval.run.validate import context_problems

    (line,) = context_problems(_run_values(4096))  # llm=local
    assert "llm.backend.n_ctx=4096" in line and "memory.prompt_tokens" in line
    assert "llm=local_16k" in line and "11064" in line  # 9,000 prompt + 2,000 reply + 64 spare
    assert context_problems(_run_values(16384)) == []  # llm=local_16k
    assert context_problems(_run_values(4096, prompt_tokens=None)) == []  # check waived
    assert context_problems(_run_values(4096, "amem")) == []  # A-Mem declares no long prompt


def test_a_worker_without_forget_is_rebuilt_and_leaks_nothing(services):
    mem = memory(services, top_k=5)
    mem.insert(UNITS)
    assert "forget" not in mem.hello["ops"]  # the fake worker serves no forget
    assert ("u1",) in [i.source_unit_ids for i in mem.retrieve("Ann dog tomatoes", 100)]
    record = mem.forget(["u1"])
    assert record["method"] == "rebuild" and record["units"] == 1
    left = [i.source_unit_ids for i in mem.retrieve("Ann dog tomatoes", 100)]
    assert ("u0",) in left and all("u1" not in s for s in left)
    assert mem.stats()["product_stats"] == {"memories": 2}
    mem.close()


@pytest.mark.parametrize(
    "mode,method,left,counters",
    [  # the worker's own forget; a refused one (counted, then rebuilt); one that leaks
        ("forget", "product_delete", [("u0",)], {"forget_deleted": 1}),
        ("forget_error", "rebuild", [("u0",)], {"forget_errors": 1, "worker_errors": 1}),
        ("forget_leaky", "product_delete", [("u0",), ("u1",)], {"forget_deleted": 1}),
    ],
)
def test_forget_goes_to_the_worker_and_a_leak_stays_visible(services, mode, method, left, counters):
    mem = memory(services, mode, top_k=5)
    mem.insert(UNITS)
    record = mem.forget(["u1"])
    assert record["method"] == method and [u.id for u in mem.units] == ["u0", "u2"]
    # a hit still naming the forgotten unit is kept (scored as a leak), not dropped as unknown
    assert [i.source_unit_ids for i in mem.retrieve("dog tomatoes", 100)] == left
    adapter = mem.stats()["adapter"]
    assert {k: adapter.get(k) for k in counters} == counters
    assert "source_ids_unknown" not in adapter or adapter["source_ids_unknown"] == 0
    mem.close()
