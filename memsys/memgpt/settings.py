"""MemGPT-lite's settings, one group per concern: the sections of ``conf/memory/memgpt.yaml``.

Each group is a dataclass whose annotations are its declarations (``memsys.settings``), as
GraphRAG's (``memsys/graphrag/settings.py``; ``memsys.settings.group`` builds them from the YAML sections).
``MemGPT`` takes one object per group; every key is documented in the YAML file, and the defaults
here are the constructor's. The agent's loop reads the queue, loop and prompts groups and the
functions group's result cap as one ``LoopSettings`` (``loop_settings``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated

from memharness.memsys.memgpt.agent import LoopSettings
from memharness.memsys.settings import Placeholders, Range


@dataclass(frozen=True)
class CoreBlocks:
    """``core_memory``: the working context's two blocks and their size limit (stores.py)."""

    persona: str = ""
    human: str = ""
    char_limit: Annotated[int, Range(1)] = 2000


@dataclass(frozen=True)
class Functions:
    """``functions``: the results the functions return: search pages and the cut of any result."""

    page_size: Annotated[int, Range(1)] = 5
    function_return_chars: Annotated[int, Range(1)] = 3000


@dataclass(frozen=True)
class Queue:
    """``queue``: the FIFO queue's window and memory pressure (agent.py)."""

    context_window: Annotated[int, Range(256)] = 4096
    warn_fraction: Annotated[float, Range(0.0, 1.0)] = 0.75
    evict_fraction: Annotated[float, Range(0.0, 1.0)] = 0.75
    keep_last: Annotated[int, Range(0)] = 3


@dataclass(frozen=True)
class Loop:
    """``loop``: steps per question and the output caps and temperature of every call."""

    max_steps: Annotated[int, Range(1)] = 10
    final_send: bool = False
    step_max_tokens: Annotated[int, Range(1)] = 256
    summary_max_tokens: Annotated[int, Range(1)] = 256
    temperature: Annotated[float, Range(0, 2)] = 0.0


@dataclass(frozen=True)
class Prompts:
    """``prompts``: the system and summary prompts and the queued system messages."""

    system_prompt: Annotated[
        str, Placeholders("core_memory", optional=("recall_count", "archival_count", "page_size"))
    ] = "{core_memory}"
    summary_prompt: Annotated[str, Placeholders("messages")] = "{messages}"
    warning_message: str = "Memory pressure: save what matters."
    heartbeat_message: str = "Function called with request_heartbeat=true: your turn."
    failed_heartbeat_message: str = "The function call failed: your turn."
    final_step_message: str = ""


def loop_settings(functions: Functions, queue: Queue, loop: Loop, prompts: Prompts) -> LoopSettings:
    """The agent loop's settings from the groups it reads."""
    return LoopSettings(
        **asdict(queue),
        **asdict(loop),
        **asdict(prompts),
        function_return_chars=functions.function_return_chars,
    )
