"""Reference rows beside the memory systems: full context, the full-history summary and the
gold-evidence oracle (one module each, one YAML each in conf/memory/)."""
