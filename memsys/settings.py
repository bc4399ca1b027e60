"""Typed settings: a configurable class or function (any Hydra ``_target_``) declares its settings
as the type hints of its parameters, and one checker (``memsys.settings_check``) validates any
config against them before a run starts (every rule and marker: docs/config.md)::

    def __init__(self, llm=None, embedder=None, tokenizer=None, *,
                 top_k: Annotated[int, Range(1)] = 10,                   # an integer >= 1
                 mode: Annotated[str, ChoicesFrom("modes")] = "fast",   # a class attribute lists them
                 scoring: Literal["cosine", "dot"] = "cosine",          # fixed choices
                 prompt: Annotated[str, Placeholders("text")] = "{text}",  # str.format fields
                 **core: Any) -> None:  # forwarded: the base classes' parameters count too

A classmethod ``check_settings(settings) -> (key, message)...`` adds rules between settings.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import re
import string
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

SERVICES = ("llm", "embedder", "tokenizer")  # handed to memories by the runner, never configured


@dataclass(frozen=True)
class Range:
    """A numeric range; ``None`` leaves a side open-ended. ``*_open`` excludes the bound itself."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def ok(self, value: float) -> bool:
        low = self.lo is None or value > self.lo or (value == self.lo and not self.lo_open)
        high = self.hi is None or value < self.hi or (value == self.hi and not self.hi_open)
        return low and high  # NaN compares false everywhere: never in a range

    def describe(self) -> str:
        lo, hi = self.lo, self.hi
        if lo is not None and hi is not None:
            return f"in {'(' if self.lo_open else '['}{lo:g}, {hi:g}{')' if self.hi_open else ']'}"
        if lo is not None:
            return f"{'>' if self.lo_open else '>='} {lo:g}"
        return f"{'<' if self.hi_open else '<='} {hi:g}" if hi is not None else ""


@dataclass(frozen=True)
class ChoicesFrom:
    """The allowed values are ``getattr(target_class, attr)`` (a subclass may extend them)."""

    attr: str

    def choices(self, owner: Any) -> tuple[Any, ...]:
        return tuple(getattr(owner, self.attr, ()) or ())


@dataclass(frozen=True)
class Placeholders:
    """A ``str.format`` template: it must use every ``required`` field and no field outside
    ``required + optional`` (a typo would fail mid-run with a KeyError)."""

    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def __init__(self, *required: str, optional: tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "required", tuple(required))
        object.__setattr__(self, "optional", tuple(optional))

    def problem(self, text: str) -> str | None:
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
        except ValueError as err:
            return f"not a valid template ({err}); write a literal brace as {{{{ or }}}}"
        names = {re.split(r"[.\[!:]", f, maxsplit=1)[0] for f in fields}
        allowed = set(self.required) | set(self.optional)
        unknown = sorted(n for n in names if n not in allowed)
        missing = [n for n in self.required if n not in names]
        if unknown:
            return (
                f"unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; allowed: "
                f"{', '.join('{' + n + '}' for n in sorted(allowed)) or 'none'}"
            )
        if missing:
            return f"must contain the placeholder(s) {', '.join('{' + n + '}' for n in missing)}"
        return None


@dataclass(frozen=True)
class NonEmpty:
    """A string, list or mapping that must not be empty."""


@dataclass(frozen=True)
class PathExists:
    """A local path that must exist (``kind``: file | any) when the value is not null."""

    kind: str = "any"

    def problem(self, value: str) -> str | None:
        path = os.path.expanduser(value)
        if self.kind == "file" and not os.path.isfile(path):
            return "not a file" if os.path.exists(path) else "no such file"
        return None if os.path.exists(path) else "does not exist"


@dataclass(frozen=True)
class EnvVarName:
    """The NAME of an environment variable holding a secret. A value that is not a valid name, or
    looks like a key itself, is refused without being echoed and is redacted from every output."""


@dataclass(frozen=True)
class Check:
    """Any predicate: ``ok(value) -> bool`` with a description of what is allowed."""

    ok: Callable[[Any], bool]
    description: str


@dataclass(frozen=True)
class Instantiated:
    """A section with a ``_target_``: its settings are the target's declarations. ``services``: passed
    by the caller itself; ``extra``: keys not passed to the target (name, hint, required)."""

    services: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any, bool], ...] = ()


Fields = dict[str, tuple[Any, bool]]  # a section's keys: name -> (hint, required)


@functools.cache
def declared_settings(target: Any, services: tuple[str, ...] = ()) -> tuple[Fields, bool]:
    """The settings a function, or a class through its constructors along the MRO, declares, and
    whether it is open (takes any further key through ``**kwargs`` to the end of the chain)."""
    is_class = inspect.isclass(target)
    mro = [k for k in getattr(target, "__mro__", ()) if k is not object and "__init__" in vars(k)]
    chain = [k.__init__ for k in mro] if is_class else [target]
    found: Fields = {}
    open_ = bool(chain)
    for i, func in enumerate(chain):  # most derived first, on through **kwargs
        params = list(inspect.signature(func).parameters.values())[is_class:]
        for p in params:
            skip = p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in services
            if not skip and p.name not in found:
                found[p.name] = _setting(p, chain[i:])
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            open_ = False
            break
    return found, open_


