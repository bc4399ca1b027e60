"""The product worker is contained (issue 43 cases 2-6): a minimal environment, its store under the run
folder, nothing left running on any exit path (real signals), stray stdout lines and malformed hits
counted and never used. The worker is tests/product_fake_worker.py in a real process."""

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from memharness.memsys.base import RUN_FOLDER
from memharness.memsys.products.adapter import ProductMemory
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat, WordTokenizer
from memharness.memsys.types import Unit
from paths import ROOT, TESTS

WORKER = str(TESTS / "product_fake_worker.py")
UNITS = [
    Unit(id=f"u{i}", text=text, source_id="s1", position=i, metadata={"speaker": "Ann"})
    for i, text in enumerate(["Ann grows red tomatoes", "Ann adopted a dog"])
]

# a harness in its own process: a product memory whose worker started a grandchild; prints the store
# and, in "interrupt" mode, then waits in an episode thread on a search that never answers
HARNESS = """
import sys, threading, time
from memharness.memsys.products.adapter import ProductMemory
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat, WordTokenizer
from memharness.memsys.types import Unit

mode, worker = sys.argv[1], sys.argv[2]
if sys.argv[3:] == ["watchdog"]:  # no parent-death signal: the worker's watchdog alone
    import memharness.memsys.products.process as process
    process.PRCTL = None
llm = LLM(ScriptedChat(default="ok"), meter=Meter(), progress=False)
mem = ProductMemory(llm, Embedder(HashingEmbedder(dim=4)), WordTokenizer(), product="fake",
                    worker=worker, python=sys.executable, options={"mode": mode})
mem.insert([Unit(id="u0", text="Ann grows tomatoes", source_id="s", position=0)])
print(mem.store, flush=True)
if mode == "hang":
    threading.Thread(target=mem.retrieve, args=("Ann", 100)).start()
    time.sleep(600)
time.sleep(600)
"""


@pytest.fixture
def services():
    meter = Meter()
    llm = LLM(ScriptedChat(default="ok"), meter=meter, progress=False)
    yield llm, Embedder(HashingEmbedder(dim=16), meter=meter)
    llm.close()


def memory(services, mode="ok", **settings):
    llm, embedder = services
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


