"""MemGPT-lite (agent variant) cost and speed with stub backends (no model; the fault server on
127.0.0.1 for the failure path).

    memharness bench memgpt        (or `make bench`)

(a) Scripted agent: 10,000 dialogue turns in recall storage; a stub backend (``ScriptedChat``,
    200 ms per call as in the backends bench) that, per question, calls ``conversation_search`` for
    the question's day with a heartbeat, then ``send_message`` with the first hit. Through the
    harness's LLM facade. Figures: LLM calls and agent steps per question, the harness's own time
    per step (the question's wall time less the backend's time) as a share of the backend latency
    (target <= 0.05, the backends bench's overhead target), the prompt tokens sent per question
    against reading the whole history once (full context), and the scripted answers that name the
    right day.
(b) Fault server: the same agent over HTTP against a server whose JSON replies are not function
    calls: every step must be counted malformed and no question answered (the loop never turns a
    malformed call into an answer); each question then costs ``max_steps`` calls.
"""

from __future__ import annotations

import json
import re
import time
from importlib.resources import files
from typing import Any

from memharness.eval.bench import print_figures
from memharness.eval.bench.backends import LATENCY_S
from memharness.memsys.memgpt import MemGPT
from memharness.memsys.services.backends.openai_compat import OpenAIBackend
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import ScriptedChat
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from memharness.memsys.types import Question, Unit, units_from_texts
from omegaconf import OmegaConf

BUDGET_TOKENS = 4096
_DAY = re.compile(r"day (\d+)")


def settings() -> dict[str, Any]:
    """conf/memory/memgpt.yaml's settings, but ``top_k`` (the flat variant's, set by the dataset),
    resolved beside llm=local (``queue.context_window`` is the serving model's window)."""
    conf = files("memharness.conf")
    cfg = OmegaConf.create(
        {
            "llm": OmegaConf.create((conf / "llm" / "local.yaml").read_text(encoding="utf-8")),
            "memory": OmegaConf.create(
                (conf / "memory" / "memgpt.yaml").read_text(encoding="utf-8")
            ),
        }
    )
    del cfg.memory["top_k"]  # the flat variant's, set by the dataset
    raw = OmegaConf.to_container(cfg.memory, resolve=True)
    return {k: v for k, v in raw.items() if k not in ("_target_", "name")}


def dialogue(turns: int) -> list[Unit]:
    """One turn per day: what the user did that day (the fact a question asks back)."""
    texts = [
        f"On day {d} I visited place{d} with friend{d % 97}; it rained a little."
        for d in range(turns)
    ]
    return units_from_texts(texts, source_id="bench-dialogue")


def _call(function: str, **arguments: Any) -> str:
    return json.dumps({"thought": "stub", "function": function, "arguments": arguments})


def stub_step(request: ChatRequest) -> str:
    """Agent steps: search for the asked day (heartbeat), then send the first hit's text. Summary
    requests (not JSON): a fixed summary."""
    if not request.json_output:
        return "The user talked about places visited on several days."
    entries = [json.loads(x) for x in request.messages[-1][1].splitlines() if x.startswith("{")]
    entries = [e for e in entries if e.get("type") != "system_alert"]
    last = entries[-1] if entries else {}
    if last.get("type") == "user_message":
        day = _DAY.search(str(last.get("message")))
        query = f"day {day.group(1)} I" if day else str(last.get("message"))
        return _call("conversation_search", query=query, page=0, request_heartbeat=True)
    result = str(entries[-2].get("message", "")) if len(entries) > 1 else ""
    return _call("send_message", message=result[:300] or "I do not know.")


def _questions(turns: int, n: int) -> list[Question]:
    days = [(7919 * (i + 1)) % turns for i in range(n)]
    return [
        Question(f"q{i}", f"Where did I go on day {d}?", (f"place{d}",), turns)
        for i, d in enumerate(days)
    ]


