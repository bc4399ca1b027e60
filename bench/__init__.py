"""Benchmarks: each module exposes ``main() -> dict`` that prints and returns its figures."""
