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
default's type. The checker is ``memsys.settings_check``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
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
        if isinstance(value, float) and math.isnan(value):
            return False
        if self.lo is not None and (value < self.lo or (self.lo_open and value == self.lo)):
            return False
        return not (
            self.hi is not None and (value > self.hi or (self.hi_open and value == self.hi))
        )

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '<='} {self.hi:g}"
        return ""


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
    inferred: bool = False  # no annotation anywhere: the type was taken from the default


@dataclass
class Declarations:
    """The settings of one target: name -> Setting; ``open`` when it accepts any further key."""

    target: Any
    settings: dict[str, Setting]
    open: bool = False


@functools.cache
def declared_settings(target: Any, services: tuple[str, ...] = ()) -> Declarations:
    """The settings a class (constructor along the MRO) or a function declares."""
    if inspect.isclass(target):
        return _class_settings(target, services)
    params = inspect.signature(target).parameters.values()
    hints = _hints(target)
    out: dict[str, Setting] = {}
    open_ = False
    for p in params:
        if p.kind == p.VAR_KEYWORD:
            open_ = True
        elif p.kind != p.VAR_POSITIONAL and p.name not in services:
            out[p.name] = _setting(p, hints.get(p.name), target)
    return Declarations(target, out, open_)


def _class_settings(cls: type, services: tuple[str, ...]) -> Declarations:
    inits = [k for k in cls.__mro__ if k is not object and "__init__" in k.__dict__]
    by_name: dict[str, Setting] = {}
    open_ = True
    for klass in inits:  # most derived first; stop at the first __init__ without **kwargs
        init = klass.__dict__["__init__"]
        hints = _hints(init)
        forwards = False
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind == p.VAR_KEYWORD:
                forwards = True
            elif p.kind != p.VAR_POSITIONAL and p.name not in services and p.name not in by_name:
                by_name[p.name] = _setting(p, hints.get(p.name), klass)
        if not forwards:
            open_ = False
            break
    for name, setting in list(
        by_name.items()
    ):  # inherit what a subclass left out or re-declared plainly
        inherited = _inherited_hint(inits[inits.index(setting.owner) + 1 :], name)
        if inherited is not None and _refines(setting, inherited):
            by_name[name] = dataclasses.replace(setting, hint=inherited, inferred=False)
    for klass in reversed(cls.__mro__):  # settings_schema: base first, subclasses override
        for name, hint in (klass.__dict__.get("settings_schema") or {}).items():
            old = by_name.get(name)
            by_name[name] = (
                dataclasses.replace(old, hint=hint, inferred=False)
                if old
                else Setting(name, hint, None, False, klass)
            )
    return Declarations(cls, by_name, open_ and bool(inits))


def _refines(setting: Setting, inherited: Any) -> bool:
    """Take the ancestor's hint when the subclass gave none, or the same bare type without markers
    (``top_k: int`` under a base's ``Annotated[int, Range(1)]``)."""
    if setting.inferred or setting.hint is Any:
        return True
    own_base, own_markers = unwrap(setting.hint)
    return not own_markers and own_base == unwrap(inherited)[0]


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


def _inherited_hint(inits: list[type], name: str) -> Any:
    for klass in inits:
        hint = _hints(klass.__dict__["__init__"]).get(name)
        if hint is not None:
            return hint
    return None


def _setting(p: inspect.Parameter, hint: Any, owner: Any) -> Setting:
    required = p.default is inspect.Parameter.empty
    default = None if required else p.default
    if hint is not None:
        return Setting(p.name, hint, default, required, owner)
    plain = type(default) if type(default) in (bool, int, float, str) else Any
    return Setting(p.name, plain, default, required, owner, inferred=True)


@functools.cache
def _hints(func: Any) -> dict[str, Any]:
    """Resolved annotations (with Annotated extras); an unresolvable one is left out, not fatal."""
    try:
        return typing.get_type_hints(func, include_extras=True)
    except Exception:  # one bad annotation must not hide the others
        out = {}
        namespace = getattr(func, "__globals__", {})
        for name, ann in getattr(func, "__annotations__", {}).items():
            try:
                out[name] = eval(ann, namespace) if isinstance(ann, str) else ann  # noqa: S307 (annotations)
            except Exception:
                continue
        return out


# ----------------------------------------------------------------------------- helpers for the checker


def looks_like_key(value: str) -> bool:
    """True for a string that is not an environment variable name or looks like an API key."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        return True
    if (
        re.match(r"(sk|pk|hf|ghp|gho|xox[abp]|AIza)[-_A-Za-z0-9]{8,}", value)
        and not value.isupper()
    ):
        return True
    mixed = (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    )
    return len(value) >= 20 and mixed


def path_problem(value: str, kind: str) -> str | None:
    path = os.path.expanduser(value)
    if kind == "file" and not os.path.isfile(path):
        return "no such file" if not os.path.exists(path) else "not a file"
    if kind == "dir" and not os.path.isdir(path):
        return "no such folder" if not os.path.exists(path) else "not a folder"
    if kind == "any" and not os.path.exists(path):
        return "does not exist"
    return None
