"""Fuzz: random bad values for every numeric and choice setting of every config group; none runs.

The settings are discovered from the declarations (memsys.settings / eval.validate) of every
option of every config group, so a memory system, loader or backend added later is covered
without touching this file. For each setting a seeded generator draws values outside the range,
outside the choices, or of the wrong type; each must be reported on a line naming the setting,
and ``run()`` must refuse to start with it. In-range draws must pass (the checker must not
reject good values either).
"""

from __future__ import annotations

import copy
import functools
import math
import random
import string
import sys
import typing
from typing import Any, Literal

import pytest
from hydra import compose, initialize_config_dir
from memharness.eval.run.runner import run
from memharness.eval.run.validate import config_problems, context_problems, resolve
from memharness.memsys.products.adapter import venv_path
from memharness.memsys.services.types import ConfigError
from memharness.memsys.settings import Check, ChoicesFrom, Range, unwrap
from omegaconf import OmegaConf
from paths import ROOT
from settings_leaves import config_leaves

CONF = ROOT / "conf"
GROUPS = sorted(
    d.name
    for d in CONF.iterdir()
    # experiment/ and debug/ are @package _global_, answer_prompt/ @package eval.answer: their keys
    # belong to the other groups
    if d.is_dir()
    and d.name not in ("experiment", "debug", "answer_prompt")
    and any(d.glob("*.yaml"))
)
BASE = [
    "cache.path=/nonexistent-fuzz/cache.sqlite",
    "data_dir=/nonexistent-fuzz/data",
    "progress=false",
]


def compose_plain(group: str | None, option: str | None) -> dict[str, Any]:
    return copy.deepcopy(_composed(group, option))


@functools.cache
def _composed(group: str | None, option: str | None) -> dict[str, Any]:
    chosen = [f"{group}={option}"] if group else []
    values = _compose(tuple(chosen))
    product = (values.get("memory") or {}).get("product")
    if group == "memory" and product and not venv_path(product).exists():
        # a checkout without `make product-<name>`: its missing venv is refused (tested apart)
        chosen.append(f"memory.python={sys.executable}")
        values = _compose(tuple(chosen))
    if group == "memory" and context_problems(values):
        values = _compose(tuple(chosen + _fitting_llm(values)))
    return values


@functools.cache
def _compose(overrides: tuple[str, ...]) -> dict[str, Any]:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return resolve(compose("config", overrides=BASE + list(overrides)))


def _fitting_llm(values: dict[str, Any]) -> list[str]:
    """A memory whose prompts do not fit the default LLM's window is refused by the run check
    (mem0, docs/products/mem0.md); its shipped values are fuzzed with the smallest shipped LLM
    whose window fits them (``llm=local_16k``)."""
    windows = {}
    for path in (CONF / "llm").glob("*.yaml"):
        n_ctx = (OmegaConf.load(path).get("backend") or {}).get("n_ctx")
        if isinstance(n_ctx, int):
            windows[path.stem] = n_ctx
    for name in sorted(windows, key=windows.get):
        fitted = dict(values, llm={**values["llm"], "backend": {"n_ctx": windows[name]}})
        if not context_problems(fitted):
            return [f"llm={name}"]
    pytest.fail(f"{values['memory']['name']}: no shipped LLM has a window its prompts fit")


def _members(hint: Any) -> tuple[list[Any], bool]:
    """The non-null alternatives of a hint and whether null is allowed."""
    base, markers = unwrap(hint)
    if typing.get_origin(base) in (typing.Union, __import__("types").UnionType):
        args = typing.get_args(base)
        return [
            typing.Annotated[a, *markers] if markers else a for a in args if a is not type(None)
        ], type(None) in args
    return [hint], False


def _kind(hint: Any, owner: Any) -> tuple[str, Any, bool] | None:
    """(kind, detail, nullable) for numeric and choice settings; kind is one of
    int | float | bool | choice | choices_list | int_list."""
    members, nullable = _members(hint)
    found = _base_kind(members, owner)
    return None if found is None else (*found, nullable)


