"""Backends name their cache namespace by everything that changes their replies."""

from __future__ import annotations

from memharness.memsys.services.backends.openai_compat import OpenAIBackend, OpenAIEmbedBackend
from memharness.memsys.services.meter import Meter


def _chat(**kw):
    args = dict(
        model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None, check_connection=False
    )
    return OpenAIBackend(**{**args, **kw}).model_id


def test_openai_chat_identity_covers_server_constraints_and_extra_fields():
    base = _chat()
    assert base == _chat() and base.startswith("openai:m@")
    assert base != _chat(base_url="http://127.0.0.1:10/v1")
    assert base != _chat(structured="grammar")
    assert base != _chat(extra_body={"top_p": 0.5})
    assert _chat(model_id="mine") == "mine"


def test_openai_embed_identity_covers_server_and_dimensions():
    def ident(**kw):
        args = dict(
            model="e", base_url="http://127.0.0.1:9/v1", api_key_env=None, check_connection=False
        )
        return OpenAIEmbedBackend(**{**args, **kw}).model_id

    assert ident() != ident(base_url="http://127.0.0.1:10/v1")
    assert ident() != ident(dimensions=256)


def test_prices_apply_to_the_model_whatever_the_settings_hash():
    meter = Meter(prices={"openai:m": {"prompt": 1.0, "completion": 2.0}})
    meter.add_llm_cost(_chat(), prompt_tokens=1_000_000, completion_tokens=500_000, stage="answer")
    assert meter.stages["answer"].cost_usd == 2.0
