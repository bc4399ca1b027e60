"""Memory products (mem0, A-Mem, ...) as contestants: adapters, never vendored copies.

Each product runs out of process in its own virtualenv (conflicting pins), driven through the
line protocol in ``workers/protocol.py``; the harness serves its own LLM and embedder to it on a
127.0.0.1 OpenAI-compatible endpoint so every product call goes through the harness's cache and meter.
"""
