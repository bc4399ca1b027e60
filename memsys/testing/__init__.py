"""Test doubles shared by the tests, the benchmarks and ``llm=scripted``-style configs: scripted
backends, a deterministic embedder and tokenizer, and a fault-injecting OpenAI-compatible server."""
