"""The hierarchy core: one store, one set of traversals, diagnostics and one HTML view for every
hierarchical memory (extraction α → coarsening C = (π, ρ) level by level → traversal τ)."""

from memharness.memsys.hierarchy.memory import HierarchicalMemory, load_memory
from memharness.memsys.hierarchy.store import HierarchyStore

__all__ = ["HierarchicalMemory", "HierarchyStore", "load_memory"]
