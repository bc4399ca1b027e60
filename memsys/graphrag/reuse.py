"""GraphRAG-lite's own forget: rebuild over the remaining units, asking the LLM only what changed.

Every LLM output of a build is kept, keyed by its request (``ReplyLedger``). Forgetting re-runs the
build's deterministic steps over the remaining units (text units, merge, Leiden, contexts) and
serves a request from the previous build's outputs when the same request comes again: its inputs
then hold nothing of the forgotten units. What changed is asked again:

- a text unit is re-extracted only when its text is new (a chunk that mixed a forgotten unit with
  kept ones, when ``chunks.size`` packs several units); a text unit of forgotten units only is gone
  with its entity and relationship records;
- an entity description is re-summarised only when its list of descriptions changed (one came from
  a forgotten chunk) and still needs a summary; an entity or relationship left without a source
  chunk is not merged at all;
- Leiden runs again on the new graph (no LLM call, seeded, so an unchanged graph gives the same
  communities); a community report is regenerated only when its context (member entities, their
  descriptions, relationships and sub-reports) changed.

The counts per step (reused, asked) are in the build record's ``reuse``; only the outputs of the
current build are kept, so nothing derived from a forgotten unit survives in the memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memharness.memsys.services.types import ChatRequest, Completion

_KEY_MODEL = "graphrag-reuse"  # the requests' keys only need to agree within one memory


class ReplyLedger:
    """Wraps the LLM facade for one build: records every successful output by its request and,
    when given the previous build's outputs, serves a repeated request from them."""

    def __init__(self, llm: Any, previous: dict[str, Completion] | None = None) -> None:
        self.llm = llm
        self.previous = previous or {}
        self.outputs: dict[str, Completion] = {}
        self.counts: dict[str, dict[str, int]] = {}

    def __getattr__(self, name: str) -> Any:  # the facade's other attributes (meter, model_id)
        return getattr(self.llm, name)

    def complete(
        self, requests: Sequence[ChatRequest], desc: str | None = None
    ) -> list[Completion]:
        """The previous build's output for a repeated request; the LLM, in one batch, for the rest."""
        keys = [r.cache_key(_KEY_MODEL) for r in requests]
        ask = [i for i, k in enumerate(keys) if k not in self.previous]
        replies = self.llm.complete([requests[i] for i in ask], desc=desc) if ask else []
        asked = dict(zip(ask, replies, strict=True))
        out = [asked[i] if i in asked else self.previous[k] for i, k in enumerate(keys)]
        for k, completion in zip(keys, out, strict=True):
            if completion.ok:
                self.outputs[k] = completion
        step = self.counts.setdefault(desc or "llm", {"reused": 0, "asked": 0})
        step["reused"] += len(requests) - len(ask)
        step["asked"] += len(ask)
        return out

    def complete_one(self, request: ChatRequest) -> Completion:
        return self.complete([request])[0]
