"""RAPTOR (Sarthi et al., 2024) on the hierarchy core: ``chunker`` (extraction α: units to
sentence-packed leaf chunks), ``clustering`` (grouping π: UMAP + Gaussian mixtures, soft),
``memory`` (the ``Raptor`` memory system: layer-by-layer summaries, collapsed or top-down)."""

from memharness.memsys.raptor.memory import Raptor

__all__ = ["Raptor"]
