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


def test_every_file_write_and_the_call_cache_mask_registered_secrets(monkeypatch, tmp_path):
    """files.py is the one writer (views, snapshots, tables, browser, logs): a key that reached
    the text being written, e.g. echoed by a server, is masked there and in the call cache."""
    import csv
    import io
    import json

    from memharness.memsys.services import files as fileio
    from memharness.memsys.services.cache import CallCache
    from memharness.memsys.services.secrets import register_secret_env

    secret = "echoed-plain-Value-98765"
    monkeypatch.setenv("MEMHARNESS_UNIT_CREDENTIAL", secret)
    register_secret_env("MEMHARNESS_UNIT_CREDENTIAL")
    reply = f"the answer (received Bearer {secret})"
    fileio.write_json(tmp_path / "hierarchy.json", {"nodes": [{"text": reply}]})
    fileio.write_text(tmp_path / "view.html", f"<p>{reply}</p>")
    fileio.write_lines(tmp_path / "rows.jsonl", [json.dumps({"text": reply})])

    def table(f: io.TextIOBase) -> None:
        csv.writer(f).writerow(["memory", reply])

    fileio.atomic_write(tmp_path / "t.csv", table)
    cache = CallCache(tmp_path / "calls.sqlite")
    cache.put_chat("k", "m", {"text": reply})
    assert cache.get_chat("k")["text"] == "the answer (received Bearer ***)"
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes(), path
    assert f"Bearer {REDACTED}" in (tmp_path / "t.csv").read_text()


def test_secret_values_follow_every_change_of_the_environment(monkeypatch):
    """The values to mask are remembered between calls, yet a changed, added or removed variable
    (even one of the same length) is seen on the next call."""
    from memharness.memsys.services.secrets import REDACTED, redact_text

    monkeypatch.setenv("MEMHARNESS_MEMO_API_KEY", "first-value-0123")
    assert redact_text("x first-value-0123 y") == f"x {REDACTED} y"
    monkeypatch.setenv("MEMHARNESS_MEMO_API_KEY", "other-value-0123")  # same length
    assert redact_text("x first-value-0123 y") == "x first-value-0123 y"
    assert redact_text("x other-value-0123 y") == f"x {REDACTED} y"
    monkeypatch.setenv("MEMHARNESS_MEMO_TOKEN", "added-value-4567")
    assert redact_text("added-value-4567") == REDACTED
    monkeypatch.delenv("MEMHARNESS_MEMO_API_KEY")
    assert redact_text("other-value-0123") == "other-value-0123"
