"""Chat and embedding requests to one server share its request budget (``llm.max_in_flight``)."""

from __future__ import annotations

import threading
import time

from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.factory import build_services, same_server
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat


class _Served:
    """A test backend that says which server it talks to."""

    def __init__(self, inner, base_url):
        self.inner, self.base_url = inner, base_url
        self.model_id = inner.model_id
        self.max_concurrency = getattr(inner, "max_concurrency", None)

    def chat(self, request):
        return self.inner.chat(request)

    def embed(self, texts):
        return self.inner.embed(texts)


def _services(make_cfg, chat_url, embed_url):
    def make_backend(section, group):
        if group == "llm":
            return _Served(ScriptedChat(default="ok", log=False), chat_url)
        return _Served(HashingEmbedder(dim=8, model_id="h"), embed_url)

    return build_services(
        make_cfg("cache.enabled=false", "llm.max_in_flight=3"), make_backend=make_backend
    )


def test_one_server_behind_both_facades_shares_the_chat_slots(make_cfg):
    services = _services(make_cfg, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    assert services.embedder._slots is services.llm.slots
    other = _services(make_cfg, "http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1")
    assert other.embedder._slots is not other.llm.slots
    assert not same_server(object(), object())  # in-process backends name no server


def test_embeddings_wait_for_a_shared_slot_and_never_exceed_the_budget():
    slots = threading.BoundedSemaphore(2)
    active, peak, lock = [0], [0], threading.Lock()

    class Slow(HashingEmbedder):
        def embed(self, texts):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            return super().embed(texts)

    embedder = Embedder(Slow(dim=8, model_id="slow"), slots=slots)
    slots.acquire()  # a chat call holds one of the two slots
    threads = [threading.Thread(target=embedder.embed, args=([f"text {i}"],)) for i in range(6)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    assert peak[0] == 1  # one slot left for six embedding requests
    slots.release()
    for t in threads:
        t.join()
    assert peak[0] == 2
