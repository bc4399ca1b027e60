"""The package list, found instead of kept by hand (pyproject.toml holds everything else).

Every folder that pyproject.toml's ``[tool.setuptools.package-dir]`` maps into the one import name
``memharness`` is searched: each sub-folder that holds code (``__init__.py``) or package data
(``[tool.setuptools.package-data]``'s patterns: the config groups, the papers' published numbers)
becomes ``memharness.<folder>.<sub>...``. A new memory system, room or config group needs no edit
here or in pyproject.toml (tests/unit/eval/test_packaging.py builds the wheel and checks).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def mapped_packages(root: Path = ROOT) -> list[str]:
    """Every package under the folders pyproject.toml maps into ``memharness``, sorted."""
    tool = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    mapping: dict[str, str] = tool["setuptools"]["package-dir"]
    patterns = [p for ps in tool["setuptools"].get("package-data", {}).values() for p in ps]
    packages = []
    for name, folder in mapping.items():
        base = root / folder
        for path in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
            if "__pycache__" in path.parts:
                continue
            if (path / "__init__.py").exists() or any(
                f.is_file() for pattern in patterns for f in path.glob(pattern)
            ):
                packages.append(".".join([name, *path.relative_to(base).parts]))
    return sorted(packages)


if __name__ == "__main__":
    setup(packages=mapped_packages())
