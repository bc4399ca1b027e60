"""The backends that answer chat and embedding requests: ``local`` (llama.cpp and
sentence-transformers in process, the offline default), ``openai_compat`` (OpenAI and any
OpenAI-compatible server), ``vllm_backend`` (vLLM in process, GPU), ``replay`` (cache-only)."""
