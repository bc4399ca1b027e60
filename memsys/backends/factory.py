"""Build the shared services (LLM, embedder, tokenizer, cache, meter) from config."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from ..tokens import Tokenizer, get_tokenizer
from .cache import CallCache
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

    def close(self) -> None:
        self.llm.close()


def _plain(node: Any) -> dict:
    """A resolved plain dict from an optional config node."""
    return OmegaConf.to_container(node, resolve=True) if node is not None else {}


def build_cache(cfg: DictConfig) -> CallCache | None:
    if not cfg.get("cache", {}).get("enabled", True):
        return None
    return CallCache(Path(cfg.cache.path))


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
    """Instantiate ``cfg.llm.backend`` behind the cached, metered, retrying facade."""
    meter = meter or Meter(prices=_plain(cfg.llm.get("prices")))
    cache = cache if cache is not None else build_cache(cfg)
    return LLM(_instantiate_backend(cfg.llm, "llm"), meter=meter, cache=cache,
               max_in_flight=int(cfg.llm.get("max_in_flight", 8)), retry=RetryPolicy(**_plain(cfg.llm.get("retry"))),
               progress=bool(cfg.get("progress", True)))


def build_services(cfg: DictConfig, meter: Meter | None = None, cache: CallCache | None = None) -> Services:
    """Instantiate ``cfg.llm.backend`` and ``cfg.embedder.backend`` behind the cached facades."""
    meter = meter or Meter(prices=_plain(cfg.llm.get("prices")))
    cache = cache if cache is not None else build_cache(cfg)
    llm = build_llm(cfg, meter, cache)
    embedder = Embedder(_instantiate_backend(cfg.embedder, "embedder"), meter=meter, cache=cache,
                        batch_size=int(cfg.embedder.get("batch_size", 64)))
    return Services(llm=llm, embedder=embedder, tokenizer=get_tokenizer(cfg.get("tokenizer", "cl100k_base")),
                    meter=meter, cache=cache)
