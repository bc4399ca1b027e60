"""The small interface every memory system implements.

A system is built per episode by Hydra from ``conf/memory/<name>.yaml``
(``_target_`` plus hyperparameters) with three shared services passed in:
``llm`` (``memsys.backends.llm.LLM``), ``embedder``
(``memsys.backends.embed.Embedder``) and ``tokenizer``
(``memsys.tokens.Tokenizer``).

Settings are declared by the constructor's type hints (``memsys.settings``; see docs/config.md).
A system that builds part of its structure without an LLM output it needed (a failed or unusable
summary, aggregation, extraction, rating) calls ``self.degrade(kind)``: the runner flags every
question answered from the memory after that as ``degraded`` and counts them.

Snapshots (``eval/run/snapshots.py``): the runner saves a built memory and loads it in a later run whose
construction is identical. ``retrieval_settings`` names the settings that do not change what is
built (retrieval, traversal, reporting; merged along the class hierarchy, dotted paths for a key
inside a mapping setting): changing them reuses the snapshot, changing any other setting rebuilds.
Hierarchical memories are saved with ``save``/``load``; a flat memory takes part by implementing
``state()`` / ``load_state()`` (everything ``add``/``build`` produced; numpy arrays allowed as
top-level values).

Forgetting (docs/forgetting.md): ``forget(unit_ids)`` removes units and everything derived from
them. The default rebuilds the memory from the remaining units with a fresh instance built from
the same constructor arguments (counted in ``rebuilds`` with ``"forget": True``); a system whose
method allows better overrides ``drop_units``. Every forget is recorded in ``forgets`` with its
cost (LLM calls, tokens, embedded texts, seconds).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from memharness.memsys.forgetting import forget_targets, measured_cost
from memharness.memsys.services.types import Completion
from memharness.memsys.types import FORGET_KEY, FORGET_METHOD_KEY, Question, RetrievedItem, Unit

# the run folder while a run is going (set by the runner): a memory's working files go under it
RUN_FOLDER: ContextVar[Path | None] = ContextVar("run_folder", default=None)


class MemorySystem(ABC):
    """Insert batches of units; retrieve items with provenance under a token budget.

    ``online`` systems update their structure on every ``insert``. Offline
    systems (``online = False``) only buffer inserts; the structure is (re)built
    on the first ``retrieve`` after new inserts, and each rebuild is recorded in
    ``stats()["rebuilds"]``.
    """

    online: bool = True
    name: str = "memory"
    # A memory that produces the answer itself (GraphRAG's global search) sets this; the runner then
    # calls ``answer`` right after its retrieval instead of the shared answer prompt.
    answers_itself: bool = False
    # Settings that only shape retrieval, never what is built: a snapshot of the built memory is
    # reused across them (see the module docstring and docs/config.md).
    retrieval_settings: tuple[str, ...] = ()
    # An oracle reads the question's gold annotations instead of searching memory (the gold-evidence
    # row): the runner marks its runs ("oracle" in metrics.json) and reports never rank them.
    oracle: bool = False

    def __new__(cls, *args: Any, **kwargs: Any) -> MemorySystem:
        # The constructor's arguments, kept so that ``rebuild_fresh`` can make an identical empty
        # memory (the default forget) without knowing the system's settings.
        memory = super().__new__(cls)
        memory._construction = (args, dict(kwargs))
        return memory

    def __init__(self, llm: Any = None, embedder: Any = None, tokenizer: Any = None) -> None:
        self.llm = llm
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.units: list[Unit] = []
        self._pending = False
        self.rebuilds: list[dict[str, Any]] = []
        self.degradation: Counter[str] = Counter()  # kind -> count, see degrade()
        self.forgets: list[dict[str, Any]] = []  # one record per forget() call, with its cost
        self.forgotten_units = 0  # units removed by forget(): the insert count is units + these

    @classmethod
    def dataset_problem(cls, dataset: Any) -> str | None:
        """Why this memory cannot serve the loaded ``dataset`` (None: it can); the runner stops
        the run with it before any episode (e.g. an oracle on data without gold evidence)."""
        return None

    def degrade(self, kind: str, count: int = 1) -> None:
        """Record that the memory was built without ``count`` LLM outputs of ``kind`` that it needed
        (e.g. ``aggregation_failed``, ``summary_failed``, ``extraction_unparsed``): the structure is
        still usable but not what the method specifies. Call it where the failure is handled."""
        if count > 0:
            self.degradation[kind] += int(count)

    @property
    def degraded(self) -> dict[str, int]:
        """What is missing so far (empty when the memory is as the method specifies)."""
        return {k: v for k, v in self.degradation.items() if v}

    def insert(self, units: Sequence[Unit]) -> None:
        """Add a batch of units to memory; a forget request in it (``FORGET_KEY`` in a unit's
        metadata) forgets the units it names at its place in the stream."""
        units, start = list(units), 0
        for i, unit in enumerate(units):
            if FORGET_KEY in unit.metadata:
                self._insert(units[start:i])
                self.forget(unit.metadata[FORGET_KEY], unit.metadata.get(FORGET_METHOD_KEY, "own"))
                start = i + 1
        self._insert(units[start:])

    def _insert(self, units: list[Unit]) -> None:
        if not units:
            return
        self.units.extend(units)
        if self.online:
            self.add(units)
        else:
            self._pending = True

    def retrieve(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Return the items to show the answerer for ``question``, within ``budget_tokens``."""
        self.ensure_built()
        return self.search(question, budget_tokens)

    def retrieve_question(self, question: Question, budget_tokens: int) -> list[RetrievedItem]:
        """What the runner calls: ``retrieve`` on the question's text. Only an oracle overrides it
        (it reads the question's gold evidence, which a memory must never see)."""
        return self.retrieve(question.text, budget_tokens)

    def ensure_built(self) -> None:
        """Offline systems: rebuild if units arrived since the last build (the runner
        calls this under the "build" stage so rebuild time is not counted as retrieval)."""
        if not self.online and self._pending:
            start = time.perf_counter()
            self.build(self.units)
            self._pending = False
            self.rebuilds.append({"units": len(self.units), "seconds": time.perf_counter() - start})

    def forget(
        self, unit_ids: Iterable[str], method: Literal["own", "rebuild"] = "own"
    ) -> dict[str, Any]:
        """Remove the units ``unit_ids`` and everything derived from them; return the cost record.

        ``method="own"`` uses the system's ``drop_units`` (the default rebuild when it has none);
        ``"rebuild"`` forces the rebuild, the reference a system's own way is compared with. An
        id not in memory is refused (``ValueError``) before anything changes."""
        ids = forget_targets(unit_ids, self.units, self.name)
        with measured_cost(self.llm) as cost:
            done = self.drop_units(ids) if method == "own" else self.rebuild_fresh(ids)
        record = {"units": len(ids), "method": done, **cost}
        self.forgets.append(record)
        return record

    def drop_units(self, unit_ids: set[str]) -> str:
        """Remove ``unit_ids`` from ``self.units`` (``remove_units``) and what was built from them;
        return the method's name. The default rebuilds from the remaining units; an offline memory
        with inserts not built yet only drops them (its next build, due anyway, leaves them out)."""
        if not self.online and self._pending:
            self.remove_units(unit_ids)
            return "before_build"
        return self.rebuild_fresh(unit_ids)

    def remove_units(self, unit_ids: set[str]) -> list[bool]:
        """Drop the units from ``self.units``; return the keep mask over the units held before."""
        keep = [u.id not in unit_ids for u in self.units]
        self.units = [u for u, k in zip(self.units, keep, strict=True) if k]
        self.forgotten_units += len(keep) - len(self.units)
        return keep

    def rebuild_fresh(self, unit_ids: set[str]) -> str:
        """Replace every built structure by an empty memory of the same construction, then insert
        the remaining units again (online) or build over them (offline). Nothing of the old
        structure survives, so nothing derived from a forgotten unit can."""
        self.remove_units(unit_ids)
        self.close()  # what the old memory holds outside the process goes with it
        args, kwargs = self._construction
        fresh = type(self)(*args, **kwargs)
        kept = ("units", "rebuilds", "forgets", "forgotten_units")
        kept_values = {k: self.__dict__[k] for k in kept}
        self.__dict__.clear()
        self.__dict__.update(fresh.__dict__)
        self.__dict__.update(kept_values)
        start = time.perf_counter()
        if self.units and self.online:
            self.add(self.units)
        elif self.units:
            self.build(self.units)
        self._pending = False
        self.rebuilds.append(
            {"units": len(self.units), "seconds": time.perf_counter() - start, "forget": True}
        )
        return "rebuild"

    def add(self, units: Sequence[Unit]) -> None:
        """Online systems: integrate new units into the structure."""
        raise NotImplementedError(f"{type(self).__name__} is online but does not implement add()")

    def build(self, units: Sequence[Unit]) -> None:
        """Offline systems: build the structure from all units inserted so far."""
        raise NotImplementedError(
            f"{type(self).__name__} is offline but does not implement build()"
        )

    @abstractmethod
    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        """Rank memory for ``question`` and fill ``budget_tokens``."""

    def answer(
        self, question: Question, items: Sequence[RetrievedItem], multiple_choice: bool = False
    ) -> Completion:
        """Self-answering systems only: answer ``question`` from the ``items`` their retrieval returned
        (an option letter when ``multiple_choice``). A failed call comes back with ``error`` set; put the
        prompt sent in ``extra["prompt"]`` so the run folder records it, and what the question's record
        should carry in ``extra["sample_fields"]``, written to its ``memory`` mapping (e.g.
        ``{"partial": {...}}`` when the answer stands on only some of the LLM outputs its retrieval
        asked for; the runner counts ``partial``)."""
        raise NotImplementedError(
            f"{type(self).__name__} sets answers_itself but does not implement answer()"
        )

    def stats(self) -> dict[str, Any]:
        """Structure diagnostics for ``memory_stats.json``."""
        return {
            "units": len(self.units),
            "rebuilds": list(self.rebuilds),
            "degradation": self.degraded,
            **({"forgets": list(self.forgets)} if self.forgets else {}),
        }

    def close(self) -> None:
        """Release what the memory holds outside the process (a product's worker and endpoint); the
        runner calls it when the episode ends, after ``stats``."""
        return None

    def state(self) -> dict[str, Any]:
        """What ``add``/``build`` produced beyond ``units`` (a flat memory implements it to be snapshotted)."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore what ``state()`` returned."""
        return None


def fill_budget(
    items: Sequence[RetrievedItem],
    budget_tokens: int,
    tokenizer: Any,
    stop_at_first_overflow: bool = False,
) -> list[RetrievedItem]:
    """Keep items in the given order while their token total stays within the budget.

    By default an item that would overflow is skipped and later, shorter items
    may still fit; ``stop_at_first_overflow`` stops instead (RAPTOR's code).
    """
    kept, used = [], 0
    for item in items:
        n = item.tokens or tokenizer.count(item.text)
        if used + n > budget_tokens:
            if stop_at_first_overflow:
                break
            continue
        kept.append(item if item.tokens else _with_tokens(item, n))
        used += n
    return kept


def _with_tokens(item: RetrievedItem, n: int) -> RetrievedItem:
    from dataclasses import replace

    return replace(item, tokens=n)
