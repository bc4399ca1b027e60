"""ReadAgent cost and speed with stub backends (no model; the fault server on 127.0.0.1 for the
failure path).

    memharness bench readagent        (or `make bench`)

(a) Scripted: 2,000 dialogue turns (one per day) paginated at the paper's QuALITY bounds
    (conf/memory/readagent.yaml), gisted, then parallel look-up per question. A stub backend
    (``ScriptedChat``) takes the first offered break, writes each gist as the page's day range and
    looks up the page whose range holds the asked day. Build calls per page and per unit (the build
    runs without backend latency, so its wall time per call is the harness's own); per question,
    with 200 ms per call as in the backends bench: look-up calls, the harness's time per call as a
    share of the latency (target <= 0.05), the tokens read per question (the look-up prompt and the
    answerer's context) against reading the whole history once, and the looked-up pages that hold
    the asked day.
(b) Fault server: the same memory over HTTP against a server whose replies name no break and no
    page: every pagination and look-up reply must be counted unparsed, nothing expanded.
"""

from __future__ import annotations

import re
import time
from importlib.resources import files
from typing import Any

from memharness.eval.bench import print_figures
from memharness.eval.bench.backends import LATENCY_S
from memharness.eval.bench.memgpt import BUDGET_TOKENS, dialogue
from memharness.memsys.readagent import ReadAgent
from memharness.memsys.services.backends.openai_compat import OpenAIBackend
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.testing.doubles import ScriptedChat
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from omegaconf import OmegaConf

_LABEL = re.compile(r"^<(\d+)>$", re.M)
_GIST = re.compile(r"<Page (\d+)>\nOn days (\d+) to (\d+)")
_DAY = re.compile(r"day (\d+)")
_RANGE = re.compile(r"On days (\d+) to (\d+)")


def settings() -> dict[str, Any]:
    """conf/memory/readagent.yaml's settings for a dataset of ``BUDGET_TOKENS`` (no page bounds of
    its own: QuALITY's)."""
    cfg = OmegaConf.create(
        (files("memharness.conf") / "memory" / "readagent.yaml").read_text(encoding="utf-8")
    )
    root = OmegaConf.create({"memory": cfg, "dataset": {"budget_tokens": BUDGET_TOKENS}})
    raw = OmegaConf.to_container(root, resolve=True)["memory"]
    return {k: v for k, v in raw.items() if k not in ("_target_", "name")}


def stub_reply(request: ChatRequest) -> str:
    """Pagination: the first offered label; gist: the page's day range; look-up: the page whose
    range holds the question's day."""
    prompt = request.messages[-1][1]
    if "Break point" in prompt:
        offered = _LABEL.findall(prompt)
        return f"Break point: <{offered[0]}>\nBecause the day ends." if offered else "none"
    if prompt.startswith("Make the passage below shorter"):
        passage = prompt.split("Passage:\n", 1)[1]
        ranges = [int(d) for pair in _RANGE.findall(passage) for d in pair]  # a merge's two gists
        days = ranges or [int(d) for d in _DAY.findall(passage)]
        return f"On days {min(days)} to {max(days)} I visited places with friends."
    asked = int(_DAY.findall(prompt.rsplit("Question:", 1)[1])[0])
    pages = [int(p) for p, lo, hi in _GIST.findall(prompt) if int(lo) <= asked <= int(hi)]
    return f"I want to look up Page [{pages[0] if pages else 0}] to check."


