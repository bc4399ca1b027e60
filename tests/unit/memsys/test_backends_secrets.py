"""Secrets never reach config snapshots or logs."""

from __future__ import annotations

import logging

from memharness.memsys.services.secrets import REDACTED, install_log_redaction, redact, redact_text


def test_redact_masks_secret_fields_and_env_values(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "abcdefgh12345678")
    cfg = {
        "llm": {
            "backend": {
                "api_key_env": "OPENAI_API_KEY",
                "api_key": "literal-key",
                "base_url": "http://x/v1?token=abcdefgh12345678",
            }
        },
        "eval": {"max_tokens": 64, "notes": ["uses sk-proj-0123456789abcdef"]},
    }
    out = redact(cfg)
    assert out["llm"]["backend"]["api_key_env"] == "OPENAI_API_KEY"  # a name, not a secret
    assert out["llm"]["backend"]["api_key"] == REDACTED
    assert "abcdefgh12345678" not in out["llm"]["backend"]["base_url"]
    assert out["eval"]["max_tokens"] == 64 and out["eval"]["notes"] == [f"uses {REDACTED}"]
    assert cfg["llm"]["backend"]["api_key"] == "literal-key"  # input untouched


def test_log_records_are_redacted(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdefghijklmnop")
    logger = logging.getLogger("memharness.test_secrets")
    install_log_redaction(logging.getLogger())
    caplog.handler.addFilter(
        __import__("memharness.memsys.services.secrets", fromlist=["x"]).RedactingFilter()
    )
    logger.warning("calling with key %s", "sk-live-abcdefghijklmnop")
    assert "sk-live" not in caplog.text and REDACTED in caplog.text
    assert redact_text("nothing here") == "nothing here"