def ask_all(memory: MemGPT, questions: list[Question]) -> list[tuple[float, str]]:
    """(wall seconds, answer text) per question: the agent's loop, then its sent message."""
    out = []
    for q in questions:
        start = time.perf_counter()
        items = memory.search(q.text, BUDGET_TOKENS)
        out.append((time.perf_counter() - start, memory.answer(q, items).text))
    return out


def scripted_run(turns: int = 10_000, questions: int = 5, latency_s: float = LATENCY_S) -> dict:
    """(a): see the module docstring."""
    tokenizer = get_tokenizer()
    tokenizer.count("loaded before timing")
    chat = ScriptedChat(reply=stub_step, latency_s=latency_s)
    llm = LLM(chat, meter=Meter(), progress=False, retry=RetryPolicy(max_retries=0))
    memory = MemGPT(llm=llm, tokenizer=tokenizer, **settings())
    units = dialogue(turns)
    memory.insert(units)
    asked = _questions(turns, questions)
    runs = ask_all(memory, asked)
    counts = memory.stats()["agent"]
    prompt_tokens = sum(tokenizer.count(t) for r in chat.requests for _, t in r.messages)
    full = sum(tokenizer.count(u.text) for u in units)
    wall = sum(s for s, _ in runs)
    backend_s = chat.calls * latency_s
    right = sum(q.answers[0] + " " in a for q, (_, a) in zip(asked, runs, strict=True))
    return {
        "units": turns,
        "questions": questions,
        "backend_latency_s": latency_s,
        "llm_calls_per_question": chat.calls / questions,
        "steps_per_question": counts["steps"] / questions,
        "harness_ms_per_step": 1000 * (wall - backend_s) / max(counts["steps"], 1),
        "harness_per_step_over_latency": (
            (wall - backend_s) / max(counts["steps"], 1) / latency_s if latency_s else None
        ),
        "prompt_tokens_per_question": prompt_tokens / questions,
        "full_context_tokens": full,
        "tokens_over_full_context": prompt_tokens / questions / full,
        "malformed_rate": counts["malformed_rate"],
        "answered_share": counts["answered"] / questions,
        "right_day_share": right / questions,
    }


def fault_run(turns: int = 200, questions: int = 3) -> dict[str, Any]:
    """(b): the agent against the fault server's non-call JSON replies."""
    with FaultServer(FaultConfig()) as srv:
        backend = OpenAIBackend(model="bench", base_url=srv.url, api_key_env=None)
        llm = LLM(backend, meter=Meter(), progress=False, retry=RetryPolicy(max_retries=0))
        memory = MemGPT(llm=llm, tokenizer=get_tokenizer(), **settings())
        memory.insert(dialogue(turns))
        runs = ask_all(memory, _questions(turns, questions))
        served = srv.stats()["chat_requests"]
        llm.close()
    counts = memory.stats()["agent"]
    return {
        "fault_questions": questions,
        "fault_calls_per_question": served / questions,
        "fault_max_steps": memory.loop_settings.max_steps,
        "fault_malformed_rate": counts["malformed_rate"],
        "fault_answered": counts["answered"],
        "fault_empty_answers": sum(not a for _, a in runs),
    }


TARGETS = {
    "harness_per_step_over_latency": "<= 0.05",
    "tokens_over_full_context": "< 1",
    "malformed_rate": "== 0",
    "answered_share": "== 1",
    "right_day_share": "== 1",
    "fault_malformed_rate": "== 1",
    "fault_answered": "== 0",
}


def main(turns: int = 10_000, questions: int = 5, latency_s: float = LATENCY_S) -> dict[str, Any]:
    """Measure and print every figure; returns them as a dict."""
    scripted = scripted_run(turns, questions, latency_s)
    fault = fault_run(min(turns, 200), min(questions, 3))
    print(
        f"MemGPT-lite agent, {turns} dialogue turns in recall, stub backend {latency_s * 1000:.0f} ms "
        f"per call (scripted: search then send); fault server: replies that are not function calls"
    )
    figures = {**scripted, **fault}
    print_figures(figures, TARGETS, 32)
    return figures


if __name__ == "__main__":
    main()