def gone(pid: int) -> bool:
    """No such process, or only its zombie (it ran no more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_gone(pids, seconds=10.0) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def test_the_worker_sees_no_secret_only_the_endpoint_token(services, monkeypatch):
    secrets = {
        "OPENAI_API_KEY": "sk-real",
        "HF_TOKEN": "hf_x",
        "AWS_SECRET_ACCESS_KEY": "a",
        "GOOGLE_APPLICATION_CREDENTIALS": "/k.json",
        "MEMHARNESS_OPENAI_KEY": "sk-also",
        "PYTHONPATH": "/elsewhere",
    }
    for name, value in {**secrets, "MEMHARNESS_FLAG": "1", "HTTPS_PROXY": "http://p:3128"}.items():
        monkeypatch.setenv(name, value)
    mem = memory(services)
    mem.insert(UNITS)
    names = set(mem.hello["env_names"])
    assert not names & (set(secrets) - {"OPENAI_API_KEY"})
    assert mem.hello["key_sha256"] == hashlib.sha256(mem.endpoint.token.encode()).hexdigest()
    assert {"PATH", "MEMHARNESS_FLAG", "HTTPS_PROXY", "NO_PROXY", "OPENAI_BASE_URL"} <= names
    assert "id" not in mem.stats()["product"]  # the protocol's request id is not the product's
    mem.close()


def test_the_store_lives_under_the_run_folder_and_a_kept_one_is_recorded(services, tmp_path):
    folder = RUN_FOLDER.set(tmp_path / "run")
    try:
        mem = memory(services)
        mem.insert(UNITS)
        store = mem.store
        assert store.parent == tmp_path / "run" / "product_stores"
        mem.close()
        assert not store.exists()
        kept = memory(services, keep_store=True)
        kept.insert(UNITS)
        kept.close()
        assert Path(kept.stats()["store"]).parent == tmp_path / "run" / "product_stores"
        assert (Path(kept.stats()["store"]) / "worker.log").exists()
    finally:
        RUN_FOLDER.reset(folder)


def test_a_run_keeps_its_product_stores_in_its_folder(make_cfg, tmp_path):
    from memharness.eval.run.runner import run

    product = ("memory=mem0", "memory.product=fake", f"memory.worker={WORKER}")
    cfg = make_cfg(*product, f"memory.python={sys.executable}", "memory.keep_store=true")
    run(cfg, tmp_path / "kept")
    stats = json.loads((tmp_path / "kept" / "memory_stats.json").read_text())
    stores = {Path(s["store"]) for s in stats.values()}
    assert len(stores) == len(stats) == 3
    assert all(p.parent == tmp_path / "kept" / "product_stores" and p.is_dir() for p in stores)
    run(make_cfg(*product, f"memory.python={sys.executable}"), tmp_path / "dropped")
    assert not (tmp_path / "dropped" / "product_stores").exists()
    assert (
        "store" not in json.loads((tmp_path / "dropped" / "memory_stats.json").read_text())["news"]
    )


def test_close_kills_what_the_worker_started(services):
    mem = memory(services, "spawn")
    mem.insert(UNITS)
    child = int((mem.store / "store" / "child.pid").read_text())
    worker = mem._proc.pid
    mem.close()
    assert wait_gone([worker, child], 5)


@pytest.mark.parametrize(
    ("mode", "guard"),
    [("spawn", "pdeathsig"), ("spawn", "watchdog"), ("hang", "watchdog")],
    ids=["idle-pdeathsig", "idle-watchdog", "busy-watchdog"],
)
def test_a_killed_harness_leaves_no_worker_or_grandchild(tmp_path, mode, guard):
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, mode, WORKER, guard],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
    )
    store = Path(harness.stdout.readline().strip()) / "store"
    names = ("worker.pid", "child.pid") if mode == "spawn" else ("worker.pid",)
    pids = [int((store / name).read_text()) for name in names]
    time.sleep(0.5 if mode == "hang" else 0)  # the search is in flight
    try:
        assert not any(gone(p) for p in pids)
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        assert wait_gone(pids, 5)
    finally:  # on the old code: no orphan left behind by the test itself
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_ctrl_c_stops_a_run_waiting_on_a_busy_worker_within_seconds():
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, "hang", WORKER],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
    )
    try:
        store = Path(harness.stdout.readline().strip()) / "store"
        time.sleep(1.0)  # the episode thread is waiting on the search
        started = time.monotonic()
        harness.send_signal(signal.SIGINT)
        harness.wait(timeout=30)
        assert time.monotonic() - started < 5
        assert wait_gone([int((store / "worker.pid").read_text())], 5)
    finally:
        harness.kill()


def test_a_reply_shaped_stray_line_is_counted_never_used(services):
    mem = memory(services, "stray")
    mem.insert(UNITS)
    first = mem.retrieve("Ann dog", 100)
    second = mem.retrieve("tomatoes", 100)
    assert [i.text for i in first] == ["Ann grows red tomatoes", "Ann adopted a dog"]
    assert [i.text for i in second] == ["Ann grows red tomatoes"]  # not shifted by one
    assert mem.stats()["adapter"]["worker_stray_lines"] == 2
    mem.close()


def test_malformed_hits_are_counted_and_not_used_as_evidence(services):
    mem = memory(services, "bad_items")
    mem.insert(UNITS)
    items = mem.retrieve("tomatoes", 100)
    assert [i.source_unit_ids for i in items] == [(), ("u0",)]  # no ("A", "n", ...) from a string
    counters = mem.stats()["adapter"]
    assert counters["items_bad_source_ids"] == 1 and counters["source_ids_unknown"] == 1
    assert counters["items_invalid"] == 1
    mem.close()


def test_replies_carry_the_request_id():
    from memharness.memsys.products.workers.protocol import handle_line

    reply = handle_line({"hello": lambda r: {"product": "p"}}, json.dumps({"op": "hello", "id": 7}))
    assert reply == {"ok": True, "product": "p", "ops": ["close", "hello"], "id": 7}