def _base_kind(members: list[Any], owner: Any) -> tuple[str, Any] | None:
    if len(members) != 1:
        return None
    base, markers = unwrap(members[0])
    rng = next((m for m in markers if isinstance(m, Range)), None)
    chosen = next((m for m in markers if isinstance(m, ChoicesFrom)), None)
    if chosen is not None:
        return "choice", tuple(chosen.choices(owner))
    if typing.get_origin(base) is Literal:
        return "choice", typing.get_args(base)
    if base is bool:
        return "bool", None
    if base in (int, float):
        return base.__name__, rng
    if typing.get_origin(base) is list:
        inner_base, inner_markers = unwrap(typing.get_args(base)[0])
        if typing.get_origin(inner_base) is Literal:
            return "choices_list", typing.get_args(inner_base)
        if inner_base is int and any(isinstance(m, Check) for m in markers):
            return "int_list", None
    return None


def _token(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_lowercase + "_", k=rng.randint(3, 12)))


def bad_values(kind: str, detail: Any, nullable: bool, rng: random.Random) -> list[Any]:
    """Values the setting must refuse."""
    return [v for v in _bad_values(kind, detail, rng) if not (nullable and v is None)]


def _bad_values(kind: str, detail: Any, rng: random.Random) -> list[Any]:
    if kind == "choice":
        out = [_token(rng) + "_x", rng.choice([3, 2.5, True, [detail[0]]])]
        upper = [c.upper() for c in detail if isinstance(c, str) and c.upper() not in detail]
        return out + upper[:1]
    if kind == "bool":
        return [rng.choice(["yes", "true", "on"]), rng.choice([0, 1, 2]), None]
    if kind == "choices_list":
        return [[*detail[:1], _token(rng) + "_metric"], detail[0], []]
    if kind == "int_list":
        return [[rng.randint(10, 20), rng.randint(0, 9)], [], "0,40", [0, 1.5]]
    numeric_type = [rng.choice(["abc", "1O", "", "ten"]), True, [1]]
    if kind == "int":
        numeric_type.append(rng.choice([0.5, 2.5, 1e3 + 0.25]))
    r: Range | None = detail
    if r is not None and r.lo is not None:
        numeric_type.append(
            r.lo
            if r.lo_open
            else r.lo
            - (1 if kind == "int" else rng.uniform(1e-6, 1.0))
            - (rng.randrange(1000) if kind == "int" else rng.uniform(0, 100))
        )
    if r is not None and r.hi is not None:
        numeric_type.append(
            r.hi
            if r.hi_open
            else r.hi
            + (1 if kind == "int" else rng.uniform(1e-6, 1.0))
            + (rng.randrange(1000) if kind == "int" else rng.uniform(0, 100))
        )
    if kind == "float" and r is not None:
        numeric_type.append(math.nan)
    return numeric_type


def good_values(kind: str, detail: Any, nullable: bool, rng: random.Random) -> list[Any]:
    """Values the setting must accept."""
    return ([None] if nullable else []) + _good_values(kind, detail, rng)


def _good_values(kind: str, detail: Any, rng: random.Random) -> list[Any]:
    if kind == "choice":
        return list(detail)
    if kind == "bool":
        return [True, False]
    if kind in ("choices_list", "int_list"):
        return []
    r: Range | None = detail
    lo = r.lo if r and r.lo is not None else -1000
    hi = r.hi if r and r.hi is not None else lo + 1000
    if kind == "int":
        lo_i, hi_i = (
            int(math.floor(lo)) + (1 if r and r.lo_open else 0),
            int(math.floor(hi)) - (1 if r and r.hi_open else 0),
        )
        return [rng.randint(lo_i, hi_i) for _ in range(3)] + [lo_i]
    return [lo + (hi - lo) * rng.uniform(0.01, 0.99) for _ in range(3)]


