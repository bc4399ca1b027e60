"""The call services every memory system and evaluation stage shares.

``llm`` and ``embed`` (the one chat and embedding interfaces: cached, retried, metered), ``cache``
(the persistent call cache), ``meter`` (per-stage accounting), ``budget`` and ``deadline`` (run-level
limits), ``secrets`` (redaction), ``progress``, ``tokens`` (token counting and chunking), ``files``
(atomic writes), ``types`` (requests, replies and errors), ``factory`` (building them from config).
The backends that actually answer live in ``backends/``."""
