"""``run.episodes_in_flight``: null (the default) derives it from the request budget, an explicit
value wins, and the resolved figure is what the scheduler uses."""

from __future__ import annotations

import pytest
from memharness.eval.run.episodes import AUTO_FLOOR, episodes_in_flight, in_order
from memharness.eval.run.validate import validate_config
from memharness.memsys.services.types import ConfigError


def test_the_default_is_null_and_derives_from_llm_max_in_flight(make_cfg):
    cfg = make_cfg("llm.max_in_flight=32")
    assert cfg.run.episodes_in_flight is None
    validate_config(cfg)
    assert episodes_in_flight(cfg) == 32
    assert episodes_in_flight(make_cfg("llm.max_in_flight=48")) == 48


def test_a_small_request_budget_keeps_the_floor(make_cfg):
    # one request slot (an in-process model): other episodes embed and compute meanwhile
    assert episodes_in_flight(make_cfg("llm.max_in_flight=1")) == AUTO_FLOOR


def test_the_openai_config_composes_to_its_own_budget(make_cfg):
    cfg = make_cfg("llm=openai", "llm.backend.api_key_env=null", fake=False)
    assert episodes_in_flight(cfg) == max(int(cfg.llm.max_in_flight), AUTO_FLOOR)


@pytest.mark.parametrize("value", [1, 3, 64])
def test_an_explicit_value_wins(make_cfg, value):
    cfg = make_cfg("llm.max_in_flight=32", f"run.episodes_in_flight={value}")
    validate_config(cfg)
    assert episodes_in_flight(cfg) == value


@pytest.mark.parametrize("value", [0, -2, "many"])
def test_a_bad_value_is_refused_naming_the_setting(make_cfg, value):
    with pytest.raises(ConfigError, match="episodes_in_flight"):
        validate_config(make_cfg(f"run.episodes_in_flight={value}"))


def test_in_order_keeps_item_order_whatever_the_workers():
    import time

    def work(x: int) -> int:
        time.sleep(0.001 * (5 - x % 5))  # later items finish first
        return x * x

    items = list(range(20))
    assert in_order(items, work, 8, lambda reason: None) == [x * x for x in items]
    assert in_order(items, work, 1, lambda reason: None) == [x * x for x in items]


@pytest.mark.parametrize("value", [0, -0.01, "fast"])
def test_a_bad_switch_interval_is_refused_naming_the_setting(make_cfg, value):
    validate_config(make_cfg("run.switch_interval_s=null"))  # null: the interpreter's own
    with pytest.raises(ConfigError, match="switch_interval_s"):
        validate_config(make_cfg(f"run.switch_interval_s={value}"))
