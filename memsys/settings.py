"""Typed settings: how a configurable class or function declares its settings (types, ranges,
choices) next to its own code, so one generic checker can validate any config before a run starts.

A memory system (or a backend, a dataset loader, any Hydra ``_target_``) declares its settings as
the type hints of its constructor (or function) parameters::

    class MyMemory(HierarchicalMemory):
        modes = ("fast", "slow")

        def __init__(self, llm=None, embedder=None, tokenizer=None, *,
                     top_k: Annotated[int, Range(1)] = 10,                      # an integer >= 1
                     mode: Annotated[str, ChoicesFrom("modes")] = "fast",      # a class attribute lists them
                     scoring: Literal["cosine", "dot"] = "cosine",             # fixed choices
                     threshold: Annotated[float, Range(-1, 1)] = 0.0,          # a number in [-1, 1]
                     max_depth: Annotated[int, Range(1)] | None = None,        # null or an integer >= 1
                     prompt: Annotated[str, Placeholders("text")] = "{text}",  # str.format fields
                     **core: Any) -> None:                                     # the base class's settings

Declarations are inherited: ``**core`` (any ``**kwargs``) forwards to the parent classes, whose
parameters then count as settings too; a parameter re-declared without an annotation takes the
annotation of the same name further up the MRO. A class attribute ``settings_schema`` (a dict of
name -> hint, merged along the MRO) overrides or adds hints without touching the signature. A
classmethod ``check_settings(settings) -> iterable of (key, message)`` adds cross-field rules.
Nested sections are ``TypedDict`` classes or dataclasses; ``dict[str, T]`` and ``list[T]`` work
too. An unannotated parameter with a plain default (int, float, bool, str) is checked against the
default's type. The checker (``memsys.settings_check``) turns the declarations of each target into
one strict pydantic model.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
import string
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SERVICES = ("llm", "embedder", "tokenizer")  # handed to memories by the runner, never configured


# ----------------------------------------------------------------------------- markers (Annotated[..., marker])


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
    """A local path that must exist (``kind``: file | dir | any) when the value is not null."""

    kind: str = "any"

    def problem(self, value: str) -> str | None:
        path = os.path.expanduser(value)
        exists = os.path.exists(path)
        if self.kind == "file" and not os.path.isfile(path):
            return "not a file" if exists else "no such file"
        if self.kind == "dir" and not os.path.isdir(path):
            return "not a folder" if exists else "no such folder"
        return None if exists or self.kind != "any" else "does not exist"


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
    """A section with a ``_target_`` (built by Hydra): its settings are the target's declarations.
    ``services`` are parameters the caller passes itself; ``extra`` are keys of the section that
    are not passed to the target (name -> (hint, required))."""

    services: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any, bool], ...] = ()


# ----------------------------------------------------------------------------- declarations of a target


@dataclass(frozen=True)
class Setting:
    name: str
    hint: Any
    default: Any
    required: bool
    owner: Any  # the class or function whose parameter it is


@dataclass
class Declarations:
    """The settings of one target: name -> Setting; ``open`` when it accepts any further key."""

    settings: dict[str, Setting]
    open: bool = False


@functools.cache
def declared_settings(target: Any, services: tuple[str, ...] = ()) -> Declarations:
    """The settings a function, or a class through its constructors along the MRO, declares."""
    is_class = inspect.isclass(target)
    mro = [
        k for k in getattr(target, "__mro__", ()) if k is not object and "__init__" in k.__dict__
    ]
    chain = [(k, k.__dict__["__init__"]) for k in mro] if is_class else [(target, target)]
    found: dict[str, Setting] = {}
    open_ = bool(chain)
    for i, (owner, func) in enumerate(chain):  # most derived first, on through **kwargs
        params = list(inspect.signature(func).parameters.values())[is_class:]
        for p in params:
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in (
                *services,
                *found,
            ):
                found[p.name] = _setting(p, owner, [f for _, f in chain[i:]])
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            open_ = False
            break
    for klass in reversed(mro if is_class else []):  # settings_schema: base first, then subclasses
        for name, hint in (klass.__dict__.get("settings_schema") or {}).items():
            old = found.get(name) or Setting(name, hint, None, False, klass)
            found[name] = dataclasses.replace(old, hint=hint)
    return Declarations(found, open_)


def _setting(p: inspect.Parameter, owner: Any, funcs: list[Any]) -> Setting:
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
    return Setting(p.name, plain if own is None else own, default, required, owner)


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


@functools.cache
def _hints(func: Any) -> dict[str, Any]:
    """Resolved annotations (with Annotated extras); an unresolvable one is left out, not fatal."""
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # one bad annotation must not hide the others
        out = {}
        for name, ann in getattr(func, "__annotations__", {}).items():
            try:  # noqa: S307 (annotations)
                out[name] = eval(ann, func.__globals__) if isinstance(ann, str) else ann
            except Exception:
                continue
        return out