def _setting(p: inspect.Parameter, funcs: list[Any]) -> tuple[Any, bool]:
    """A parameter's setting. Without an annotation (or with a bare ``top_k: int`` under a base's
    ``Annotated[int, Range(1)]``) it takes the nearest ancestor's hint, else its default's type."""
    required = p.default is inspect.Parameter.empty
    default = None if required else p.default
    own = _hints(funcs[0]).get(p.name)
    inherited = next((h for f in funcs[1:] if (h := _hints(f).get(p.name)) is not None), None)
    bare = own is not None and not unwrap(own)[1] and unwrap(own)[0] == unwrap(inherited)[0]
    if inherited is not None and (own is None or own is Any or bare):
        own = inherited
    plain = type(default) if type(default) in (bool, int, float, str) else Any
    return plain if own is None else own, required


_hints = functools.cache(functools.partial(typing.get_type_hints, include_extras=True))


def unwrap(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """(base type, markers) of ``Annotated[base, *markers]``, with NotRequired / Required removed."""
    markers: tuple[Any, ...] = ()
    while True:
        origin = typing.get_origin(hint)
        if origin is typing.Annotated:
            markers += tuple(hint.__metadata__)
            hint = hint.__origin__
        elif origin in (typing.NotRequired, typing.Required):
            hint = typing.get_args(hint)[0]
        else:
            return hint, markers


def markers(hint: Any) -> dict[type, Any]:
    """Marker type -> the hint's first marker of that type."""
    return {type(m): m for m in reversed(unwrap(hint)[1])}


def union_args(base: Any) -> tuple[Any, ...]:
    """The members of a union (``X | None``, ``Optional[X]``); () for any other hint."""
    return typing.get_args(base) if typing.get_origin(base) in (Union, types.UnionType) else ()


def container(base: Any) -> tuple[type | None, Any]:
    """(list or dict, the item hint) of a list-like or mapping hint; (None, None) otherwise."""
    origin, args = typing.get_origin(base) or base, typing.get_args(base) or (Any,)
    if origin in (list, tuple, Sequence):
        return list, args[0]
    return (dict, args[-1]) if origin in (dict, Mapping) else (None, None)


def is_schema(hint: Any) -> bool:
    """A TypedDict or a dataclass: a nested section with named keys."""
    return typing.is_typeddict(hint) or (isinstance(hint, type) and dataclasses.is_dataclass(hint))


@functools.cache
def schema_fields(hint: Any) -> dict[str, tuple[Any, bool]]:
    """name -> (hint, required) of a TypedDict or dataclass section."""
    hints = _hints(hint)
    if typing.is_typeddict(hint):  # total=False, Required and NotRequired count
        return {n: (h, n in hint.__required_keys__) for n, h in hints.items()}
    missing = dataclasses.MISSING
    return {
        f.name: (hints.get(f.name, Any), f.default is f.default_factory is missing)
        for f in dataclasses.fields(hint)
    }


def show(value: Any) -> str:
    """A short, one-line rendering of a config value."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false
    if isinstance(value, str):
        short = len(value) <= 60 and "\n" not in value
        return repr(value if short else value.split("\n", 1)[0][:57] + "...")
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_NOUNS = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
_NOUNS.update({type(None): "null", Any: "any value"})


def describe(hint: Any, owner: Any = None) -> str:
    """What a setting allows, in words (``an integer >= 1``, ``one of a | b``, ``null or ...``)."""
    base, found = unwrap(hint)[0], markers(hint)
    members, (shape, inner) = union_args(base), container(base)
    if EnvVarName in found:
        return ("null or " if type(None) in members else "") + "the name of an environment variable"
    if members:
        parts = [describe(a, owner) for a in members if a is not type(None)]
        return " or ".join((["null"] if type(None) in members else []) + parts)
    if Check in found:
        return found[Check].description
    if ChoicesFrom in found:
        return "one of " + " | ".join(map(str, found[ChoicesFrom].choices(owner)))
    if choices := typing.get_origin(base) is Literal and typing.get_args(base):
        return "one of " + " | ".join(a if isinstance(a, str) else show(a) for a in choices)
    if Instantiated in found:
        return "a section with a _target_"
    if base is str and PathExists in found:
        return (
            "the path of an existing file"
            if found[PathExists].kind == "file"
            else "an existing path"
        )
    if base is str and Placeholders in found:
        needs = found[Placeholders]
        fields = [*needs.required, *(f"optionally {o}" for o in needs.optional)]
        return "a template string" + (f" with {{placeholders}}: {', '.join(fields)}" * bool(fields))
    if base is str and NonEmpty in found:
        return "a non-empty string"
    if base in (int, float) and Range in found:
        return f"{_NOUNS[base]} {found[Range].describe()}".strip()
    if shape is not None:
        what, each = ("a list", "each") if shape is list else ("a mapping", "each value")
        return what if inner is Any else f"{what} ({each} {describe(inner, owner)})"
    if is_schema(base):
        return "a mapping with keys " + ", ".join(schema_fields(base))
    return _NOUNS.get(base) or getattr(base, "__name__", str(base))


G = typing.TypeVar("G")


def group(cls: type[G], section: G | Mapping[str, Any] | None) -> G:
    """A grouped settings object (a dataclass, e.g. GraphRAG's ``Extraction``) from its YAML
    section (the runner hands plain lists and mappings); null gives the group's defaults."""
    return section if isinstance(section, cls) else cls(**(section or {}))
