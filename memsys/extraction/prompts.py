"""The extraction prompts' one home: conf/memory/graphrag.yaml (GraphRAG-lite's, also read by
CAM w/ FM, which extracts with the same prompts); every GraphRAG prompt is read from its
``prompts:`` section there once."""

from __future__ import annotations

import functools


def default_prompts() -> dict[str, str]:
    """The prompts of conf/memory/graphrag.yaml (the one place they are written); read once."""
    return dict(_read_default_prompts())


@functools.cache
def _read_default_prompts() -> dict[str, str]:
    from importlib.resources import files

    from omegaconf import OmegaConf

    cfg = OmegaConf.create(
        (files("memharness.conf") / "memory" / "graphrag.yaml").read_text(encoding="utf-8")
    )
    return {key: str(text) for key, text in cfg.prompts.items()}
