"""MemTree (Rezazadeh et al., 2024): an online tree memory with LLM-aggregated parent nodes.

``memory``: the ``MemTree`` memory system (descent, thresholds, aggregation, retrieval)."""

from memharness.memsys.memtree.memory import MemTree

__all__ = ["MemTree"]
