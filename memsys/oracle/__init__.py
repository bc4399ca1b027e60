"""Gold-evidence oracle: the dataset's annotated evidence as the only context (an upper reference,
never ranked as a memory system)."""

from memharness.memsys.oracle.memory import GoldEvidenceOracle

__all__ = ["GoldEvidenceOracle"]
