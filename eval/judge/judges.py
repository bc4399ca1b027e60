"""The judge as its own service: ``judge=<name>`` picks its model, ``judge@judge2=<name>`` a second one.

``conf/judge/same.yaml`` (the default) points at the run's LLM; the other options reuse the
``llm/`` configs (``judge=openai judge.backend.model=gpt-4o`` judges with GPT-4o while
``llm=openai`` builds with GPT-4o-mini, as in CAM's Table 2). A judge whose resolved backend
equals the run's LLM shares that LLM object (one model in memory, one cache namespace); any other
gets its own backend behind the same cache and meter, so its calls have their own cache identity
(its model id) and their own cost (stage ``judge``, its prices merged into the meter's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.services.factory import Services
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import ConfigError
from omegaconf import DictConfig, OmegaConf


@dataclass
class Judges:
    """The primary judge and the optional second one, with the LLMs this module created."""

    primary: LLM
    second: LLM | None = None
    names: dict[str, str] = field(default_factory=dict)
    owned: list[LLM] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        """What metrics.json records: each judge's config name and model id."""
        out: dict[str, Any] = {
            "judge": self.primary.model_id,
            "judge_config": self.names.get("judge", "same"),
        }
        if self.second is not None:
            out.update(judge2=self.second.model_id, judge2_config=self.names.get("judge2"))
        return out

    def close(self) -> None:
        for llm in self.owned:
            llm.close()


def _section(cfg: DictConfig, key: str) -> dict[str, Any] | None:
    node = cfg.get(key)
    if node is None:
        return None
    if not isinstance(node, DictConfig):
        raise ConfigError(
            f"{key}={node!r} is not a judge config: choose it with `judge@{key}=<name>` "
            f"(a file in conf/judge/, e.g. judge@{key}=local_tiny)"
            if key == "judge2"
            else f"{key}={node!r} is not a judge config: choose one of conf/judge/ with `{key}=<name>`"
        )
    plain = OmegaConf.to_container(node, resolve=True)
    return None if not plain.get("backend") else plain


def _build(
    cfg: DictConfig, key: str, services: Services, known: list[tuple[dict, LLM]]
) -> tuple[LLM, bool]:
    """The LLM for judge section ``key``: an existing one with the same backend, else a new one."""
    section = _section(cfg, key)
    backend = section["backend"]
    for other_backend, llm in known:
        if other_backend == backend:
            return llm, False
    services.meter.prices.update(section.get("prices") or {})
    # the run's deadline and budget hold for the judges' calls too
    llm = LLM(
        services.make_backend(cfg[key], key),
        meter=services.meter,
        cache=services.cache,
        max_in_flight=int(section.get("max_in_flight", 8)),
        retry=RetryPolicy(**(section.get("retry") or {})),
        progress=bool(cfg.get("progress", True)),
        deadline=services.deadline,
        budget=services.budget,
    )
    return llm, True


def build_judges(cfg: DictConfig, services: Services) -> Judges:
    """The judges of a run (see the module docstring); ``judge`` defaults to the run's LLM."""
    llm_backend = OmegaConf.to_container(cfg.llm.backend, resolve=True)
    known: list[tuple[dict, LLM]] = [(llm_backend, services.llm)]
    names = {}
    if _section(cfg, "judge") is None:  # no judge group at all: the run's LLM judges
        judges = Judges(primary=services.llm, names={"judge": "same"})
    else:
        primary, new = _build(cfg, "judge", services, known)
        names["judge"] = str(cfg.judge.get("name", "judge"))
        judges = Judges(primary=primary, names=names, owned=[primary] if new else [])
        known.append((OmegaConf.to_container(cfg.judge.backend, resolve=True), primary))
    if _section(cfg, "judge2") is not None:
        second, new = _build(cfg, "judge2", services, known)
        judges.second = second
        judges.names["judge2"] = str(cfg.judge2.get("name", "judge2"))
        if new:
            judges.owned.append(second)
    return judges
