"""The llm/embedder config groups compose, build through the factory, and document every key."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from memharness.memsys.services.factory import build_services
from memharness.memsys.services.types import ChatRequest, ConfigError
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer
from paths import ROOT

CONF = ROOT / "conf"
MINE = [
    "llm/openai.yaml",
    "llm/vllm.yaml",
    "llm/rehearsal.yaml",
    "embedder/openai.yaml",
    "embedder/vllm.yaml",
    "embedder/rehearsal.yaml",
]


def _compose(tmp_path: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                f"cache.path={tmp_path / 'c.sqlite'}",
                f"data_dir={tmp_path}",
                "progress=false",
                *overrides,
            ],
        )


@pytest.mark.parametrize("name", MINE)
def test_every_key_is_commented_and_no_key_is_inline(name):
    text = (CONF / name).read_text()
    for line in text.splitlines():
        if re.match(r"^\s*[A-Za-z_\"][^:#]*:", line) and not line.strip().startswith("#"):
            if line.rstrip().endswith(":") and not line.startswith(" "):
                continue  # a section header (backend:, retry:, prices:)
            assert "#" in line or line.startswith("    ") or line.strip().startswith('"'), (
                f"{name}: {line}"
            )
    assert not re.search(r"sk-[A-Za-z0-9]", text)


def test_openai_configs_build_and_answer(tmp_path):
    with FaultServer(FaultConfig(embed_dim=6)) as srv:
        cfg = _compose(
            tmp_path,
            "llm=openai",
            f"llm.backend.base_url={srv.url}",
            "llm.backend.api_key_env=null",
            "llm.backend.structured=guided_choice",
            "embedder=openai",
            f"embedder.backend.base_url={srv.url}",
            "embedder.backend.api_key_env=null",
        )
        services = build_services(cfg)
        out = services.llm.complete(
            [ChatRequest.user("j", choices=("0", "1")), ChatRequest.user("a")]
        )
        vectors = services.embedder.embed(["x", "y"])
        services.close()
    assert out[0].text in ("0", "1") and out[1].text.startswith("reply")
    assert vectors.shape == (2, 6) and services.llm.max_in_flight == 16
    assert services.llm.retry.max_retries == 6
    assert services.meter.prices["openai:gpt-4o-mini"] == {"prompt": 0.15, "completion": 0.60}


def test_openai_config_without_key_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        build_services(_compose(tmp_path, "llm=openai"))


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm installed")
@pytest.mark.parametrize("group", ["llm", "embedder"])
def test_vllm_configs_fail_clearly_without_vllm(tmp_path, group):
    with pytest.raises(ConfigError, match=r"\.\[vllm\]"):
        build_services(_compose(tmp_path, f"{group}=vllm"))
