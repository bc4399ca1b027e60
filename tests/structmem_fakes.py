"""Test doubles for the structural-memory tests: an LLM that answers each prompt with a function
of its text (recording every batch), hand-written extraction replies, and a memory factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.structmem import StructuralMemory
from memharness.memsys.testing.doubles import HashingEmbedder
from memharness.memsys.testing.doubles import ScriptedLLM as FakeLLM
from memharness.memsys.types import Unit, content_id

CONF = yaml.safe_load(
    (Path(__file__).resolve().parent.parent / "conf" / "memory" / "structmem.yaml").read_text()
)
PROMPTS, FORMATS = CONF["prompts"], CONF["rerank"]["formats"]
GROUPS = ("extraction", "rerank", "iterative", "bm25", "fusion")  # structmem/settings.py

# Hand-written extraction replies, malformed lines included (marked).
TRIPLES_REPLY = """Here are the triples:
1. Nora; adopted; grey cat
2. <Nora; named cat; Pepper>
3. Pepper; is
4. ;likes;fish

5. Nora; lives in; Leeds"""  # preamble, "3." (two parts) and "4." (empty head) are malformed: 3
FACTS_REPLY = """1. Nora adopted a grey cat on Monday. | Nora | grey cat | Monday
2. Nora named the cat Pepper. | Nora | Pepper
- a bullet is not the format
3. | Nora | Leeds
4. Nora lives in Leeds."""  # the bullet and "3." (no fact) are malformed: 2; "4." has no keys


def unit(text: str, position: int, source: str = "doc-a") -> Unit:
    return Unit(
        id=content_id(source, position, text, prefix="u-"),
        text=text,
        source_id=source,
        position=position,
    )


def by_kind(
    triples: str = TRIPLES_REPLY,
    facts: str = FACTS_REPLY,
    summary: str = "Nora adopted Pepper.",
    other: str = "",
) -> Callable[[str], str | None]:
    """Reply to the extraction prompts of conf/memory/structmem.yaml by kind."""

    def reply(prompt: str) -> str | None:
        if prompt.startswith(PROMPTS["triples"].split("\n")[0]):
            return triples
        if prompt.startswith(PROMPTS["atomic_facts"].split("\n")[0]):
            return facts
        if prompt.startswith(PROMPTS["summaries"].split("\n")[0]):
            return summary
        return other

    return reply


def make_memory(llm: FakeLLM, **params) -> StructuralMemory:
    """A StructuralMemory with the shipped prompts, a hashed bag-of-words embedder and cl100k tokens;
    a group's params (``rerank={"batch": 3}``) update the shipped section, as a Hydra override does."""
    config = {k: v for k, v in CONF.items() if k not in ("_target_", "name", "seed")}
    for key, value in params.items():
        merge = key in GROUPS and isinstance(value, dict)
        config[key] = {**(config.get(key) or {}), **value} if merge else value
    return StructuralMemory(
        llm=llm, embedder=Embedder(HashingEmbedder(dim=128)), tokenizer=get_tokenizer(), **config
    )
