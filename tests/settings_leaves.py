"""Every declared scalar or list setting of a composed config, with its hint: the fuzz test's walk
over the declarations (memsys.settings), so that a setting added later is fuzzed without a test edit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from memharness.eval.run.validate import resolve, run_schema
from memharness.memsys import settings as s
from memharness.memsys.settings import Fields
from memharness.memsys.settings_check import locate, target_fields


@dataclass(frozen=True)
class Leaf:
    key: str  # as the checker's messages name it
    path: tuple[Any, ...]  # the keys to reach it in the plain config
    hint: Any
    owner: Any


def config_leaves(cfg: Any) -> list[Leaf]:
    """Every declared scalar or list setting of the config (only the keys present)."""
    return list(leaves(resolve(cfg), run_schema()))


def leaves(value: Mapping, fields: Fields, path: tuple = (), owner: Any = None) -> Iterator[Leaf]:
    """The leaves of a section with named keys."""
    for name, (hint, _) in fields.items():
        if name in value:
            yield from _leaves(value[name], hint, (*path, name), owner)


def _leaves(value: Any, hint: Any, path: tuple, owner: Any) -> Iterator[Leaf]:
    base, found = s.unwrap(hint)[0], s.markers(hint)
    nested = [m for m in s.union_args(base) if _section_or_mapping(m)]
    target = value.get("_target_") if isinstance(value, Mapping) else None
    if s.Instantiated in found and isinstance(target, str):
        obj = locate(target)
        yield from leaves(value, target_fields(obj, found[s.Instantiated]), path, obj)
    elif isinstance(value, Mapping) and len(nested) == 1:
        yield from _leaves(value, nested[0], path, owner)
    elif s.is_schema(base) and isinstance(value, Mapping):
        yield from leaves(value, s.schema_fields(base), path, owner)
    elif s.container(base)[0] is dict and isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, s.container(base)[1], (*path, k), owner)
    else:
        yield Leaf(".".join(map(str, path)), path, hint, owner)


def _section_or_mapping(hint: Any) -> bool:
    base = s.unwrap(hint)[0]
    return s.is_schema(base) or s.container(base)[0] is dict
