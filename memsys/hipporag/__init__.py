"""HippoRAG (Gutiérrez et al., NeurIPS 2024) and HippoRAG 2 (2025): a phrase graph from OpenIE
triples, searched with personalised PageRank. See docs/hipporag.md and conf/memory/hipporag.yaml."""

from memharness.memsys.hipporag.memory import HippoRAG

__all__ = ["HippoRAG"]
