"""MemGPT-lite with a scripted LLM (Packer et al. 2023; conf/memory/memgpt.yaml): every message in
recall, paging by 5, archival insert and search, heartbeat chaining, the 75 % warning, the flush into
a recursive summary at 100 %, malformed calls counted and fed back, the step cap, and the answer
being what send_message sent; plus the flat variant."""

from __future__ import annotations

import json

import pytest
from memharness.eval.run.snapshots import construction_settings
from memharness.memsys.memgpt import MemGPT
from memharness.memsys.memgpt.agent import Loop as AgentLoop
from memharness.memsys.memgpt.agent import LoopCounts
from memharness.memsys.memgpt.calls import FUNCTIONS, Malformed, parse_call
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedLLM, WordTokenizer
from memharness.memsys.types import Question, units_from_texts
from omegaconf import OmegaConf

from tests.paths import ROOT

YAML = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "memory" / "memgpt.yaml"))
TEXTS = {"prompts": YAML["prompts"], "core_memory": YAML["core_memory"]}
SUMMARY_MARK = "Reply with\nthe summary only"  # a line of summary_prompt


def call(function: str, heartbeat: bool | None = None, **arguments) -> str:
    if heartbeat is not None:
        arguments["request_heartbeat"] = heartbeat
    return json.dumps({"thought": "t", "function": function, "arguments": arguments})


class Script:
    """Replies to agent steps from a list, in order; summary requests get ``summary``. Records the
    full message list of every step request."""

    def __init__(self, steps: list[str], summary: str | None = "SUMMARY-1") -> None:
        self.steps, self.summary = list(steps), summary
        self.step_requests: list = []
        self.summary_prompts: list[str] = []
        self.llm = ScriptedLLM(lambda prompt: None)  # replaced below: we need the whole request
        self.llm.complete = self.complete  # type: ignore[method-assign]

    def complete(self, requests, desc=None):
        from memharness.memsys.services.types import Completion

        out = []
        for r in requests:
            last = r.messages[-1][1]
            if r.json_output:
                self.step_requests.append(r)
                out.append(Completion(text=self.steps.pop(0)))
            else:
                assert SUMMARY_MARK.split("\n")[1] in last
                self.summary_prompts.append(last)
                out.append(
                    Completion(text=self.summary)
                    if self.summary is not None
                    else Completion(text="", error="BackendError: scripted")
                )
        return out


def memory(script: Script, **settings) -> MemGPT:
    values = {**TEXTS, "top_k": 3, **settings}
    return MemGPT(llm=script.llm, embedder=HashingEmbedder(), tokenizer=WordTokenizer(), **values)


def session_units(n: int):
    return units_from_texts(
        [f"turn {i}: I like topic{i} and the color blue" for i in range(n)], "s1"
    )


def ask(mem: MemGPT, text: str = "What color do I like?"):
    items = mem.retrieve(text, 10_000)
    q = Question(id="q1", text=text, answers=("blue",), position=0)
    return items, mem.answer(q, items)


def user_turns(request) -> list[str]:
    return [t for r, t in request.messages if r == "user"]


def test_sessions_go_to_recall_not_to_the_context_and_the_answer_is_the_sent_message():
    script = Script([call("send_message", message="You like blue.")])
    mem = memory(script)
    mem.insert(session_units(3))
    items, completion = ask(mem)
    assert completion.ok and completion.text == "You like blue."
    first = script.step_requests[0]
    assert all("topic1" not in text for _, text in first.messages)  # recall only, not in context
    # the question and the sent message were added to recall after the 3 units
    assert [e.role for e in mem.recall.entries] == ["user"] * 4 + ["assistant"]
    assert mem.recall.entries[-1].text == "You like blue."
    assert completion.extra["sample_fields"]["agent_steps"] == [
        {"function": "send_message", "status": "ok"}
    ]
    assert items == []  # no search ran: nothing was shown to the agent
    assert mem.stats()["agent"]["answered"] == 1


