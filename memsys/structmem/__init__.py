"""Structural memories (Zeng et al., 2024): chunks, triples, atomic facts, summaries and mixed
memories with single-step, reranked or iterative retrieval, on a flat hierarchy store."""

from memharness.memsys.structmem.memory import StructuralMemory

__all__ = ["StructuralMemory"]
