"""MemGPT-lite (Packer et al. 2023): a function-calling agent over core, recall and archival memory,
and the flat chunk-retrieval variant the CAM paper's baseline describes."""

from memharness.memsys.memgpt.memory import MemGPT

__all__ = ["MemGPT"]