def test_conversation_search_is_case_insensitive_and_paged_by_five_with_heartbeat_chaining():
    script = Script(
        [
            call("conversation_search", True, query="BLUE"),
            call("conversation_search", True, query="blue", page=1),
            call("send_message", message="blue"),
        ]
    )
    mem = memory(script)
    mem.insert(session_units(7))
    items, completion = ask(mem, "which one?")
    assert completion.text == "blue"
    page0 = user_turns(script.step_requests[1])[-1]
    page1 = user_turns(script.step_requests[2])[-1]
    assert "Showing 5 of 7 results (page 0/1)" in page0 and "turn 4:" in page0
    assert "turn 5:" not in page0
    assert "Showing 2 of 7 results (page 1/1)" in page1 and "turn 6:" in page1
    assert "request_heartbeat was true" in page0  # the heartbeat handed control back
    # the units shown to the agent are the retrieved items, first shown first
    assert [i.source_unit_ids[0] for i in items] == [u.id for u in mem.units]
    agent = mem.stats()["agent"]
    assert agent["heartbeats"] == 2 and agent["steps"] == 3
    assert agent["mean_steps_per_question"] == 3.0


def test_a_call_without_heartbeat_ends_the_turn_as_a_counted_failure():
    script = Script([call("conversation_search", query="blue"), call("send_message", message="x")])
    mem = memory(script)
    mem.insert(session_units(2))
    _, completion = ask(mem)
    assert not completion.ok and "yielded" in completion.error
    assert len(script.step_requests) == 1  # control went back to the (silent) user
    assert mem.stats()["agent"]["yielded"] == 1


def test_archival_insert_then_search_by_embedding_in_pages_of_five():
    script = Script(
        [
            call("archival_memory_insert", True, content=f"note {i} about gardening")
            for i in range(6)
        ]
        + [
            call("archival_memory_search", True, query="note 3 about gardening"),
            call("archival_memory_search", True, query="note 3 about gardening", page=1),
            call("send_message", message="done"),
        ]
    )
    mem = memory(script)
    _, completion = ask(mem)
    assert completion.text == "done" and len(mem.archival.entries) == 6
    page0 = user_turns(script.step_requests[7])[-1]
    page1 = user_turns(script.step_requests[8])[-1]
    assert "Showing 5 of 6 results (page 0/1)" in page0
    assert page0.index("memory: note 3 about gardening") < page0.index("memory: note 0")
    assert "Showing 1 of 6 results (page 1/1)" in page1


def test_core_memory_edits_and_their_limit_fail_back_to_the_agent():
    script = Script(
        [
            call("core_memory_append", True, name="human", content="Likes blue."),
            call("core_memory_replace", True, name="human", old_content="blue", new_content="red"),
            call("core_memory_append", True, name="human", content="x" * 50),
            call("core_memory_replace", True, name="human", old_content="green", new_content="x"),
            call("send_message", message="ok"),
        ]
    )
    mem = memory(script, core_memory={"char_limit": 40, "persona": "I am a companion."})
    _, completion = ask(mem)
    assert completion.ok and mem.core.blocks["human"] == "Likes red."
    assert "Likes red." in script.step_requests[2].messages[0][1]  # core memory is in the context
    assert "over its limit of 40" in user_turns(script.step_requests[3])[-1]
    assert "not found in human" in user_turns(script.step_requests[4])[-1]
    assert mem.stats()["agent"]["function_errors"] == 2


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("I think the answer is blue", "unparsed"),
        ('["send_message"]', "unparsed"),
        (call("send_email", message="blue"), "unknown_function"),
        (call("conversation_search", True, text="blue"), "bad_arguments"),
        (call("conversation_search", True, query="blue", page="1"), "bad_arguments"),
    ],
)
def test_a_malformed_call_is_counted_fed_back_and_retried_never_the_answer(reply, kind):
    script = Script([reply, call("send_message", message="blue")])
    mem = memory(script)
    _, completion = ask(mem)
    assert completion.text == "blue"  # the retried step's message, not the malformed reply
    fed_back = user_turns(script.step_requests[1])[-1]
    assert '"status": "Failed"' in fed_back and "call failed" in fed_back
    agent = mem.stats()["agent"]
    assert agent["malformed"] == {kind: 1} and agent["malformed_rate"] == 0.5
    steps = completion.extra["sample_fields"]["agent_steps"]
    assert steps[0] == {"function": None, "status": f"malformed:{kind}"}


def test_parse_call_reads_the_heartbeat_flag_only_as_a_boolean():
    assert parse_call(call("conversation_search", True, query="a")).heartbeat is True
    assert parse_call(call("conversation_search", "yes", query="a")).heartbeat is False
    with pytest.raises(Malformed):
        parse_call('{"function": "send_message", "arguments": {}}')


