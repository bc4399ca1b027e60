"""MemoryStream (Park et al., 2023): a flat table of embedded memories, scored by cosine or by
recency, importance and relevance."""

from memharness.memsys.memorystream.memory import MemoryStream

__all__ = ["MemoryStream"]
