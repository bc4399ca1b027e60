"""Memory systems and the services they share (backends, tokenizer, data model)."""
