"""A stdlib-only product worker for the adapter's tests: speaks the real protocol in a real process.

Its memory is the units' texts; ``ingest`` asks the harness endpoint for one chat completion and one
embedding (urllib, so the tests see the calls in the meter). ``MEMHARNESS_PRODUCT_OPTIONS`` picks a
misbehaviour: ``{"mode": "ingest_error" | "partial" | "search_error" | "crash_on_search" | "hang" |
"busy" | "stray" | "bad_items" | "spawn"}`` (``busy``: 4 chat calls per ingest; ``hang``: search never
answers; ``stray``: search first prints a reply-shaped line without the request's id, as a library
might; ``bad_items``: hits with ``source_ids`` as a string, unknown ids, a non-string text;
``spawn``: ingest starts a grandchild that sleeps, its pid in the store's ``child.pid``). It serves
``forget`` only in the modes ``forget`` (drops the units), ``forget_error`` (raises) and
``forget_leaky`` (says it deleted them and keeps them: a product whose delete leaks).
"""

import hashlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memsys" / "products" / "workers"))
import protocol  # noqa: E402

OPTIONS = json.loads(os.environ.get("MEMHARNESS_PRODUCT_OPTIONS") or "{}")
MODE = OPTIONS.get("mode", "ok")
memory: list[dict] = []


def post(route: str, body: dict) -> dict:
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + route,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
        },
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def hello(request):
    return {
        "product": "fake",
        "version": "0.0.1",
        "packages": {"fake": "0.0.1"},
        "clock": "data",
        "env": {k: os.environ[k] for k in ("MEMHARNESS_LLM_MODEL", "MEMHARNESS_EMBED_DIM")},
        "env_names": sorted(os.environ),
        "key_sha256": hashlib.sha256(os.environ["OPENAI_API_KEY"].encode()).hexdigest(),
    }


def reset(request):
    memory.clear()
    return {}


def ingest(request):
    if MODE == "ingest_error":
        raise RuntimeError("the product refused the batch")
    units = request["units"]
    for n in range(4 if MODE == "busy" else 1):
        chat = [{"role": "user", "content": f"{units[0]['text']} {n}"}]
        post("/chat/completions", {"model": "m", "messages": chat})
    post("/embeddings", {"model": "e", "input": [u["text"] for u in units]})
    memory.extend(units)
    (Path(os.environ["MEMHARNESS_STORE_DIR"]) / "worker.pid").write_text(str(os.getpid()))
    if MODE == "spawn":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        store = Path(os.environ["MEMHARNESS_STORE_DIR"])
        (store / "child.pid").write_text(str(child.pid))
    failures = {"extraction_unparsed": 1} if MODE == "partial" else {}
    return {"added": len(units), "failures": failures}


def search(request):
    if MODE == "search_error":
        raise ValueError("index unavailable")
    if MODE == "hang":
        time.sleep(3600)
    if MODE == "crash_on_search":
        sys.stderr.write("fatal: the product crashed\n")
        sys.stderr.flush()
        os._exit(3)
    words = set(request["query"].lower().split())
    hits = [u for u in memory if words & set(u["text"].lower().split())]
    if MODE == "stray":  # what a library's print of a result dict looks like on stdout
        print(json.dumps({"ok": True, "items": [{"text": "stray", "source_ids": ["u9"]}]}))
        sys.stdout.flush()
    if MODE == "bad_items":
        return {
            "items": [
                {"text": hits[0]["text"], "score": 1.0, "source_ids": hits[0]["id"]},
                {"text": hits[0]["text"], "score": 0.5, "source_ids": ["nope", hits[0]["id"]]},
                {"text": 7, "score": 0.1, "source_ids": []},
            ]
        }
    return {
        "items": [
            {"text": u["text"], "score": 1.0 / (i + 1), "source_ids": [u["id"]]}
            for i, u in enumerate(hits[: request["k"]])
        ]
    }


def forget(request):
    if MODE == "forget_error":
        raise RuntimeError("the product cannot delete now")
    gone = set(request["unit_ids"])
    if MODE != "forget_leaky":
        memory[:] = [u for u in memory if u["id"] not in gone]
    return {"deleted": len(gone), "units_reinserted": 0}


def stats(request):
    return {"stats": {"memories": len(memory)}}


if __name__ == "__main__":
    handlers = {"hello": hello, "reset": reset, "ingest": ingest, "search": search, "stats": stats}
    if MODE.startswith("forget"):
        handlers["forget"] = forget
    protocol.serve(handlers)
