"""Build the shared services (LLM, embedder, tokenizer, cache, meter) from config."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.utils import get_class, instantiate
from memharness.memsys.services.budget import Budget
from memharness.memsys.services.cache import CallCache, network_filesystem
from memharness.memsys.services.deadline import Deadline
from memharness.memsys.services.embed import Embedder
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.tokens import Tokenizer, get_tokenizer
from memharness.memsys.services.types import ConfigError
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("memharness")


@dataclass
class Services:
    llm: LLM
    embedder: Embedder
    tokenizer: Tokenizer
    meter: Meter
    cache: CallCache | None
    deadline: Deadline = field(default_factory=Deadline)
    budget: Budget | None = None
    # builds a backend from a config section (``judges`` uses it too; a dry run passes stand-ins)
    make_backend: Callable[[Any, str], Any] = field(default=None)  # type: ignore[assignment]
    startup_s: float = 0.0  # time spent building the backends (loading model weights)

    def __post_init__(self) -> None:
        if self.make_backend is None:
            self.make_backend = _instantiate_backend

    def close(self) -> None:
        self.llm.close()


def _plain(node: Any) -> dict:
    """A resolved plain dict from an optional config node."""
    return OmegaConf.to_container(node, resolve=True) if node is not None else {}


def build_cache(cfg: DictConfig, run_dir: Path | None = None) -> CallCache | None:
    """The call cache: ``cache.path`` itself (``cache.mode=shared``), or with ``per_job`` a cache in
    the run folder that reads ``cache.path`` too (merged afterwards: ``python -m
    memharness.eval.cli.cache_merge``). A shared cache on a network file system gets a warning."""
    if not cfg.get("cache", {}).get("enabled", True):
        return None
    path = str(cfg.cache.path)
    from_env = os.environ.get("MEMHARNESS_CACHE")
    setting = (
        "cache.path (from $MEMHARNESS_CACHE)" if from_env and from_env == path else "cache.path"
    )
    if cfg.cache.get("mode", "shared") == "per_job" and run_dir is not None:
        return CallCache(
            Path(run_dir) / "calls.sqlite",
            setting="cache.mode=per_job (the run folder)",
            read_from=path,
        )
    fstype = network_filesystem(Path(path).parent)
    if fstype is not None:
        log.warning(
            "%s=%s is on a network file system (%s): SQLite's WAL locking is not safe there and jobs "
            "writing it at once can corrupt it; set cache.mode=per_job (each job writes its own cache, "
            "merged afterwards with memharness cache-merge; docs/scaling.md)",
            setting,
            path,
            fstype,
        )
    return CallCache(Path(path), setting=setting)


def _instantiate_backend(section: DictConfig, group: str) -> Any:
    """Build ``<group>.backend``; its errors name ``<group>.backend.*`` (a judge's are not the LLM's)."""
    prefix = f"{group}.backend"
    try:
        return instantiate(section.backend, **_prefix_kwargs(section.backend, prefix))
    except ConfigError as err:
        raise _named(err, group) from None
    except Exception as err:  # Hydra wraps constructor errors; surface ours unwrapped
        cause = err.__cause__ or err
        if isinstance(cause, ConfigError):
            raise _named(cause, group) from None
        raise ConfigError(
            f"could not build {group}.backend ({section.backend.get('_target_')}): {cause}"
        ) from err


def _prefix_kwargs(backend: Any, prefix: str) -> dict[str, str]:
    """``setting_prefix`` for backends that take it (their run-time errors name the setting too)."""
    try:
        target = get_class(str(backend.get("_target_")))
        accepts = "setting_prefix" in inspect.signature(target).parameters
    except Exception:  # not a class path: instantiate reports it
        return {}
    return {"setting_prefix": prefix} if accepts else {}


def _named(err: ConfigError, group: str) -> ConfigError:
    """A backend built for another section (the judge) than ``llm`` reports that section's keys:
    backends without ``setting_prefix`` write ``llm.backend.<key>`` in their messages."""
    if group in ("llm", "embedder") or "llm.backend." not in str(err):
        return err
    return ConfigError(str(err).replace("llm.backend.", f"{group}.backend."))


def build_budget(cfg: DictConfig, meter: Meter) -> Budget:
    """``budget.usd`` / ``budget.calls`` (null = no limit)."""
    section = _plain(cfg.get("budget"))
    calls = section.get("calls")
    return Budget(meter, usd=section.get("usd"), calls=None if calls is None else int(calls))


def build_llm(cfg: DictConfig, meter: Meter | None = None, cache: CallCache | None = None) -> LLM:
    """Instantiate ``cfg.llm.backend`` alone behind the cached, metered, retrying facade (no embedder)."""
    meter = meter or Meter(prices=_plain(cfg.llm.get("prices")))
    cache = cache if cache is not None else build_cache(cfg)
    deadline = Deadline((cfg.get("eval") or {}).get("deadline_s"))
    backend = _instantiate_backend(cfg.llm, "llm")
    if callable(getattr(backend, "set_deadline", None)):
        backend.set_deadline(deadline)
    return LLM(
        backend,
        meter=meter,
        cache=cache,
        max_in_flight=int(cfg.llm.get("max_in_flight", 8)),
        retry=RetryPolicy(**_plain(cfg.llm.get("retry"))),
        progress=bool(cfg.get("progress", True)),
        deadline=deadline,
    )


def same_server(chat_backend: Any, embed_backend: Any) -> bool:
    """Whether chat and embedding requests go to one HTTP server: they then share its request
    budget (``llm.max_in_flight``), so embeddings never add requests beyond it."""
    url = getattr(chat_backend, "base_url", None)
    return isinstance(url, str) and url == getattr(embed_backend, "base_url", None)


def build_services(
    cfg: DictConfig,
    meter: Meter | None = None,
    cache: CallCache | None = None,
    make_backend: Callable[[Any, str], Any] | None = None,
    run_dir: Path | None = None,
) -> Services:
    """Instantiate ``cfg.llm.backend`` and ``cfg.embedder.backend`` behind the cached facades.

    The run's deadline (``eval.deadline_s``, counted from here) is shared by both facades and by
    backends that can cut requests in flight (``set_deadline``); so is its budget (``budget.*``).
    ``make_backend(section, group)`` builds each backend (default: instantiate its ``_target_``)."""
    import time

    meter = meter or Meter(prices=_plain(cfg.llm.get("prices")))
    cache = cache if cache is not None else build_cache(cfg, run_dir)
    deadline = Deadline((cfg.get("eval") or {}).get("deadline_s"))
    budget = build_budget(cfg, meter)
    retry = RetryPolicy(**_plain(cfg.llm.get("retry")))
    make_backend = make_backend or _instantiate_backend
    start = time.perf_counter()
    chat_backend = make_backend(cfg.llm, "llm")
    embed_backend = make_backend(cfg.embedder, "embedder")
    startup_s = time.perf_counter() - start
    for backend in (chat_backend, embed_backend):
        if callable(getattr(backend, "set_deadline", None)):
            backend.set_deadline(deadline)
    llm = LLM(
        chat_backend,
        meter=meter,
        cache=cache,
        max_in_flight=int(cfg.llm.get("max_in_flight", 8)),
        retry=retry,
        progress=bool(cfg.get("progress", True)),
        deadline=deadline,
        budget=budget,
    )
    embedder = Embedder(
        embed_backend,
        meter=meter,
        cache=cache,
        batch_size=int(cfg.embedder.get("batch_size", 64)),
        deadline=deadline,
        budget=budget,
        slots=llm.slots if same_server(chat_backend, embed_backend) else None,
    )
    return Services(
        llm=llm,
        embedder=embedder,
        tokenizer=get_tokenizer(cfg.get("tokenizer", "cl100k_base")),
        meter=meter,
        cache=cache,
        deadline=deadline,
        budget=budget,
        make_backend=make_backend,
        startup_s=startup_s,
    )
