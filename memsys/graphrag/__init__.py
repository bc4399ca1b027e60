"""GraphRAG-lite (Edge et al., 2024; microsoft/graphrag; nano-graphrag) on the hierarchy core:
an entity graph, hierarchical Leiden communities with JSON reports, local and global search.
See docs/graphrag.md and conf/memory/graphrag.yaml."""

from memharness.memsys.graphrag.memory import GraphRAG

__all__ = ["GraphRAG"]
