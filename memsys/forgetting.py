"""What ``MemorySystem.forget`` shares: the cost of one forget and the check of the ids asked for.

The cost of a forget is read from the LLM facade's meter (``memsys.services.meter``), on the
intrinsic ledger (every reply and embedding the operation used, cached or not), so a warm rerun
reports the same cost as a cold one. Inside an episode the runner's per-episode ledger
(``current_scope``) is read, so episodes running in parallel do not mix their counts. A test double
without a meter reports the calls it counts itself (``calls``) and no tokens.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memharness.memsys.services.meter import current_scope
from memharness.memsys.types import Unit

COST_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "embed_texts")


def _intrinsic_totals(llm: Any) -> dict[str, int] | None:
    """Totals of the intrinsic ledger this call would be counted in (None: no meter to read)."""
    meter = getattr(llm, "meter", None)
    if meter is None:
        calls = getattr(llm, "calls", None)
        return {"calls": int(calls)} if isinstance(calls, int) else None
    ledger = current_scope() or meter
    totals = dict.fromkeys(COST_FIELDS, 0)
    for counts in ledger.intrinsic.values():
        for name in COST_FIELDS:
            totals[name] += int(getattr(counts, name))
    return totals


@contextlib.contextmanager
def measured_cost(llm: Any) -> Iterator[dict[str, Any]]:
    """Fill the yielded mapping with the calls, tokens, embedded texts and seconds of the block."""
    cost: dict[str, Any] = {}
    before, start = _intrinsic_totals(llm), time.perf_counter()
    try:
        yield cost
    finally:
        after = _intrinsic_totals(llm)
        if before is not None and after is not None:
            cost.update({k: after[k] - before.get(k, 0) for k in after})
        cost["seconds"] = time.perf_counter() - start


def forget_targets(unit_ids: Iterable[str], units: Sequence[Unit], system: str) -> set[str]:
    """The ids to forget; an id the memory never received is refused in one line, naming it."""
    ids = set(unit_ids)
    unknown = sorted(ids - {u.id for u in units})
    if unknown:
        raise ValueError(
            f"{system}.forget: {len(unknown)} unit id(s) not in memory (never inserted or already "
            f"forgotten): {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}"
        )
    return ids
