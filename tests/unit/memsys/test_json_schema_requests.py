"""``ChatRequest.json_schema``: each backend narrows its JSON output to the schema (llama.cpp through
``response_format.schema``, OpenAI-compatible servers through ``response_format: json_schema``, vLLM
through guided JSON); without a schema the request is what it was (plain JSON object)."""

from __future__ import annotations

import json
import types

from memharness.memsys.services.backends.local import LlamaCppBackend
from memharness.memsys.services.backends.openai_compat import OpenAIBackend
from memharness.memsys.services.backends.vllm_backend import sampling_params
from memharness.memsys.services.types import ChatRequest

SCHEMA = {"type": "object", "properties": {"f": {"enum": ["a", "b"]}}, "required": ["f"]}
WITH = ChatRequest.user("q", json_output=True, json_schema=json.dumps(SCHEMA))
WITHOUT = ChatRequest.user("q", json_output=True)


def test_openai_compatible_payload_names_the_schema():
    backend = OpenAIBackend.__new__(OpenAIBackend)  # payload() needs no connection
    backend.model, backend.extra_body, backend.json_mode, backend.structured = "m", {}, True, "none"
    assert backend.payload(WITH)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA},
    }
    assert backend.payload(WITHOUT)["response_format"] == {"type": "json_object"}


def test_vllm_guides_by_the_schema():
    class Guided:
        def __init__(self, **kw):
            self.kw = kw

    fake = types.SimpleNamespace(
        SamplingParams=lambda **kw: kw,
        sampling_params=types.SimpleNamespace(GuidedDecodingParams=Guided),
    )
    assert sampling_params(fake, WITH, 0)["guided_decoding"].kw == {"json": SCHEMA}
    assert sampling_params(fake, WITHOUT, 0)["guided_decoding"].kw == {"json_object": True}


def test_llama_cpp_gets_the_schema_in_response_format():
    seen = {}

    class FakeLlama:
        def create_chat_completion(self, messages, **kwargs):
            seen.update(kwargs)
            return {"choices": [{"message": {"content": '{"f": "a"}'}}], "usage": {}}

    backend = LlamaCppBackend.__new__(LlamaCppBackend)
    backend._loaded = FakeLlama()
    backend._lock = __import__("threading").Lock()
    backend._fit_prompt = lambda request: (request.message_dicts(), 0)
    assert backend.chat(WITH).text == '{"f": "a"}'
    assert seen["response_format"] == {"type": "json_object", "schema": SCHEMA}
    backend.chat(WITHOUT)
    assert seen["response_format"] == {"type": "json_object"}
