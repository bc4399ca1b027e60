"""Build the shared services (LLM, embedder, tokenizer, cache, meter) from config."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from ..tokens import Tokenizer, get_tokenizer
from .cache import CallCache
from .deadline import Deadline
from .embed import Embedder
from .llm import LLM, RetryPolicy
from .meter import Meter
from .types import ConfigError


@dataclass
class Services:
    llm: LLM
    embedder: Embedder
    tokenizer: Tokenizer
    meter: Meter
    cache: CallCache | None
    deadline: Deadline = field(default_factory=Deadline)

    def close(self) -> None:
        self.llm.close()


def _plain(node: Any) -> dict:
    """A resolved plain dict from an optional config node."""
    return OmegaConf.to_container(node, resolve=True) if node is not None else {}


def build_cache(cfg: DictConfig) -> CallCache | None:
    if not cfg.get("cache", {}).get("enabled", True):
        return None
    path = str(cfg.cache.path)
    from_env = os.environ.get("MEMHARNESS_CACHE")
    setting = "cache.path (from $MEMHARNESS_CACHE)" if from_env and from_env == path else "cache.path"
    return CallCache(Path(path), setting=setting)


def _instantiate_backend(section: DictConfig, group: str) -> Any:
    try:
        return instantiate(section.backend)
    except ConfigError:
        raise
    except Exception as err:  # Hydra wraps constructor errors; surface ours unwrapped
        cause = err.__cause__ or err
        if isinstance(cause, ConfigError):
            raise cause from None
        raise ConfigError(f"could not build {group}.backend ({section.backend.get('_target_')}): {cause}") from err


def build_llm(cfg: DictConfig, meter: Meter | None = None, cache: CallCache | None = None) -> LLM:
    """Instantiate ``cfg.llm.backend`` alone behind the cached, metered, retrying facade (no embedder)."""
    meter = meter or Meter(prices=_plain(cfg.llm.get("prices")))
    cache = cache if cache is not None else build_cache(cfg)
    deadline = Deadline((cfg.get("eval") or {}).get("deadline_s"))
    backend = _instantiate_backend(cfg.llm, "llm")
    if callable(getattr(backend, "set_deadline", None)):
        backend.set_deadline(deadline)
    return LLM(backend, meter=meter, cache=cache, max_in_flight=int(cfg.llm.get("max_in_flight", 8)),
               retry=RetryPolicy(**_plain(cfg.llm.get("retry"))), progress=bool(cfg.get("progress", True)),
               deadline=deadline)


def build_services(cfg: DictConfig, meter: Meter | None = None, cache: CallCache | None = None) -> Services:
    """Instantiate ``cfg.llm.backend`` and ``cfg.embedder.backend`` behind the cached facades.

    The run's deadline (``eval.deadline_s``, counted from here) is shared by both facades and by
    backends that can cut requests in flight (``set_deadline``)."""
    meter = meter or Meter(prices=_plain(cfg.llm.get("prices")))
    cache = cache if cache is not None else build_cache(cfg)
    deadline = Deadline((cfg.get("eval") or {}).get("deadline_s"))
    retry = RetryPolicy(**_plain(cfg.llm.get("retry")))
    chat_backend = _instantiate_backend(cfg.llm, "llm")
    embed_backend = _instantiate_backend(cfg.embedder, "embedder")
    for backend in (chat_backend, embed_backend):
        if callable(getattr(backend, "set_deadline", None)):
            backend.set_deadline(deadline)
    llm = LLM(chat_backend, meter=meter, cache=cache, max_in_flight=int(cfg.llm.get("max_in_flight", 8)),
              retry=retry, progress=bool(cfg.get("progress", True)), deadline=deadline)
    embedder = Embedder(embed_backend, meter=meter, cache=cache, batch_size=int(cfg.embedder.get("batch_size", 64)),
                        deadline=deadline)
    return Services(llm=llm, embedder=embedder, tokenizer=get_tokenizer(cfg.get("tokenizer", "cl100k_base")),
                    meter=meter, cache=cache, deadline=deadline)
