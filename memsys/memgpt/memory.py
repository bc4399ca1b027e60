"""MemGPT-lite (Packer et al. 2023, "MemGPT: Towards LLMs as Operating Systems") as a memory, in two
clearly separate variants (``variant``):

- ``agent`` (MemGPT as the DMR protocol runs it): inserted units go to recall storage (and/or archival
  storage, ``units_to``), never into the context. Per question the LLM drives a function-calling loop
  (``agent.py``) over core memory, recall search and archival search, and the answer is the text it
  passes to ``send_message`` (``answers_itself``). The units its searches showed it are the retrieved
  items (provenance for evidence recall).
- ``flat`` (MemGPT as the CAM paper's App. D describes its baseline: "retrieves query-relevant text
  chunks directly without formatting high-level representations"): cosine top-k over the embedded
  units, answered by the shared answer prompt like every retrieval memory.

Settings are documented in ``conf/memory/memgpt.yaml``; what is ours, the paper's and the code's in
``docs/memgpt.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Any, Literal

import numpy as np
from memharness.memsys.base import MemorySystem, fill_budget
from memharness.memsys.memgpt.agent import Loop as AgentLoop
from memharness.memsys.memgpt.agent import LoopCounts, Outcome
from memharness.memsys.memgpt.calls import Call
from memharness.memsys.memgpt.settings import (
    CoreBlocks,
    Functions,
    Loop,
    Prompts,
    Queue,
    loop_settings,
)
from memharness.memsys.memgpt.stores import (
    ArchivalStore,
    CoreMemory,
    Entry,
    FunctionFailed,
    RecallStore,
    entries_from,
    entries_json,
    page_text,
)
from memharness.memsys.services.types import Completion
from memharness.memsys.settings import Range, group
from memharness.memsys.types import Question, RetrievedItem, Unit, content_id

SPEAKER_ROLES = {"Speaker 1": "user", "Speaker 2": "assistant"}  # MSC's speakers in DMR (ours)


def recall_entries(unit: Unit, roles: dict[str, str]) -> list[Entry]:
    """A unit as recall messages: one per ``<speaker>: <text>`` line whose speaker ``roles`` maps (its
    role, the unit's timestamp; other lines, such as MSC's ``[Session n]``, go before the next turn's
    text), else the whole unit as one message with its ``speaker`` metadata's role (or ``user``)."""
    turns: list[Entry] = []
    pending: list[str] = []
    for line in unit.text.splitlines():
        speaker, sep, text = line.partition(": ")
        if sep and speaker in roles:
            body = " ".join([*pending, text]) if pending else text
            turns.append(Entry(body, roles[speaker], unit.timestamp, unit.id))
            pending = []
        elif turns and not pending:
            turns[-1].text += "\n" + line  # a turn's continuation line
        else:
            pending.append(line)
    if turns:
        return turns
    speaker = str(unit.metadata.get("speaker") or "user")
    return [Entry(unit.text, roles.get(speaker, speaker), unit.timestamp, unit.id)]


def _unit_vectors(vectors: Any) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms > 0, norms, 1.0)