def test_the_step_cap_is_a_counted_failure():
    script = Script([call("conversation_search", True, query="blue")] * 3)
    mem = memory(script, loop={"max_steps": 3})
    mem.insert(session_units(1))
    _, completion = ask(mem)
    assert not completion.ok and "step_cap" in completion.error and completion.text == ""
    assert len(script.step_requests) == 3
    assert mem.stats()["agent"]["step_cap"] == 1


def schema_functions(request) -> list[str]:
    return json.loads(request.json_schema)["properties"]["function"]["enum"]


def test_final_send_allows_only_send_message_on_the_last_step_and_counts_the_answer():
    script = Script(
        [call("conversation_search", True, query="blue")] * 2 + [call("send_message", message="b")]
    )
    mem = memory(script, loop={"max_steps": 3, "final_send": True})
    mem.insert(session_units(1))
    _, completion = ask(mem)
    assert completion.ok and completion.text == "b"
    first, second, last = script.step_requests
    assert schema_functions(first) == schema_functions(second) == list(FUNCTIONS)
    assert schema_functions(last) == ["send_message"]
    shapes = json.loads(last.json_schema)["properties"]["arguments"]["anyOf"]
    assert [sorted(s["properties"]) for s in shapes] == [["message"]]
    alert = YAML["prompts"]["final_step_message"].split(":")[0]
    assert alert in user_turns(last)[-1] and all(alert not in t for t in user_turns(second))
    steps = completion.extra["sample_fields"]["agent_steps"]
    assert steps[-1] == {"function": "send_message", "status": "ok", "forced": True}
    agent = mem.stats()["agent"]
    assert agent["forced_final_sends"] == 1 and agent["answered"] == 1 and agent["step_cap"] == 0


def test_final_send_does_not_touch_an_earlier_message_and_a_failed_last_step_stays_a_failure():
    script = Script([call("send_message", message="early")])
    mem = memory(script, loop={"max_steps": 3, "final_send": True})
    _, completion = ask(mem)
    assert completion.text == "early" and schema_functions(script.step_requests[0]) != [
        "send_message"
    ]
    assert mem.stats()["agent"]["forced_final_sends"] == 0
    # a backend that ignores the schema, or a malformed last reply: no answer, a counted step_cap
    for last in (call("conversation_search", True, query="blue"), "no json here"):
        script = Script([call("conversation_search", True, query="blue"), last])
        mem = memory(script, loop={"max_steps": 2, "final_send": True})
        _, completion = ask(mem)
        assert not completion.ok and completion.text == "" and "step_cap" in completion.error
        agent = mem.stats()["agent"]
        assert (
            agent["step_cap"] == 1 and agent["forced_final_sends"] == 0 and agent["answered"] == 0
        )


def test_warning_at_75_percent_of_the_window_then_flush_into_a_recursive_summary_at_100():
    # WordTokenizer: one token per word. The system prompt is about 300 words; each search result
    # adds about 100. A window of 900 passes 75 % (675) before 100 %.
    script = Script(
        [call("conversation_search", True, query="blue")] * 7 + [call("send_message", message="m")]
    )
    mem = memory(
        script,
        queue={"context_window": 900},
        loop={"step_max_tokens": 10, "summary_max_tokens": 50},
        functions={"page_size": 5},
    )
    mem.insert(session_units(5))
    _, completion = ask(mem)
    assert completion.text == "m"
    agent = mem.stats()["agent"]
    assert agent["warnings"] >= 1 and agent["flushes"] >= 1 and agent["evicted"] >= 1
    warned = [
        i
        for i, r in enumerate(script.step_requests)
        if "close to the context limit" in str(r.messages)
    ]
    summarised = [i for i, r in enumerate(script.step_requests) if "SUMMARY-1" in str(r.messages)]
    assert warned and summarised and warned[0] < summarised[0]
    tokens = WordTokenizer().count
    sizes = [sum(tokens(t) for _, t in r.messages) + 10 for r in script.step_requests]
    assert all(n <= 0.75 * 900 for n in sizes[: warned[0]]) and sizes[warned[0]] > 0.75 * 900
    assert all(n <= 900 for n in sizes)  # the flush kept every step inside the window
    assert sizes[summarised[0]] < sizes[summarised[0] - 1]  # the flush shrank the prompt
    assert len(script.summary_prompts) == agent["flushes"] == 1
    # the summary saw the evicted messages, oldest first: the question
    assert "What color do I like?" in script.summary_prompts[0]


