"""Full-history summary (MemTree Table 1, after Packer et al.'s MemGPT baseline): the answer sees only
an LLM-written summary of the episode's earlier units."""

from memharness.memsys.history_summary.memory import HistorySummary

__all__ = ["HistorySummary"]