class MemGPT(MemorySystem):
    """MemGPT-lite: the function-calling agent over a memory hierarchy, or the flat variant."""

    online = True
    name = "memgpt"
    # retrieval only: a changed value reuses a snapshot of the stores (core memory is built state)
    retrieval_settings = ("functions", "queue", "loop", "prompts", "top_k")

    def __init__(
        self,
        llm: Any = None,
        embedder: Any = None,
        tokenizer: Any = None,
        *,
        variant: Literal["agent", "flat"] = "agent",
        units_to: Literal["recall", "archival", "both"] = "recall",
        top_k: Annotated[int, Range(1)] = 3,
        speaker_roles: dict[str, str] | None = None,
        core_memory: CoreBlocks | None = None,
        functions: Functions | None = None,
        queue: Queue | None = None,
        loop: Loop | None = None,
        prompts: Prompts | None = None,
    ) -> None:
        # Settings are declared by the annotations of the groups (memgpt/settings.py), checked
        # before a run starts; each group is a section of conf/memory/memgpt.yaml.
        super().__init__(llm, embedder, tokenizer)
        self.variant, self.units_to, self.top_k = variant, units_to, top_k
        self.speaker_roles = dict(SPEAKER_ROLES if speaker_roles is None else speaker_roles)
        self.core_memory, self.functions = (
            group(CoreBlocks, core_memory),
            group(Functions, functions),
        )
        self.queue, self.loop, self.prompts = (
            group(Queue, queue),
            group(Loop, loop),
            group(Prompts, prompts),
        )
        self.loop_settings = loop_settings(self.functions, self.queue, self.loop, self.prompts)
        limit = self.core_memory.char_limit
        self.core = CoreMemory(
            {"persona": self.core_memory.persona, "human": self.core_memory.human}, limit
        )
        for name, text in self.core.blocks.items():
            if len(text) > limit:
                raise ValueError(
                    f"memory.core_memory.{name} holds {len(text)} characters, over "
                    f"memory.core_memory.char_limit ({limit})"
                )
        self.recall = RecallStore()
        self.archival = ArchivalStore()
        self.counts = LoopCounts()
        self._outcome: tuple[str, Outcome] | None = None

    @property
    def answers_itself(self) -> bool:  # type: ignore[override]
        return self.variant == "agent"

    # ------------------------------------------------------------------ insertion
    def add(self, units: Sequence[Unit]) -> None:
        """Agent: each unit becomes recall messages, one per dialogue turn (:func:`recall_entries`),
        and/or an archival passage. Flat: an archival passage (the embedding table)."""
        entries = [
            Entry(u.text, str(u.metadata.get("speaker") or "user"), u.timestamp, u.id)
            for u in units
        ]
        if self.variant == "agent" and self.units_to in ("recall", "both"):
            for u in units:
                for e in recall_entries(u, self.speaker_roles):
                    self.recall.add(e)
        if self.variant == "flat" or self.units_to in ("archival", "both"):
            copies = [replace(e) for e in entries]
            self.archival.add(copies, _unit_vectors(self.embedder.embed([e.text for e in copies])))

    # ------------------------------------------------------------------ retrieval
    def search(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        if self.variant == "flat":
            return self._flat(question, budget_tokens)
        shown: list[Entry] = []
        loop = AgentLoop(self.llm, self.tokenizer.count, self.loop_settings, self.counts)
        self.recall.add(Entry(question, "user"))  # every message goes to recall (Sec. 2.2)
        outcome = loop.run(question, None, self._context, lambda call: self._execute(call, shown))
        if outcome.status == "sent":
            self.recall.add(Entry(outcome.message, "assistant"))
        self._outcome = (question, outcome)
        seen: dict[str, Entry] = {}
        for e in shown:
            if e.unit_id and e.unit_id not in seen:
                seen[e.unit_id] = e
        items = [
            RetrievedItem(
                text=e.text,
                score=1.0 / (rank + 1),
                node_id=content_id("memgpt", e.unit_id, prefix="mg-"),
                source_unit_ids=(e.unit_id,),
            )
            for rank, e in enumerate(seen.values())
        ]
        return fill_budget(items, budget_tokens, self.tokenizer)

    def _flat(self, question: str, budget_tokens: int) -> list[RetrievedItem]:
        if not self.archival.entries:
            return []
        query = _unit_vectors(self.embedder.embed([question]))[0]
        scores = np.stack(self.archival.vectors) @ query
        order = np.argsort(-scores, kind="stable")[: self.top_k]
        items = [
            RetrievedItem(
                text=self.archival.entries[i].text,
                score=float(scores[i]),
                node_id=content_id("memgpt", self.archival.entries[i].unit_id, prefix="mg-"),
                source_unit_ids=(self.archival.entries[i].unit_id,),
            )
            for i in order
        ]
        return fill_budget(items, budget_tokens, self.tokenizer)

    def _context(self) -> str:
        return self.loop_settings.system_prompt.format(
            core_memory=self.core.render(),
            recall_count=len(self.recall.entries),
            archival_count=len(self.archival.entries),
            page_size=self.functions.page_size,
        )

    def _execute(self, call: Call, shown: list[Entry]) -> str:
        """Run one well-formed call other than send_message; its result text for the queue."""
        args = call.arguments
        if call.function == "core_memory_append":
            self.core.append(args["name"], args["content"])
            return "None"
        if call.function == "core_memory_replace":
            self.core.replace(args["name"], args["old_content"], args["new_content"])
            return "None"
        if call.function == "archival_memory_insert":
            vector = _unit_vectors(self.embedder.embed([args["content"]]))
            self.archival.add([Entry(args["content"], "assistant")], vector)
            return "None"
        page = args.get("page", 0)
        if page < 0:
            raise FunctionFailed("page must be 0 or more")
        if call.function == "conversation_search":
            hits, total = self.recall.search(args["query"], page, self.functions.page_size)
            recall = True
        else:  # archival_memory_search
            query = _unit_vectors(self.embedder.embed([args["query"]]))[0]
            hits, total = self.archival.search(query, page, self.functions.page_size)
            recall = False
        shown.extend(hits)
        return page_text(hits, total, page, self.functions.page_size, recall)

    def answer(
        self, question: Question, items: Sequence[RetrievedItem], multiple_choice: bool = False
    ) -> Completion:
        """The message the agent sent for this question; a loop that sent none is a failed answer
        (``answer_failed``, with the reason), never an empty or made-up one."""
        if self._outcome is None or self._outcome[0] != question.text:
            return Completion(text="", error="the agent loop did not run for this question")
        outcome = self._outcome[1]
        forced = bool(outcome.steps and outcome.steps[-1].get("forced"))
        sample = {"agent_steps": outcome.steps, **({"forced_answer": True} if forced else {})}
        fields = {"sample_fields": sample, "prompt": outcome.prompt}
        if outcome.status != "sent":
            return Completion(
                text="", error=f"memgpt {outcome.status}: {outcome.error}", extra=fields
            )
        return Completion(text=outcome.message, extra=fields)

    # ------------------------------------------------------------------ snapshots and stats
    def state(self) -> dict[str, Any]:
        return {
            "recall": entries_json(self.recall.entries),
            "archival": entries_json(self.archival.entries),
            "vectors": np.stack(self.archival.vectors)
            if self.archival.vectors
            else np.zeros((0, 0), dtype=np.float32),
            "core": dict(self.core.blocks),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.recall = RecallStore(entries_from(state["recall"]))
        self.archival = ArchivalStore(entries_from(state["archival"]), list(state["vectors"]))
        self.core.blocks = dict(state["core"])

    def stats(self) -> dict[str, Any]:
        return {
            **super().stats(),
            "variant": self.variant,
            "recall_messages": len(self.recall.entries),
            "archival_passages": len(self.archival.entries),
            "core_chars": {k: len(v) for k, v in self.core.blocks.items()},
            **({"agent": self.counts.to_json()} if self.variant == "agent" else {}),
        }