def test_the_summary_is_recursive_and_a_failed_summary_is_counted():
    script = Script(
        [call("conversation_search", True, query="blue")] * 12 + [call("send_message", message="m")]
    )
    mem = memory(
        script, queue={"context_window": 700}, loop={"step_max_tokens": 10, "max_steps": 20}
    )
    mem.insert(session_units(5))
    ask(mem)
    assert len(script.summary_prompts) >= 2
    assert "summary of earlier messages: SUMMARY-1" in script.summary_prompts[1]
    failing = Script(
        [call("conversation_search", True, query="blue")] * 12
        + [call("send_message", message="m")],
        summary=None,
    )
    mem2 = memory(
        failing, queue={"context_window": 700}, loop={"step_max_tokens": 10, "max_steps": 20}
    )
    mem2.insert(session_units(5))
    ask(mem2)
    agent = mem2.stats()["agent"]
    assert agent["summary_failed"] == agent["flushes"] >= 1


def test_the_flat_variant_is_cosine_top_k_answered_by_the_shared_prompt():
    script = Script([])
    mem = memory(script, variant="flat", top_k=2)
    assert not mem.answers_itself
    mem.insert(
        units_from_texts(["the cat sat on the mat", "stock prices fell", "a cat and a mat"], "d")
    )
    items = mem.retrieve("cat on the mat", 10_000)
    assert len(items) == 2 and {i.source_unit_ids[0] for i in items} == {
        mem.units[0].id,
        mem.units[2].id,
    }
    assert items[0].score >= items[1].score and not script.step_requests


def test_a_snapshot_state_restores_the_stores():
    script = Script([])
    mem = memory(script, units_to="both")
    mem.insert(session_units(3))
    again = memory(Script([]), units_to="both")
    again.load_state(mem.state())
    assert [e.text for e in again.recall.entries] == [e.text for e in mem.recall.entries]
    assert len(again.archival.vectors) == 3


def test_every_step_asks_for_json_of_the_call_schema_and_the_schema_covers_every_function():
    script = Script([call("send_message", message="hi")])
    ask(memory(script))
    request = script.step_requests[0]
    assert request.json_output and request.json_schema
    schema = json.loads(request.json_schema)
    assert list(schema["properties"]) == ["thought", "function", "arguments"]
    assert schema["properties"]["function"]["enum"] == list(FUNCTIONS)
    shapes = schema["properties"]["arguments"]["anyOf"]
    search = next(s for s in shapes if "query" in s["properties"])
    assert search["required"] == ["query", "request_heartbeat"]  # the code's schemas require it
    assert search["properties"]["page"] == {"type": "integer"}
    send = next(s for s in shapes if "message" in s["properties"])
    assert "request_heartbeat" not in send["properties"]
    assert len(shapes) == len(FUNCTIONS) - 1  # the two searches share one shape


def test_a_core_block_over_its_limit_is_one_error_naming_the_grouped_keys():
    with pytest.raises(ValueError) as err:
        memory(Script([]), core_memory={"char_limit": 5, "persona": "I am a companion."})
    assert str(err.value) == (
        "memory.core_memory.persona holds 17 characters, over memory.core_memory.char_limit (5)"
    )


def test_only_units_to_and_the_core_blocks_change_the_snapshot_address():
    base = {k: v for k, v in YAML.items() if k not in ("_target_", "name")}

    def address(**changes):
        params = {**base, **{k: {**base[k], **v} for k, v in changes.items()}}
        return construction_settings(params, MemGPT)

    same = address(
        functions={"page_size": 2},
        queue={"keep_last": 1},
        loop={"max_steps": 2},
        prompts={"final_step_message": "Last step."},
    )
    assert same == address()
    assert address(core_memory={"human": "Likes blue."}) != address()


def _words(n: int, tag: str) -> str:
    return " ".join([tag] * n)


def test_a_flush_cut_on_an_assistant_call_keeps_the_call_with_its_result():
    """The code's rule (summarize_messages_inplace), checked by hand with one token per word: the
    queue holds 103 tokens, the target is int(0.75 x 103) = 77; the running sum passes it on the
    4th message, an assistant call, so the 3 messages before it go and the call stays with its
    result. The old cut evicted the call too and left its result first in the queue, orphaned."""
    script = Script([])
    mem = memory(script)
    loop = AgentLoop(mem.llm, WordTokenizer().count, mem.loop_settings, LoopCounts())
    loop.queue = [
        ("user", _words(20, "q1")),
        ("user", _words(20, "q2")),
        ("user", _words(20, "q3")),
        ("assistant", _words(20, "call")),
        ("user", _words(20, "result")),
        ("assistant", "a"),
        ("user", "b"),
        ("user", "c"),
    ]
    loop.flush()
    assert [text.split()[0] for _, text in loop.queue] == ["call", "result", "a", "b", "c"]
    assert loop.counts.evicted == 3
    # a cut that lands on a user-side message evicts it too (the code's shift past a 'user')
    loop.queue = [("user", _words(30, "x")), ("user", _words(30, "y"))] + [("user", "k")] * 3
    loop.flush()
    assert [text.split()[0] for _, text in loop.queue] == ["k", "k", "k"]


