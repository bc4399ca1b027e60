"""Every scalar or list setting of a config section with its declared hint (the fuzz test and the
documentation walk the declarations of ``memsys.settings`` through it)."""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from memharness.memsys.settings import Instantiated, declared_settings, unwrap
from memharness.memsys.settings_check import UNION_TYPES, is_schema, locate, schema_fields


@dataclass(frozen=True)
class Leaf:
    key: str  # as the checker's messages name it
    path: tuple[Any, ...]  # the keys to reach it in the plain config
    hint: Any
    value: Any
    owner: Any


def leaves(value: Any, hint: Any, path: tuple[Any, ...] = (), owner: Any = None) -> Iterator[Leaf]:
    """Every scalar or list setting under ``path`` with its declared hint."""
    base, markers = unwrap(hint)
    inst = next((m for m in markers if isinstance(m, Instantiated)), None)
    if inst is not None and isinstance(value, Mapping) and isinstance(value.get("_target_"), str):
        obj = locate(value["_target_"])
        fields = {name: (h, req) for name, h, req in inst.extra}
        fields.update(
            {
                n: (s.hint, s.required)
                for n, s in declared_settings(obj, inst.services).settings.items()
            }
        )
        yield from leaves_of(value, fields, path, obj)
        return
    if typing.get_origin(base) in UNION_TYPES and isinstance(value, Mapping):
        nested = [
            m
            for m in typing.get_args(base)
            if is_schema(unwrap(m)[0]) or typing.get_origin(unwrap(m)[0]) in (dict, Mapping)
        ]
        if len(nested) == 1:
            yield from leaves(value, nested[0], path, owner)
            return
    if is_schema(base) and isinstance(value, Mapping):
        yield from leaves_of(value, schema_fields(base), path, owner)
    elif typing.get_origin(base) in (dict, Mapping) and isinstance(value, Mapping):
        args = typing.get_args(base)
        for k, v in value.items():
            yield from leaves(v, args[1] if len(args) == 2 else Any, (*path, k), owner)
    else:
        yield Leaf(".".join(map(str, path)), path, hint, value, owner)


def leaves_of(
    value: Mapping,
    fields: dict[str, tuple[Any, bool]],
    path: tuple[Any, ...] = (),
    owner: Any = None,
) -> Iterator[Leaf]:
    """The leaves of a section with named keys (only the keys present in ``value``)."""
    for name, (hint, _) in fields.items():
        if name in value:
            yield from leaves(value[name], hint, (*path, name), owner)
