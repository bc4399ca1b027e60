"""CAM: constructivist agentic memory (Li et al., 2025) on the hierarchy core.

``network`` (eq. 2 foundational network, ego-splitting replicas), ``clustering`` (semi-synchronous
label propagation, size caps, super-graph, community matching), ``develop`` (the online batch
update, level by level), ``retrieval`` (Prune-and-Grow), ``chunking`` (units or CAM's packing),
``settings`` (the settings groups, sections of ``conf/memory/cam.yaml``), ``memory`` (the ``CAM``
memory system).
"""

from memharness.memsys.cam.memory import CAM

__all__ = ["CAM"]