def test_search_results_are_paged_not_cut_and_other_results_are_cut_with_a_note():
    long_turns = units_from_texts([f"blue {i} " + "word " * 200 for i in range(5)], "s1")
    script = Script(
        [
            call("conversation_search", True, query="blue"),
            call("archival_memory_insert", True, content="blue " * 900),
            call("archival_memory_search", True, query="blue"),
            call("send_message", message="m"),
        ]
    )
    mem = memory(script, units_to="both", functions={"function_return_chars": 300})
    mem.insert(long_turns)
    ask(mem)
    results = [t for r, t in script.step_requests[1].messages if '"status": "OK"' in t]
    page = json.loads(results[-1].split("\n")[0])["message"]
    assert len(page) > 5 * 200 and "output cut" not in page  # the whole page of 5, over 300
    last = str(script.step_requests[-1].messages)
    assert mem.stats()["agent"]["results_cut"] == 0  # "None" from the insert is short
    assert "output cut" not in last


def test_a_result_of_another_function_over_the_limit_is_cut_with_a_note():
    script = Script(
        [
            call("core_memory_replace", True, name="human", old_content="x", new_content="y"),
            call("send_message", message="m"),
        ]
    )
    mem = memory(script, functions={"function_return_chars": 40})
    mem.insert(session_units(1))
    ask(mem)
    # "Error calling function core_memory_replace: the text to replace was not found ..." > 40
    result = [t for _, t in script.step_requests[1].messages if '"status": "Failed"' in t][0]
    message = json.loads(result.split("\n")[0])["message"]
    assert message.startswith("Error calling function core_memory_")
    assert message[40:].startswith("... [output cut: ") and "over the limit of 40]" in message
    assert mem.stats()["agent"]["results_cut"] == 1


def test_context_window_follows_the_serving_models_window():
    cfg = OmegaConf.load(ROOT / "conf" / "memory" / "memgpt.yaml")
    for backend, expected in (
        ({"n_ctx": 16384}, 16384),
        ({"max_model_len": 32768}, 32768),
        ({"model": "gpt-4o-mini"}, 8192),
    ):
        full = OmegaConf.create({"llm": {"backend": backend}, "memory": cfg})
        assert full.memory.queue.context_window == expected


def test_recall_holds_each_turn_as_its_speakers_message_with_the_timestamp():
    unit = units_from_texts(
        ["[Session 2]\nSpeaker 1: I adopted a cat.\nSpeaker 2: Lovely, what is its name?"], "s"
    )[0]
    unit = type(unit)(**{**unit.__dict__, "timestamp": "2023-05-01"})
    script = Script(
        [call("conversation_search", True, query="cat"), call("send_message", message="m")]
    )
    mem = memory(script)
    mem.insert([unit])
    assert [(e.role, e.text, e.timestamp) for e in mem.recall.entries] == [
        ("user", "[Session 2] I adopted a cat.", "2023-05-01"),
        ("assistant", "Lovely, what is its name?", "2023-05-01"),
    ]
    ask(mem, "What pet did I adopt?")
    shown = str(script.step_requests[1].messages)
    assert "timestamp: 2023-05-01, user - [Session 2] I adopted a cat." in shown
    # a unit without speaker lines stays one message (session_units' "turn 0:" is no speaker)
    plain = memory(Script([]))
    plain.insert(session_units(1))
    assert [e.role for e in plain.recall.entries] == ["user"]


def test_a_forced_answer_is_marked_on_its_sample():
    script = Script(
        [call("conversation_search", True, query="x"), call("send_message", message="m")]
    )
    mem = memory(script, loop={"max_steps": 2, "final_send": True})
    mem.insert(session_units(1))
    _, completion = ask(mem)
    assert completion.extra["sample_fields"]["forced_answer"] is True
    assert mem.stats()["agent"]["forced_final_sends"] == 1
