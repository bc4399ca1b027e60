"""config.yaml is written straight from the resolved dict, with the same text OmegaConf writes."""

from __future__ import annotations

import pytest
from memharness.eval.record.outputs import config_yaml
from memharness.eval.run.runner import config_snapshot
from omegaconf import OmegaConf


@pytest.mark.parametrize(
    "overrides",
    [
        (),
        ("memory=memtree", "dataset=sample"),
        ("memory=raptor", "eval.judge.enabled=false", "run.episodes_in_flight=3"),
    ],
)
def test_config_yaml_is_the_text_omegaconf_writes(make_cfg, overrides):
    resolved = config_snapshot(OmegaConf.to_container(make_cfg(*overrides), resolve=True))
    resolved["odd"] = {"s": "1.0", "t": "true", "n": "null", "u": "é ${not.resolved}", 3: [1, None]}
    text = config_yaml(resolved)
    assert text == OmegaConf.to_yaml(OmegaConf.create(resolved))
    assert OmegaConf.to_container(OmegaConf.create(text)) == resolved
