"""The harness endpoint: real HTTP on 127.0.0.1, the real ``openai`` client, the scripted chat double."""

import json
import urllib.error
import urllib.request

import numpy as np
import openai
import pytest
from memharness.memsys.products.endpoint import Endpoint
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.testing.doubles import HashingEmbedder, ScriptedChat


@pytest.fixture
def served(tmp_path):
    meter = Meter()
    cache = CallCache(tmp_path / "calls.sqlite")
    chat = ScriptedChat(script=[["remember", '{"memory": []}']], default="plain", fail_on="BROKEN")
    llm = LLM(chat, meter=meter, cache=cache, progress=False)
    embedder = Embedder(HashingEmbedder(dim=16), meter=meter, cache=cache)
    endpoint = Endpoint(llm, embedder)
    base_url = endpoint.start()
    client = openai.OpenAI(base_url=base_url, api_key=endpoint.token, max_retries=2)
    yield endpoint, client, chat, meter, embedder
    endpoint.stop()
    llm.close()


def test_chat_goes_through_the_cache_and_the_callers_stage(served):
    endpoint, client, chat, meter, _ = served
    with meter.stage("build"):
        endpoint.use_context()
    kwargs = {
        "model": "anything",
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "remember x"}],
        "temperature": 0,
        "max_tokens": 50,
        "top_p": 0.1,
        "response_format": {"type": "json_object"},
    }
    first = client.chat.completions.create(**kwargs)
    second = client.chat.completions.create(**kwargs)
    assert first.choices[0].message.content == second.choices[0].message.content == '{"memory": []}'
    assert first.model == "fake-chat" and first.usage.prompt_tokens == 2
    assert first.choices[0].finish_reason == "stop"
    assert chat.calls == 1  # the second came from the cache
    sent = chat.requests[0]
    assert sent.json_output and sent.max_tokens == 50 and sent.temperature == 0
    assert sent.messages == (("system", "s"), ("user", "remember x"))
    build = meter.to_json()["build"]
    assert build["calls"] == 1 and build["cache_hits"] == 1
    assert endpoint.stats()["chat"] == 2 and endpoint.stats()["ignored_params"] == {"top_p": 2}


def test_a_reply_cut_at_max_tokens_says_length_as_openai_does(served):
    _, client, _, _, _ = served
    ask = {"model": "m", "messages": [{"role": "user", "content": "say it"}], "temperature": 0}
    cut = client.chat.completions.create(max_tokens=1, **ask)  # "plain" is one token here
    whole = client.chat.completions.create(max_tokens=5, **ask)
    assert cut.choices[0].message.content == whole.choices[0].message.content == "plain"
    assert cut.choices[0].finish_reason == "length"
    assert whole.choices[0].finish_reason == "stop"


def test_json_schema_formats_reach_the_backend_as_the_schema(served):
    _, client, chat, _, _ = served
    schema = {"type": "object", "properties": {"memory": {"type": "array"}}, "required": ["memory"]}
    openai_form = {"type": "json_schema", "json_schema": {"name": "m", "schema": schema}}
    llama_form = {"type": "json_object", "schema": schema}
    for i, fmt in enumerate((openai_form, llama_form)):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": f"remember {i}"}],
            temperature=0,
            response_format=fmt,
        )
    for sent in chat.requests:
        assert sent.json_output and json.loads(sent.json_schema) == schema
    with pytest.raises(openai.BadRequestError, match="json_schema.schema"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            response_format={"type": "json_schema", "json_schema": {"name": "m"}},
        )


def test_failed_call_is_answered_once_without_client_retries(served):
    endpoint, client, chat, meter, _ = served
    with pytest.raises(openai.InternalServerError) as err:
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "BROKEN"}], temperature=0
        )
    assert err.value.response.headers["x-should-retry"] == "false"
    assert chat.calls == 1 and endpoint.stats()["chat_failed"] == 1
    assert meter.to_json()["other"]["failures"] == 1


def test_tools_and_streams_are_refused(served):
    endpoint, client, chat, _, _ = served
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError, match="tool calls"):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=[tool]
        )
    assert chat.calls == 0 and endpoint.stats()["refused"] == 1


def test_embeddings_float_and_base64_match_the_harness_embedder(served):
    endpoint, client, _, meter, embedder = served
    texts = ["red tomato", "blue car"]
    expected = embedder.embed(texts)
    as_floats = client.embeddings.create(model="e", input=texts, encoding_format="float")
    as_default = client.embeddings.create(model="e", input=texts)  # the client asks for base64
    for reply in (as_floats, as_default):
        got = np.array([d.embedding for d in reply.data], dtype=np.float32)
        assert np.allclose(got, expected, atol=1e-6)
    with pytest.raises(openai.BadRequestError, match="dimensions=8"):
        client.embeddings.create(model="e", input="x", dimensions=8)
    assert endpoint.stats()["embedded_texts"] == 4


def test_models_route_and_stop_releases_the_port(served):
    endpoint, _, _, _, _ = served
    url = endpoint.base_url
    ask = urllib.request.Request(
        url + "/models", headers={"Authorization": f"Bearer {endpoint.token}"}
    )
    with urllib.request.urlopen(ask, timeout=5) as reply:
        ids = [m["id"] for m in json.loads(reply.read())["data"]]
    assert ids == ["fake-chat", "hashing-embed"]
    endpoint.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/models", timeout=5)


def test_stop_waits_for_the_call_in_flight(tmp_path):
    import threading
    import time

    chat = ScriptedChat(default="late", latency_s=1.0)
    llm = LLM(chat, meter=Meter(), progress=False)
    endpoint = Endpoint(llm, Embedder(HashingEmbedder(dim=4)))
    client = openai.OpenAI(base_url=endpoint.start(), api_key=endpoint.token, max_retries=0)
    replies = []
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}], "temperature": 0}
    caller = threading.Thread(target=lambda: replies.append(client.chat.completions.create(**body)))
    caller.start()
    time.sleep(0.3)
    assert endpoint.in_flight == 1
    endpoint.stop()  # returns only once the call has been answered
    caller.join(timeout=5)
    assert [r.choices[0].message.content for r in replies] == ["late"] and endpoint.in_flight == 0
    llm.close()