def discover() -> list[tuple[str, str, tuple, str, Any]]:
    """(group, option, path, key, kind) of every numeric or choice setting of every group option."""
    found, seen = [], set()
    targets = [(None, None)] + [
        (g, p.stem) for g in GROUPS for p in sorted((CONF / g).glob("*.yaml"))
    ]
    for group, option in targets:
        for leaf in config_leaves(compose_plain(group, option)):
            top = leaf.path[0]
            mine = (top == group) if group else (top not in GROUPS)
            kind = _kind(leaf.hint, leaf.owner)
            if mine and kind is not None and (group, option, leaf.path) not in seen:
                seen.add((group, option, leaf.path))
                found.append((group or "root", option or "defaults", leaf.path, leaf.key, kind))
    return found


SETTINGS = discover()


def test_every_group_option_is_covered():
    covered = {(g, o) for g, o, *_ in SETTINGS}
    options = {(g, p.stem) for g in GROUPS for p in (CONF / g).glob("*.yaml")}
    # the options without a setting of their own: full context, and no second judge
    assert options - covered == {("memory", "full_context"), ("judge", "none")}
    keys = {k for *_, k, _ in SETTINGS}
    assert {
        "memory.top_k",
        "memory.base_threshold",
        "memory.traversal",
        "memory.diagnostics.revenue_samples",
        "dataset.limit",
        "dataset.budget_tokens",
        "dataset.loader.chunk_size",
        "llm.backend.n_ctx",
        "llm.retry.max_retries",
        "eval.bootstrap.confidence",
        "eval.max_failed_fraction",
        "seed",
    } <= keys


def _set(plain: dict, path: tuple, value: Any) -> dict:
    out = copy.deepcopy(plain)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    "group,option,path,key,kind", SETTINGS, ids=[f"{g}={o}:{k}" for g, o, _, k, _ in SETTINGS]
)
def test_random_bad_values_never_run(group, option, path, key, kind, tmp_path):
    plain = compose_plain(None if group == "root" else group, None if group == "root" else option)
    assert config_problems(plain) == [], "the shipped defaults must be valid"
    rng = random.Random(f"{group}/{option}/{key}")
    for value in bad_values(*kind, rng):
        bad = _set(plain, path, value)
        problems = config_problems(bad)
        assert any(p.startswith(key) for p in problems), f"{key}={value!r} was accepted: {problems}"
        assert all("\n" not in p for p in problems)
        out = tmp_path / "run"
        with pytest.raises(ConfigError) as info:
            run(OmegaConf.create(bad), out)
        assert (
            key in str(info.value) and not out.exists()
        )  # refused before anything was written or loaded
    for value in good_values(*kind, rng):
        problems = config_problems(_set(plain, path, value))
        assert not any(p.startswith(key + "=") for p in problems), (
            f"{key}={value!r} was refused: {problems}"
        )


def test_every_numeric_setting_declares_its_range():
    """A number without a declared range would let -1 or 1e9 through: new systems must declare one."""
    from memharness.memsys.settings_check import describe

    for group, option in [(None, None)] + [
        (g, p.stem) for g in GROUPS for p in sorted((CONF / g).glob("*.yaml"))
    ]:
        for leaf in config_leaves(compose_plain(group, option)):
            kind = _kind(leaf.hint, leaf.owner)
            if kind and kind[0] in ("int", "float"):
                assert kind[1] is not None, (
                    f"{group}={option}: {leaf.key} is {describe(leaf.hint, leaf.owner)} "
                    "with no Range(...) declared"
                )


def test_a_snapshot_folder_that_is_a_file_is_refused_before_anything_runs(make_cfg, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    problems = config_problems(make_cfg(f"snapshots.path={afile}"))
    assert problems == [
        f"snapshots.path={afile}: is a file; name a folder (or null: beside cache.path)"
    ]
    assert config_problems(make_cfg(f"snapshots.path={afile}", "snapshots.enabled=false")) == []
    assert config_problems(make_cfg(f"snapshots.path={tmp_path / 'new'}")) == []
