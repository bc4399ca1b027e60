"""A memory product (mem0, A-Mem, ...) as a ``MemorySystem``: a worker process in the product's venv.

Built once per episode by the runner, like every memory. On the first insert it starts the harness
endpoint (``endpoint.py``: the run's LLM and embedder on 127.0.0.1) and the worker script
(``workers/<product>_worker.py``) under the product's own Python, says ``hello`` (versions, clock),
``reset`` (an empty memory), then ``ingest``s every insert batch: units with their ids, text, speaker,
timestamp and session, so search results carry the ids of the units they came from (evidence recall).
``search`` asks the worker for ``top_k`` memories per question and keeps them in the product's order
under the token budget (``fill_budget``). ``close`` (called by the runner when the episode ends)
stops the worker and the endpoint and removes the store.

The worker gets a minimal environment and the endpoint's token as its ``OPENAI_API_KEY``, runs in a
session of its own and is killed with everything it started on every exit path (``process.py``).
Its store is a folder under the run folder (``<run>/product_stores/``; the system temp folder only
outside a run) and is removed after the episode unless ``keep_store`` (its path is then in
``memory_stats``). Each request carries an id: a stdout line that is not the reply to the pending
request is logged and counted, never used; search hits are type-checked and their ``source_ids``
must name units sent in this episode (others counted, not used).

Failures are counted, never dropped: an ingest the worker reports as (partly) failed, or answers
with an error, is a degradation of the memory (``degrade``: every later answer is flagged); a search
error raises, so the runner records ``retrieve_failed``; a worker that dies raises with the tail of
its log. A product whose virtualenv is missing is refused in one line naming the make target.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import shutil
import subprocess
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.products.endpoint import Endpoint
from memharness.memsys.products.process import exited, kill_group, spawn_worker, worker_env
from memharness.memsys.products.records import retrieved_item, store_folder, unit_record
from memharness.memsys.products.venv import REPO, venv_path, venv_problem, venv_python
from memharness.memsys.services.types import ConfigError
from memharness.memsys.settings import Range
from memharness.memsys.types import RetrievedItem, Unit

WORKERS = Path(__file__).resolve().parent / "workers"
LOG_TAIL = 2000  # characters of the worker's log quoted when it dies
CLOSE_WAIT_S = 10.0  # seconds a worker has to exit after ``close`` before it is killed
log = logging.getLogger(__name__)
__all__ = ["REPO", "WORKERS", "ProductMemory", "WorkerError", "venv_path", "venv_python"]


class WorkerError(RuntimeError):
    """The worker answered an error, or died; the message is one line."""


class ProductMemory(MemorySystem):
    """A product driven over the worker line protocol (``workers/protocol.py``)."""

    online = True
    name = "product"

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        product: str = "mem0",
        worker: str | None = None,
        python: str | None = None,
        top_k: Annotated[int, Range(1)] = 10,
        options: dict[str, Any] | None = None,
        timeout_s: Annotated[float, Range(1)] = 600.0,
        keep_store: bool = False,
        prompt_tokens: Annotated[int, Range(1)] | None = None,
    ) -> None:
        super().__init__(llm, embedder, tokenizer)
        self.prompt_tokens = prompt_tokens  # checked before the run (``prompt_needs``), not here
        self.product, self.top_k, self.options = product, top_k, dict(options or {})
        self.timeout_s, self.keep_store = timeout_s, keep_store
        self.python = venv_python(product, python)
        self.worker = Path(worker) if worker else WORKERS / f"{product}_worker.py"
        if not self.worker.is_absolute() and not self.worker.exists():
            self.worker = WORKERS / self.worker
        if not self.worker.exists():
            raise ConfigError(f"memory.worker: no worker script {self.worker}")
        self.counters: Counter[str] = Counter()
        self.hello: dict[str, Any] = {}
        self.errors: list[str] = []  # the worker's error replies, in order (first 20 kept)
        self.endpoint: Endpoint | None = None
        self.store: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        self._pending: str | None = None  # the op whose reply has not come (interrupted: kill)
        self._unit_ids: set[str] = set()  # the units sent this episode (valid source_ids)
        self._last_stats: dict[str, Any] = {}
        self._finalizer: weakref.finalize | None = None

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """Before anything loads: the product's virtualenv is installed and runnable."""
        problem = venv_problem(str(settings.get("product", "mem0")), settings.get("python"))
        if problem is not None:
            yield "python" if settings.get("python") else "product", problem

    @classmethod
    def prompt_needs(cls, settings: dict[str, Any], dataset: dict[str, Any], count: Any):
        """The product's longest prompt as its YAML declares it (``prompt_tokens``, measured: the
        product's prompts live in its own venv) and its reply cap (``options.max_tokens``), so the
        run check (``eval/run/validate.py``) refuses a fixed context that would cut every call."""
        prompt = settings.get("prompt_tokens")
        if prompt is None:
            return
        output = (settings.get("options") or {}).get("max_tokens") or 0
        yield (
            f"prompts (up to {prompt} tokens: memory.prompt_tokens)",
            "memory.options.max_tokens",
            int(prompt),
            int(output),
        )

    # -- lifetime ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the endpoint and the worker, say hello and reset (once per episode)."""
        if self._proc is not None:
            return
        self.endpoint = Endpoint(self.llm, self.embedder, self.tokenizer)
        base_url = self.endpoint.start()
        self.store = store_folder(self.product)
        env = worker_env(
            os.environ,  # PYTHONPATH is not passed: the product sees its own venv only
            {
                "OPENAI_BASE_URL": base_url,
                "OPENAI_API_KEY": self.endpoint.token,  # the endpoint serves this token only
                "MEMHARNESS_LLM_MODEL": self.llm.model_id,
                "MEMHARNESS_EMBED_MODEL": self.embedder.model_id,
                "MEMHARNESS_EMBED_DIM": str(self._embed_dim()),
                "MEMHARNESS_STORE_DIR": str(self.store / "store"),
                "MEMHARNESS_PRODUCT_OPTIONS": json.dumps(self.options, sort_keys=True),
                "MEMHARNESS_WATCHDOG": "1",  # protocol.serve: die with the harness
                "PYTHONUNBUFFERED": "1",
            },
        )
        (self.store / "store").mkdir()
        argv = [str(self.python), str(self.worker)]
        try:
            self._proc = spawn_worker(argv, env, self.store, self.store / "worker.log")
        except OSError as err:  # a corrupt venv: every question would fail the same way
            self.endpoint.stop()
            raise ConfigError(
                f"memory={self.product}: cannot start {self.python} ({type(err).__name__}: "
                f"{err.strerror or err}); the virtualenv looks broken, rebuild it: remove "
                f"{self.python.parents[1]} and run `make product-{self.product}`"
            ) from None
        self._finalizer = weakref.finalize(self, _kill, self._proc, self.endpoint)
        threading.Thread(target=_pump, args=(self._proc.stdout, self._lines), daemon=True).start()
        try:
            self.hello = self._request({"op": "hello"})
        except WorkerError as err:  # died on start: an import that fails, a damaged venv
            raise WorkerError(
                f"{err}; if the virtualenv is damaged, rebuild it: remove "
                f"{self.python.parents[1]} and run `make product-{self.product}`"
            ) from None
        self.hello.pop("ok", None)
        self._request({"op": "reset"})

    def close(self) -> None:
        """Stop the worker (``close``, then kill if it lingers), the endpoint, and drop the store."""
        if self._proc is not None:
            if self._pending is None and self._alive():  # not interrupted mid-request
                self._last_stats = self._product_stats()
                try:
                    self._send({"op": "close", "id": self._new_id()})
                    exited(self._proc, CLOSE_WAIT_S)
                except WorkerError:
                    pass
            kill_group(self._proc)  # whatever the worker started goes with it
            self._proc = None
        if self.endpoint is not None:
            self.endpoint.stop()
        if self._finalizer is not None:
            self._finalizer.detach()
        if self.store is not None and not self.keep_store:
            shutil.rmtree(self.store, ignore_errors=True)
            if self.store.parent.name == "product_stores":  # the last one out: no empty folder
                with contextlib.suppress(OSError):
                    self.store.parent.rmdir()

    # -- the memory interface -----------------------------------------------------------------------
    def add(self, units: Sequence[Unit]) -> None:
        """Ingest one batch; failures the worker reports become counted degradations."""
        self.start()
        payload = [unit_record(u) for u in units]
        self._unit_ids.update(u.id for u in units)
        self.counters["ingest_requests"] += 1
        self.counters["units_sent"] += len(payload)
        try:
            reply = self._request({"op": "ingest", "units": payload})
        except WorkerError as err:
            if not self._alive():
                raise
            self.counters["ingest_errors"] += 1
            self.degrade("ingest_failed", len(payload))
            self._note(str(err))
            return
        self.counters["added"] += int(reply.get("added", 0))
        for kind, count in (reply.get("failures") or {}).items():
            self.counters[f"ingest_{kind}"] += int(count)
            self.degrade(kind, int(count))

    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """The product's memories for ``question`` in its order, within the budget."""
        if self._proc is None:  # nothing was inserted: the product holds nothing
            self.counters["searches_empty_memory"] += 1
            return []
        self.counters["searches"] += 1
        try:
            reply = self._request({"op": "search", "query": question, "k": self.top_k})
        except WorkerError as err:
            self.counters["search_errors"] += 1
            self._note(str(err))
            raise
        hits = reply.get("items")
        if not isinstance(hits, list):
            self.counters["search_replies_invalid"] += 1
            raise WorkerError(f"{self.product} worker, search: items is not a list: {hits!r:.200}")
        items = [
            item
            for hit in hits
            if (item := retrieved_item(hit, self.product, self._unit_ids, self.counters))
        ]
        self.counters["items_returned"] += len(items)
        self.counters["items_without_source"] += sum(1 for i in items if not i.source_unit_ids)
        kept = fill_budget(items, budget_tokens, self.tokenizer)
        self.counters["items_cut_by_budget"] += len(items) - len(kept)
        return kept

    def drop_units(self, unit_ids: set[str]) -> str:
        """The product's own delete (the worker's ``forget``: mem0's ``delete`` of the memories
        extracted from the units, ...), sent with the units still held so the worker can add again
        the other units of what it deleted. A worker without ``forget`` is rebuilt (the base
        class's fresh instance); a ``forget`` the worker refuses is counted and rebuilt too, so
        nothing derived from a forgotten unit stays. The forgotten ids stay valid ``source_ids``:
        a hit still naming one is kept and scored as the leak it is, not filtered out."""
        if self._proc is None:
            self.remove_units(unit_ids)
            return "before_build"
        if "forget" not in (self.hello.get("ops") or ()):
            return self._rebuild_keeping_counts(unit_ids)
        self.counters["forget_requests"] += 1
        remaining = [unit_record(u) for u in self.units if u.id not in unit_ids]
        try:
            reply = self._request(
                {"op": "forget", "unit_ids": sorted(unit_ids), "units": remaining}
            )
        except WorkerError as err:
            if not self._alive():
                raise
            self.counters["forget_errors"] += 1
            self._note(str(err))
            return self._rebuild_keeping_counts(unit_ids)
        self.remove_units(unit_ids)
        self.counters["forget_deleted"] += int(reply.get("deleted", 0))
        self.counters["forget_units_reinserted"] += int(reply.get("units_reinserted", 0))
        for kind, count in (reply.get("failures") or {}).items():
            self.counters[f"forget_{kind}"] += int(count)
            self.degrade(kind, int(count))
        return "product_delete"

    def _rebuild_keeping_counts(self, unit_ids: set[str]) -> str:
        """The base rebuild (a new worker), keeping this episode's adapter counters and error
        lines: the fresh instance starts from zero, and a refused forget must stay counted."""
        counters, errors = Counter(self.counters), list(self.errors)
        done = self.rebuild_fresh(unit_ids)
        self.counters.update(counters)
        self.errors = (errors + self.errors)[:20]
        return done

    def stats(self) -> dict[str, Any]:
        """The base stats, the product's own (memory count, ...) and the adapter's counters."""
        product_stats = self._product_stats() if self._proc is not None else self._last_stats
        kept = {"store": str(self.store)} if self.keep_store and self.store is not None else {}
        return {
            **super().stats(),
            **kept,
            "product": {**self.hello, "interpreter": str(self.python)},
            "product_stats": product_stats,
            "adapter": dict(self.counters),
            "endpoint": self.endpoint.stats() if self.endpoint is not None else {},
            "worker_errors": list(self.errors),
        }

    # -- the protocol -----------------------------------------------------------------------------
    def _product_stats(self) -> dict[str, Any]:
        try:
            return dict(self._request({"op": "stats"}).get("stats", {}))
        except WorkerError as err:
            self.counters["stats_errors"] += 1
            self._note(str(err))
            return {}

    def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request under the caller's stage and ledger; the reply, or ``WorkerError``."""
        self.endpoint.use_context()
        request = {**request, "id": self._new_id()}
        self._send(request)
        self._pending = request["op"]
        reply = self._receive(request["op"], request["id"])
        reply.pop("id", None)
        self._pending = None
        if self.endpoint.aborted is not None:
            raise self.endpoint.aborted
        if not reply.get("ok"):
            self.counters["worker_errors"] += 1
            raise WorkerError(f"{self.product} worker, {request['op']}: {reply.get('error')}")
        return reply

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _send(self, request: dict[str, Any]) -> None:
        if not self._alive():
            raise WorkerError(self._death())
        try:
            self._proc.stdin.write((json.dumps(request, ensure_ascii=False) + "\n").encode())
            self._proc.stdin.flush()
        except OSError:
            raise WorkerError(self._death()) from None

    def _receive(self, op: str, ident: int) -> dict[str, Any]:
        """The worker's reply to request ``ident``. It may work for long (one model call per
        product step): it is stopped only after ``timeout_s`` with no reply and no model call in
        flight or made, or at once when the run is ending (Ctrl-C left the main thread)."""
        sent = time.monotonic()
        while True:
            try:
                line = self._lines.get(timeout=0.5)
            except queue.Empty:
                if not self._alive():
                    raise WorkerError(self._death()) from None
                if not threading.main_thread().is_alive():  # interrupted: the run is ending
                    kill_group(self._proc)
                    raise WorkerError(
                        f"{self.product} worker stopped: the run was interrupted"
                    ) from None
                stalled = min(time.monotonic() - sent, self.endpoint.idle_s())
                if stalled > self.timeout_s:
                    kill_group(self._proc)
                    self.counters["worker_timeouts"] += 1
                    raise WorkerError(
                        f"{self.product} worker made no progress on {op} for memory.timeout_s="
                        f"{self.timeout_s:g}s (no reply, no model call); it was stopped"
                    ) from None
                continue
            if line is None:  # stdout closed: the worker is gone
                exited(self._proc, 10)
                raise WorkerError(self._death())
            try:
                reply = json.loads(line)
            except json.JSONDecodeError:
                reply = None
            if isinstance(reply, dict) and reply.get("id") == ident:
                return reply
            # a library's print, native code, a child process: not the reply we wait for
            self.counters["worker_stray_lines"] += 1
            log.warning(
                "%s worker: a stdout line that is not the reply to %s #%d: %.200s",
                self.product,
                op,
                ident,
                line.strip(),
            )

    def _alive(self) -> bool:
        return self._proc is not None and not exited(self._proc, 0)

    def _death(self) -> str:
        code = None
        if self._proc is not None and exited(self._proc, 0):
            code = self._proc.poll()
        tail = ""
        if self.store is not None and (self.store / "worker.log").exists():
            text = (self.store / "worker.log").read_text(encoding="utf-8", errors="replace")
            lines = [ln for ln in text.strip().splitlines() if ln.strip()]
            tail = lines[-1][:LOG_TAIL] if lines else ""
        self.counters["worker_deaths"] += 1
        return f"{self.product} worker exited (code {code}); its last log line: {tail or '(none)'}"

    def _note(self, message: str) -> None:
        if len(self.errors) < 20:
            self.errors.append(message)

    def _embed_dim(self) -> int:
        """The embedder's dimension (declared by its backend, else from one cached probe)."""
        declared = getattr(getattr(self.embedder, "backend", None), "dimensions", None)
        if isinstance(declared, int) and declared > 0:
            return declared
        dim = getattr(self.embedder, "dim", None)
        if isinstance(dim, int) and dim > 0:
            return dim
        return int(self.embedder.embed(["dimension probe"]).shape[1])


def _pump(stream: Any, lines: queue.Queue) -> None:
    """Move the worker's stdout lines onto a queue (None at the end) so reads can time out."""
    for raw in iter(stream.readline, b""):
        lines.put(raw.decode("utf-8", errors="replace"))
    lines.put(None)


def _kill(proc: subprocess.Popen, endpoint: Endpoint) -> None:
    """Last resort when a memory is dropped without ``close``: no orphan process, no open port."""
    kill_group(proc)
    endpoint.stop(deadline_s=2)
