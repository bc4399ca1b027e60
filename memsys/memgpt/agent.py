"""MemGPT's control loop for one question (Packer et al. 2023, Sec. 2.2-2.3; ``memgpt/agent.py``).

The prompt is the system instructions with the working context (core memory) and memory statistics,
then the FIFO queue (its first entry the recursive summary of evicted messages, when there is one).
Each step the LLM replies with one function call (``calls.py``); the result goes back into the queue.
A call with ``request_heartbeat`` true, a failed function or a malformed call hands control back to
the LLM (the heartbeat); any other call ends the turn. ``send_message`` is the answer. Before every
step the prompt is measured with the harness tokenizer: over ``warn_fraction`` of the context window a
memory-pressure alert goes into the queue (once until the next flush); at 100 % the oldest messages
are evicted into the rewritten recursive summary.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.memgpt.calls import Call, Malformed, call_schema, parse_call
from memharness.memsys.memgpt.stores import FunctionFailed
from memharness.memsys.services.types import ChatRequest

SCHEMA = call_schema()
FINAL_SCHEMA = call_schema(("send_message",))
# the code's searches are exempt from the return-length cut: their paging bounds them (letta agent.py)
PAGED = frozenset({"conversation_search", "archival_memory_search"})
RESULT_HEAD_CHARS = 120  # of a function result kept in the step record (samples.jsonl agent_steps)


@dataclass(frozen=True)
class LoopSettings:
    """The loop's settings and texts (see conf/memory/memgpt.yaml for each)."""

    system_prompt: str
    summary_prompt: str
    warning_message: str
    heartbeat_message: str
    failed_heartbeat_message: str
    context_window: int
    warn_fraction: float
    evict_fraction: float
    keep_last: int
    max_steps: int
    step_max_tokens: int
    summary_max_tokens: int
    function_return_chars: int
    temperature: float
    final_send: bool = False
    final_step_message: str = ""


@dataclass
class LoopCounts:
    """What the loops of one memory did, over every question (``stats()["agent"]``)."""

    questions: int = 0
    steps: int = 0
    answered: int = 0
    malformed: Counter = field(default_factory=Counter)  # kind -> count
    function_errors: int = 0  # well-formed calls the function refused (text not found, limit)
    functions: Counter = field(default_factory=Counter)  # function -> well-formed calls
    heartbeats: int = 0  # control handed back: request_heartbeat, failed or malformed calls
    step_cap: int = 0  # questions that reached max_steps without a message
    forced_final_sends: int = (
        0  # answers sent on the last step, where only send_message was allowed
    )
    yielded: int = 0  # questions whose agent ended its turn without sending a message
    call_failed: int = 0  # questions whose LLM call failed after the backend's retries
    warnings: int = 0
    flushes: int = 0
    evicted: int = 0
    summary_failed: int = 0
    over_window: int = 0  # steps sent over the window because nothing more could be evicted
    results_cut: int = 0  # function results cut at function_return_chars (searches never are)
    steps_per_question: list = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        n = len(self.steps_per_question)
        malformed = sum(self.malformed.values())
        return {
            "questions": self.questions,
            "steps": self.steps,
            "answered": self.answered,
            "malformed": dict(self.malformed),
            "malformed_total": malformed,
            "malformed_rate": malformed / self.steps if self.steps else None,
            "function_errors": self.function_errors,
            "functions": dict(self.functions),
            "heartbeats": self.heartbeats,
            "step_cap": self.step_cap,
            "forced_final_sends": self.forced_final_sends,
            "yielded": self.yielded,
            "call_failed": self.call_failed,
            "warnings": self.warnings,
            "flushes": self.flushes,
            "evicted": self.evicted,
            "summary_failed": self.summary_failed,
            "over_window": self.over_window,
            "results_cut": self.results_cut,
            "mean_steps_per_question": sum(self.steps_per_question) / n if n else None,
            "max_steps_per_question": max(self.steps_per_question, default=None),
        }


@dataclass
class Outcome:
    """How one question's loop ended: ``sent`` (``message`` is the answer), ``step_cap``,
    ``yielded`` or ``call_failed``; ``steps`` is its step record; ``prompt`` the last one sent."""

    status: str
    message: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    prompt: str = ""
    error: str = ""


