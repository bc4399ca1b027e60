"""Where a product's virtualenv lives and whether its interpreter can run (checked before a run)."""

from __future__ import annotations

import os
from pathlib import Path

from memharness.memsys.services.types import ConfigError

REPO = Path(__file__).resolve().parents[2]


def venv_path(product: str) -> Path:
    """``.venvs/<product>/bin/python`` under ``$MEMHARNESS_VENVS`` or the repository (may be missing)."""
    return Path(os.environ.get("MEMHARNESS_VENVS") or REPO / ".venvs") / product / "bin" / "python"


def venv_problem(product: str, python: str | None = None) -> str | None:
    """Why the product's interpreter cannot run, in one line naming the make target; None if it can."""
    path = Path(python).expanduser() if python else venv_path(product)
    rebuild = f"rebuild it: remove {path.parents[1]} and run `make product-{product}`"
    if path.is_symlink() and not path.exists():
        return f"{path} points to a missing interpreter; the virtualenv is broken, {rebuild}"
    if not path.exists():
        return (
            f"the product's virtualenv is not installed ({path} is missing); "
            f"install it with `make product-{product}` (or set memory.python)"
        )
    if not path.is_file() or not os.access(path, os.X_OK):
        return f"{path} is not an executable file; the virtualenv is broken, {rebuild}"
    return None


def venv_python(product: str, python: str | None = None) -> Path:
    """The product venv's interpreter: ``python`` when set, else ``venv_path(product)``.
    Missing or broken: a one-line ``ConfigError`` naming the make target."""
    problem = venv_problem(product, python)
    if problem is not None:
        raise ConfigError(f"memory={product}: {problem}")
    return Path(python).expanduser() if python else venv_path(product)
