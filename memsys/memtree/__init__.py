"""MemTree (Rezazadeh et al., 2024): an online tree memory with LLM-aggregated parent nodes.

``memory`` (the ``MemTree`` memory system: descent, thresholds, aggregation, retrieval),
``legacy`` (reading trees saved before the hierarchy core)."""

from memharness.memsys.memtree.memory import MemTree

__all__ = ["MemTree"]
