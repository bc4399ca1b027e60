"""mem0 OSS behind the worker line protocol (stdlib + mem0 only; run by ``.venvs/mem0/bin/python``).

mem0's own ``Memory`` with the ``openai`` LLM and embedder providers pointed at the harness endpoint
(``OPENAI_BASE_URL``), a local qdrant collection and its SQLite history under
``MEMHARNESS_STORE_DIR``; telemetry off. Each ``reset`` builds a new ``Memory`` in a fresh folder.

Ingest follows mem0's own LoCoMo evaluation: consecutive messages are added ``messages_per_add`` at a
time (2), the first speaker of the episode as ``user`` and every other speaker as ``assistant`` (a
unit without a speaker is a ``user`` message); with ``perspectives: 2`` every add is made again under
a second user id with the two roles swapped, and search asks both (``k`` each, merged by score), as
mem0's LoCoMo scripts do; with ``metadata`` holding the data's timestamp, the
session and the ids of the units in the call (they come back with every memory mem0 extracts from
it: the adapter's provenance). The store's ``created_at`` is the data's timestamp when it has one.

The clock: mem0 2.2.1 writes ``## Observation Date`` and ``## Current Date`` into its extraction
prompt from ``datetime.now()``. The worker wraps the prompt builder mem0's ``Memory`` calls (the
module attribute, no copied code) so both dates are the date of the units being added, or the word
``unknown`` when the data has none (never the wall clock: prompts stay identical across days, so
the call cache serves reruns). ``hello`` then says ``clock: data``.

Failures are counted per kind in the ``ingest`` reply: ``add_failed`` (mem0 raised, e.g. its LLM
call failed), ``extraction_unparsed`` (mem0 logged that it could not parse the extraction reply and
stored nothing), ``embed_failed`` (it logged a memory it could not embed). Options come as JSON in
``MEMHARNESS_PRODUCT_OPTIONS`` (conf/memory/mem0.yaml ``options``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402 - the protocol sits beside this script, not in the product's venv

STORE = Path(os.environ.get("MEMHARNESS_STORE_DIR") or ".").resolve()
os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: it reads it at import time
os.environ["MEM0_DIR"] = str(STORE / "mem0_home")  # nothing written outside the store

from mem0 import Memory  # noqa: E402
from mem0.memory import main as mem0_main  # noqa: E402

OPTIONS: dict[str, Any] = json.loads(os.environ.get("MEMHARNESS_PRODUCT_OPTIONS") or "{}")
PACKAGES = ("mem0ai", "openai", "qdrant-client", "pydantic", "sqlalchemy")
USER_IDS = ("memharness-a", "memharness-b")  # one per perspective (options.perspectives)
SWAP = {"user": "assistant", "assistant": "user"}
NO_DATE = "unknown"


def option(name: str, default: Any) -> Any:
    value = OPTIONS.get(name)
    return default if value is None else value


def perspectives() -> int:
    """1: the episode stored once; 2: also from the second speaker's side (mem0's LoCoMo script)."""
    value = int(option("perspectives", 1))
    if value not in (1, 2):
        raise ValueError(f"memory.options.perspectives must be 1 or 2, got {value}")
    return value


class Counting(logging.Handler):
    """Counts the failures mem0 only logs (an unparsed extraction reply, a memory not embedded)."""

    PATTERNS = {
        "Error parsing extraction response": "extraction_unparsed",
        "Failed to embed memory text": "embed_failed",
    }

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for pattern, kind in self.PATTERNS.items():
            if pattern in message:
                self.counts[kind] += 1


class Mem0Worker:
    def __init__(self) -> None:
        self.memory: Any = None
        self.resets = 0
        self.roles: dict[str, str] = {}
        self.date = NO_DATE
        self.counts: Counter[str] = Counter()
        self.logged = Counting()
        logging.getLogger("mem0").addHandler(self.logged)
        self._patch_clock()

    def _patch_clock(self) -> None:
        """mem0 builds its extraction prompt with today's date; give it the data's date instead."""
        original = mem0_main.generate_additive_extraction_prompt
        worker = self

        def dated(*args: Any, **kwargs: Any) -> str:
            kwargs["current_date"] = worker.date
            kwargs["timestamp"] = worker.date
            worker.counts["prompts_dated"] += 1
            return original(*args, **kwargs)

        mem0_main.generate_additive_extraction_prompt = dated

    def _wait_for_the_harness(self) -> None:
        """mem0's OpenAI clients wait for the endpoint as long as it takes, and never retry.

        The SDK's defaults (a 600 s read timeout, then 2 retries) would give up on a call the embedded
        model is still computing (a first mem0 call, 8k prompt tokens, takes over 10 minutes on 2 busy
        CPU cores) and queue the same request again behind it. The harness owns deadlines and retries
        (llm.retry, eval deadlines; the adapter's timeout_s while no call is in flight)."""
        for part in (self.memory.llm, self.memory.embedding_model):
            client = getattr(part, "client", None)
            if client is not None and hasattr(client, "with_options"):
                part.client = client.with_options(timeout=None, max_retries=0)

    def config(self, folder: Path) -> dict[str, Any]:
        base_url = os.environ["OPENAI_BASE_URL"]
        dims = int(os.environ["MEMHARNESS_EMBED_DIM"])
        return {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": os.environ["MEMHARNESS_LLM_MODEL"],
                    "openai_base_url": base_url,
                    "temperature": float(option("temperature", 0.0)),
                    "max_tokens": int(option("max_tokens", 2000)),
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": os.environ["MEMHARNESS_EMBED_MODEL"],
                    "openai_base_url": base_url,
                    "embedding_dims": dims,
                },
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "memharness",
                    "embedding_model_dims": dims,
                    "path": str(folder / "qdrant"),
                    "on_disk": True,
                },
            },
            "history_db_path": str(folder / "history.db"),
        }

    # -- protocol operations ------------------------------------------------------------------------
    def hello(self, request: dict[str, Any]) -> dict[str, Any]:
        packages = {}
        for name in PACKAGES:
            try:
                packages[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                packages[name] = None
        return {
            "product": "mem0",
            "version": packages["mem0ai"],
            "packages": packages,
            "clock": "data",
            "python": sys.version.split()[0],
            "options": OPTIONS,
        }

    def reset(self, request: dict[str, Any]) -> dict[str, Any]:
        self.resets += 1
        folder = STORE / f"memory-{self.resets}"
        folder.mkdir(parents=True, exist_ok=True)
        self.memory = Memory.from_config(self.config(folder))
        self._wait_for_the_harness()
        self.roles = {}
        self.counts = Counter(prompts_dated=self.counts["prompts_dated"])
        return {}

    def ingest(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.memory is None:
            self.reset({})
        units = request.get("units") or []
        per_add = max(1, int(option("messages_per_add", 2)))
        before = Counter(self.logged.counts)
        failures: Counter[str] = Counter()
        added = 0
        for start in range(0, len(units), per_add):
            group = units[start : start + per_add]
            for perspective in range(perspectives()):
                try:
                    result = self._add(group, perspective)
                except Exception as exc:  # mem0's own exception: counted, the next messages go on
                    print(f"mem0 add failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                    failures["add_failed"] += 1
                    continue
                added += len(result.get("results") or [])
        for kind, count in (self.logged.counts - before).items():
            failures[kind] += count
        self.counts["adds"] += -(-len(units) // per_add) * perspectives()
        self.counts["memories_added"] += added
        return {"added": added, "failures": dict(failures)}

    def _add(self, group: list[dict[str, Any]], perspective: int) -> dict[str, Any]:
        messages = []
        for unit in group:
            speaker = unit.get("speaker")
            role = "user"
            if speaker:
                role = self.roles.setdefault(speaker, "user" if not self.roles else "assistant")
                role = SWAP[role] if perspective else role  # the second speaker's point of view
            messages.append({"role": role, "content": str(unit.get("text", ""))})
        stamp = next((u["timestamp"] for u in reversed(group) if u.get("timestamp")), None)
        self.date = str(stamp)[:10] if stamp else NO_DATE
        if stamp is None:
            self.counts["adds_without_date"] += 1
        meta: dict[str, Any] = {
            "unit_ids": [str(u["id"]) for u in group],
            "session": str(group[-1].get("session")),
        }
        if stamp:
            meta["timestamp"] = str(stamp)
            meta["created_at"] = str(stamp)  # mem0 keeps a given created_at instead of now()
        return self.memory.add(
            messages,
            user_id=USER_IDS[perspective],
            metadata=meta,
            infer=bool(option("infer", True)),
        )

    def search(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.memory is None:
            return {"items": []}
        hits = []
        for user_id in USER_IDS[: perspectives()]:  # k per perspective, as mem0's LoCoMo search
            found = self.memory.search(
                str(request["query"]),
                top_k=int(request.get("k") or 10),
                filters={"user_id": user_id},
                threshold=float(option("threshold", 0.1)),
            )
            hits.extend(found.get("results") or [])
        hits.sort(key=lambda h: -(h.get("score") or 0.0))  # stable: one perspective's order kept
        items = []
        for hit in hits:
            meta = hit.get("metadata") or {}
            items.append(
                {
                    "id": hit.get("id"),
                    "text": hit.get("memory", ""),
                    "score": hit.get("score") or 0.0,
                    "source_ids": list(meta.get("unit_ids") or []),
                    "level": 1 if bool(option("infer", True)) else 0,
                }
            )
        return {"items": items}

    def forget(self, request: dict[str, Any]) -> dict[str, Any]:
        """mem0's own ``delete`` for every memory whose add() held a forgotten unit (its metadata's
        ``unit_ids``), in every perspective; the other units of those adds lose their memories with
        it, so they are added again (one add per affected group, counted as ``units_reinserted``)."""
        gone = {str(i) for i in request.get("unit_ids") or []}
        if self.memory is None or not gone:
            return {"deleted": 0, "units_reinserted": 0}
        deleted = 0
        regroups: dict[tuple[str, ...], dict[str, Any]] = {}
        for user_id in USER_IDS[: perspectives()]:
            found = self.memory.get_all(filters={"user_id": user_id}, top_k=100000)
            for hit in found.get("results") or []:
                meta = hit.get("metadata") or {}
                sources = tuple(str(i) for i in meta.get("unit_ids") or [])
                if gone.isdisjoint(sources):
                    continue
                self.memory.delete(hit["id"])
                deleted += 1
                kept = tuple(i for i in sources if i not in gone)
                if kept:
                    regroups.setdefault(kept, meta)
        survivors = [u for u in request.get("units") or [] if str(u.get("id")) not in gone]
        by_id = {str(u["id"]): u for u in survivors}
        again = [[by_id[i] for i in ids if i in by_id] for ids in regroups]
        again = [group for group in again if group]
        failures: Counter[str] = Counter()
        for group in again:
            for perspective in range(perspectives()):
                try:
                    self._add(group, perspective)
                except Exception as exc:  # counted as on ingest; the forget itself is done
                    print(f"mem0 re-add failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                    failures["add_failed"] += 1
        reinserted = sum(len(g) for g in again)
        self.counts["memories_deleted"] += deleted
        self.counts["units_reinserted"] += reinserted
        return {"deleted": deleted, "units_reinserted": reinserted, "failures": dict(failures)}

    def stats(self, request: dict[str, Any]) -> dict[str, Any]:
        memories = 0
        for user_id in USER_IDS[: perspectives()] if self.memory is not None else ():
            found = self.memory.get_all(filters={"user_id": user_id}, top_k=100000)
            memories += len(found.get("results") or [])
        return {"stats": {"memories": memories, "resets": self.resets, **self.counts}}


def exit_with_parent(interval_s: float = 1.0) -> None:
    """End this worker when the harness process is gone (killed without a ``close``)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval_s)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    exit_with_parent()
    replies = sys.stdout  # the protocol's channel; anything a library prints goes to the log
    sys.stdout = sys.stderr
    worker = Mem0Worker()
    protocol.serve(
        protocol.handlers_of(worker),
        stdout=replies,
    )


if __name__ == "__main__":
    main()
