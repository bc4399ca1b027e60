"""Hydra configs, shipped inside the package as ``memharness.conf``."""
