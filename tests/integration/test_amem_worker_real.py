"""The A-Mem worker in its real venv (.venvs/amem) against the harness endpoint on 127.0.0.1, serving
the real embedded models (SmolLM2-135M in llama.cpp, MiniLM in sentence-transformers): the product's
chat calls and its Chroma store's embeddings both arrive at the endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from memharness.memsys.products.adapter import venv_path
from memharness.memsys.products.endpoint import Endpoint
from memharness.memsys.services.backends.local import LlamaCppBackend, SentenceTransformerBackend
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM

from tests._servers import REPO

WORKER = REPO / "memsys" / "products" / "workers" / "amem_worker.py"
PYTHON = venv_path("amem")
UNITS = [
    {
        "id": "u-cat",
        "text": "I adopted a grey cat named Luna last week.",
        "speaker": "Mel",
        "timestamp": "2023-05-08T13:56:00",
        "session": "s1",
    },
    {
        "id": "u-alps",
        "text": "We went hiking in the Alps and slept in a mountain hut.",
        "speaker": "Caroline",
        "timestamp": "2023-05-09T10:00:00",
        "session": "s1",
    },
    {
        "id": "u-violin",
        "text": 'Mel said, "My sister practises the violin every evening."',
        "speaker": "Mel",
        "timestamp": "2023-06-01T18:30:00",
        "session": "s2",
    },
]


class RecordingMiniLM(SentenceTransformerBackend):
    """The real MiniLM backend, keeping each text it embedded with its vector, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, np.ndarray]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = super().embed(texts)
        self.seen.extend(zip(texts, vectors, strict=True))
        return vectors

    def last(self, prefix: str) -> np.ndarray:
        return [vector for text, vector in self.seen if text.startswith(prefix)][-1]


class Worker:
    """The worker process, one request line in, one reply line out."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            [str(PYTHON), str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
        )

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the worker died; see {self.log.name}"
        return json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


@pytest.mark.slow
def test_amem_worker_ingests_searches_and_counts_through_the_harness_endpoint(tmp_path):
    if not PYTHON.exists():
        pytest.skip(f"{PYTHON} is missing: install the product with `make product-amem`")
    store = tmp_path / "store"
    store.mkdir()
    llm = LLM(LlamaCppBackend(embedded="smollm2", n_ctx=2048), progress=False)
    minilm = RecordingMiniLM()
    embedder = Embedder(minilm)
    endpoint = Endpoint(llm, embedder)
    url = endpoint.start()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        OPENAI_BASE_URL=url,
        OPENAI_API_KEY=endpoint.token,  # the endpoint serves its token's holder only
        MEMHARNESS_LLM_MODEL=llm.model_id,
        MEMHARNESS_EMBED_MODEL=embedder.model_id,
        MEMHARNESS_STORE_DIR=str(store),
        # a 135M model in JSON mode can ramble, so each reply is capped to keep the test short
        MEMHARNESS_PRODUCT_OPTIONS=json.dumps({"max_tokens": 160, "json_mode": "object"}),
    )
    worker = Worker(env, tmp_path / "worker.log")
    try:
        started = time.monotonic()
        hello = worker.ask({"op": "hello"})
        hello_s = time.monotonic() - started
        assert hello["ok"], hello
        assert (hello["product"], hello["version"], hello["clock"]) == ("amem", "0.2.6", "data")
        assert hello["packages"]["torch"].endswith("+cpu")
        assert hello["embedder"] == embedder.model_id
        assert worker.ask({"op": "reset"}) == {"ok": True}

        started = time.monotonic()
        ingest = worker.ask({"op": "ingest", "units": UNITS})
        ingest_s = time.monotonic() - started
        assert ingest["ok"] and ingest["added"] == 3, ingest

        found = worker.ask({"op": "search", "query": "What is the cat called?", "k": 2})
        assert found["ok"] and 1 <= len(found["items"]) <= 2, found
        top = found["items"][0]
        assert top["source_ids"] == ["u-cat"] and "Luna" in top["text"]
        assert "time: 202305081356" in top["text"] and "content: Mel: I adopted" in top["text"]
        # the score is the cosine of the query's and the stored note's vectors (the note as the
        # store last embedded it: text + annotations), not Chroma's distance
        cosine = float(
            np.dot(minilm.last("What is the cat called?"), minilm.last("Mel: I adopted"))
        )
        assert abs(top["score"] - cosine) < 1e-3, (top["score"], cosine)

        stats = worker.ask({"op": "stats"})["stats"]
        # one annotation per note, one evolution decision per note after the first
        assert stats["notes"] == 3 and stats["llm_calls"] == 5, stats
        assert "no_timestamp" not in stats and "timestamp_unparsed" not in stats
        assert stats.get("llm_error", 0) == 0, stats  # every call was served
        assert stats["unannotated"] < 3, stats  # the model's annotations reached the notes
        assert stats["evolutions"] >= 0 and stats["links"] >= 0
        # every embedding the store made (notes added or rewritten, neighbour look-ups, the
        # search) was a request to the endpoint, none computed inside the worker
        served = endpoint.stats()
        assert served["chat"] == 5, served
        assert stats["embed_requests"] == served["embeddings"] >= 3 + 1, (stats, served)
        assert stats["embedded_texts"] == served["embedded_texts"]

        worker.ask({"op": "reset"})
        assert worker.ask({"op": "stats"})["stats"]["notes"] == 0
        assert worker.ask({"op": "close"}) == {"ok": True, "closing": True}
        assert worker.proc.wait(timeout=30) == 0
    finally:
        worker.stop()
        endpoint.stop()
        llm.close()
    print(f"amem worker: hello {hello_s:.1f}s, ingest of 3 units {ingest_s:.1f}s, stats {stats}")