def packaged(kind: str, message: str | None, time: str | None, status: str | None = None) -> str:
    """A queue entry the harness writes (a user message, a function result, an alert), as JSON."""
    body: dict[str, Any] = {"type": kind} if status is None else {"status": status}
    body["message"] = message
    if time:
        body["time"] = time
    return json.dumps(body, ensure_ascii=False)


class Loop:
    """The FIFO queue, the recursive summary and the step loop over shared memories.

    ``execute(call)`` runs a well-formed call other than ``send_message`` and returns its result
    text (raising ``FunctionFailed``); ``context()`` renders the system message with core memory.
    """

    def __init__(
        self,
        llm: Any,
        count_tokens: Callable[[str], int],
        settings: LoopSettings,
        counts: LoopCounts,
    ) -> None:
        self.llm, self.count, self.s, self.counts = llm, count_tokens, settings, counts
        self.queue: list[tuple[str, str]] = []
        self.summary = ""
        self.hidden = 0  # messages evicted so far
        self.warned = False

    # ------------------------------------------------------------------ the prompt
    def messages(self, system: str) -> tuple[tuple[str, str], ...]:
        """System, then the summary and the queue; consecutive messages of one role are joined
        (chat templates that require alternating roles accept the result)."""
        out: list[tuple[str, str]] = [("system", system)]
        entries = list(self.queue)
        if self.summary or self.hidden:
            note = (
                f"{self.hidden} earlier messages were removed from view to stay within the context "
                f"window; they remain in recall memory. Summary of them: {self.summary or '(none)'}"
            )
            entries.insert(0, ("user", packaged("system_alert", note, None)))
        for role, text in entries:
            if out[-1][0] == role and role != "system":
                out[-1] = (role, out[-1][1] + "\n" + text)
            else:
                out.append((role, text))
        return tuple(out)

    def tokens(self, system: str) -> int:
        return sum(self.count(text) for _, text in self.messages(system)) + self.s.step_max_tokens

    # ------------------------------------------------------------------ memory pressure
    def pressure(self, system: str) -> None:
        """Flush at 100 % of the window, else warn once above ``warn_fraction``."""
        window = self.s.context_window
        if self.tokens(system) > window:
            self.flush()
            if self.tokens(system) > window:
                self.counts.over_window += 1
        if not self.warned and self.tokens(system) > self.s.warn_fraction * window:
            self.warned = True
            self.counts.warnings += 1
            self.queue.append(("user", packaged("system_alert", self.s.warning_message, None)))

    def cutoff(self) -> int:
        """How many of the oldest messages to evict, by the code's rule (``summarize_messages_inplace``):
        walk the candidates (all but the last ``keep_last``) until their tokens pass ``evict_fraction``
        of the queue's, evict the ones before the message that passed it, and evict that one too only
        when it is a user-side message (so an assistant call is never evicted without its result)."""
        candidates = self.queue[: max(0, len(self.queue) - self.s.keep_last)]
        if not candidates:
            return 0
        sizes = [self.count(text) for _, text in self.queue]
        target = int(self.s.evict_fraction * sum(sizes))  # the code's int(...)
        cut, so_far = 0, 0
        for i in range(len(candidates)):
            cut = i
            so_far += sizes[i]
            if so_far > target:
                break
        if cut < len(self.queue) and self.queue[cut][0] == "user":
            cut += 1
        return cut

    def flush(self) -> None:
        """Evict the oldest messages (:meth:`cutoff`) into a rewritten summary: the previous summary
        plus what was evicted. Nothing to evict: no call (the prompt stays over, counted)."""
        cut = self.cutoff()
        if not cut:
            return
        evicted, self.queue = self.queue[:cut], self.queue[cut:]
        lines = [f"{role}: {text}" for role, text in evicted]
        if self.summary:
            lines.insert(0, f"summary of earlier messages: {self.summary}")
        request = ChatRequest.user(
            self.s.summary_prompt.format(messages="\n".join(lines)),
            max_tokens=self.s.summary_max_tokens,
            temperature=self.s.temperature,
        )
        completion = self.llm.complete_one(request)
        self.counts.flushes += 1
        self.counts.evicted += len(evicted)
        self.hidden += len(evicted)
        if completion.ok and completion.text.strip():
            self.summary = completion.text.strip()
        else:  # the evicted messages stay in recall; the old summary stands (counted)
            self.counts.summary_failed += 1
        self.warned = False

    # ------------------------------------------------------------------ the loop
    def run(
        self,
        user_message: str,
        time: str | None,
        context: Callable[[], str],
        execute: Callable[[Call], str],
    ) -> Outcome:
        """Run the question's turn until a message is sent, the turn ends or the step cap."""
        s, counts = self.s, self.counts
        counts.questions += 1
        self.queue.append(("user", packaged("user_message", user_message, time)))
        steps: list[dict[str, Any]] = []
        outcome: Outcome | None = None
        prompt = ""
        for step in range(s.max_steps):
            # ours (final_send): the last allowed step may only send a message; counted, and marked
            forced = s.final_send and step == s.max_steps - 1
            if forced and s.final_step_message:
                self.queue.append(("user", packaged("system_alert", s.final_step_message, None)))
            system = context()
            self.pressure(system)
            request = ChatRequest(
                messages=self.messages(system),
                max_tokens=s.step_max_tokens,
                temperature=s.temperature,
                json_output=True,
                json_schema=FINAL_SCHEMA if forced else SCHEMA,
            )
            prompt = "\n\n".join(f"[{r}]\n{t}" for r, t in request.messages)
            completion = self.llm.complete_one(request)
            counts.steps += 1
            if not completion.ok:
                steps.append({"function": None, "status": "call_failed"})
                counts.call_failed += 1
                outcome = Outcome("call_failed", error=completion.error or "call failed")
                break
            self.queue.append(("assistant", completion.text.strip()))
            try:
                call = parse_call(completion.text)
            except Malformed as bad:
                counts.malformed[bad.kind] += 1
                steps.append({"function": None, "status": f"malformed:{bad.kind}"})
                self._result(False, f"Error: {bad}", time, s.failed_heartbeat_message, True)
                continue
            counts.functions[call.function] += 1
            if call.function == "send_message":
                steps.append(
                    {
                        "function": "send_message",
                        "status": "ok",
                        **({"forced": True} if forced else {}),
                    }
                )
                counts.answered += 1
                counts.forced_final_sends += forced
                outcome = Outcome("sent", message=call.arguments["message"])
                break
            try:
                result, ok = execute(call), True
            except FunctionFailed as err:
                result, ok = f"Error calling function {call.function}: {err}", False
                counts.function_errors += 1
            steps.append(
                {
                    "function": call.function,
                    "status": "ok" if ok else "failed",
                    "heartbeat": call.heartbeat,
                    "arguments": call.arguments,
                    # "No results found." or "Showing 5 of 12 ...": whether a search found anything
                    "result_head": result.partition("\n")[0][:RESULT_HEAD_CHARS],
                }
            )
            cut = call.function not in PAGED
            if not ok or call.heartbeat:
                heartbeat = s.heartbeat_message if ok else s.failed_heartbeat_message
                self._result(ok, result, time, heartbeat, cut)
                continue
            self._result(ok, result, time, None, cut)
            counts.yielded += 1
            outcome = Outcome("yielded", error="the agent ended its turn without send_message")
            break
        if outcome is None:
            counts.step_cap += 1
            outcome = Outcome("step_cap", error=f"no send_message within {s.max_steps} steps")
        counts.steps_per_question.append(len(steps))
        outcome.steps, outcome.prompt = steps, prompt
        return outcome

    def _result(
        self, ok: bool, text: str, time: str | None, heartbeat: str | None, cut: bool
    ) -> None:
        """Queue a function result (with ``cut``: at ``function_return_chars``, saying so, as the
        code's ``validate_function_response``) and the heartbeat, if any."""
        limit = self.s.function_return_chars
        if cut and len(text) > limit:
            self.counts.results_cut += 1
            text = (
                f"{text[:limit]}... [output cut: {len(text)} characters, over the limit of {limit}]"
            )
        self.queue.append(("user", packaged("", text, time, status="OK" if ok else "Failed")))
        if heartbeat is not None:
            self.counts.heartbeats += 1
            self.queue.append(("user", packaged("heartbeat", heartbeat, time)))
