"""ReadAgent (Lee et al., ICML 2024): pagination, gist memory and interactive look-up."""

from memharness.memsys.readagent.memory import ReadAgent

__all__ = ["ReadAgent"]