def scripted_run(turns: int = 2_000, questions: int = 5, latency_s: float = LATENCY_S) -> dict:
    """(a): see the module docstring."""
    tokenizer = get_tokenizer()
    tokenizer.count("loaded before timing")
    chat = ScriptedChat(reply=stub_reply, latency_s=0.0)
    llm = LLM(chat, meter=Meter(), progress=False, retry=RetryPolicy(max_retries=0))
    memory = ReadAgent(llm=llm, tokenizer=tokenizer, **settings())
    units = dialogue(turns)
    memory.insert(units)
    start = time.perf_counter()
    memory.ensure_built()
    build_s, build_calls = time.perf_counter() - start, chat.calls
    chat.latency_s = latency_s
    days = [(7919 * (i + 1)) % turns for i in range(questions)]
    wall, read_tokens, right = 0.0, 0, 0
    for day in days:
        before = chat.calls
        start = time.perf_counter()
        items = memory.search(f"Where did I go on day {day}?", BUDGET_TOKENS)
        wall += time.perf_counter() - start - (chat.calls - before) * latency_s
        prompts = chat.requests[before:]
        read_tokens += sum(tokenizer.count(r.messages[-1][1]) for r in prompts)
        read_tokens += sum(tokenizer.count(i.text) for i in items)
        right += any(i.level == 0 and f"On day {day} I" in i.text for i in items)
    lookup_calls = chat.calls - build_calls
    stats = memory.stats()
    full = sum(tokenizer.count(u.text) for u in units)
    return {
        "units": turns,
        "pages": stats["pages"],
        "mean_words_per_page": stats["mean_words_per_page"],
        "build_calls_per_page": build_calls / stats["pages"],
        "build_calls_per_unit": build_calls / turns,
        "build_harness_ms_per_call": 1000 * build_s / max(build_calls, 1),
        "gist_compression_ratio": stats["gist_compression_ratio"],
        "questions": questions,
        "backend_latency_s": latency_s,
        "lookup_calls_per_question": lookup_calls / questions,
        "harness_per_call_over_latency": (
            wall / max(lookup_calls, 1) / latency_s if latency_s else None
        ),
        "tokens_per_question": read_tokens / questions,
        "full_context_tokens": full,
        "tokens_over_full_context": read_tokens / questions / full,
        "right_page_share": right / questions,
        "merge_rounds": stats["merging"]["rounds"],  # App. H merges to fit the gists in the budget
        "lookup_reach": stats["lookup_reach"],  # share of the text whose gist the look-up saw
        "compression_rate_percent_final_query": stats["compression_rate_percent_final_query"],
    }


def fault_run(turns: int = 200, questions: int = 3) -> dict[str, Any]:
    """(b): the memory against the fault server's replies, which name no break and no page."""
    with FaultServer(FaultConfig()) as srv:
        backend = OpenAIBackend(model="bench", base_url=srv.url, api_key_env=None)
        llm = LLM(backend, meter=Meter(), progress=False, retry=RetryPolicy(max_retries=0))
        memory = ReadAgent(llm=llm, tokenizer=get_tokenizer(), **settings())
        memory.insert(dialogue(turns))
        memory.ensure_built()
        for day in range(questions):
            memory.search(f"Where did I go on day {day}?", BUDGET_TOKENS)
        llm.close()
    stats = memory.stats()
    pagination, lookup = stats["pagination"], stats["lookup"]
    return {
        "fault_pages": stats["pages"],
        "fault_pagination_unparsed_share": pagination["unparsed"] / max(pagination["calls"], 1),
        "fault_lookup_unparsed_share": lookup["unparsed"] / max(lookup["calls"], 1),
        "fault_pages_expanded": lookup["pages_expanded"],
    }


TARGETS = {
    "harness_per_call_over_latency": "<= 0.05",
    "tokens_over_full_context": "< 1",
    "right_page_share": "== 1",
    "fault_pagination_unparsed_share": "== 1",
    "fault_lookup_unparsed_share": "== 1",
    "fault_pages_expanded": "== 0",
}


def main(turns: int = 2_000, questions: int = 5, latency_s: float = LATENCY_S) -> dict[str, Any]:
    """Measure and print every figure; returns them as a dict."""
    scripted = scripted_run(turns, questions, latency_s)
    fault = fault_run(min(turns, 200), min(questions, 3))
    print(
        f"ReadAgent, {turns} dialogue turns, QuALITY page bounds, parallel look-up; stub backend "
        f"(build without latency, look-up {latency_s * 1000:.0f} ms per call); fault server: replies "
        "that name no break and no page"
    )
    figures = {**scripted, **fault}
    print_figures(figures, TARGETS, 32)
    return figures


if __name__ == "__main__":
    main()
