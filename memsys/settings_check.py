"""The checker for the declarations of ``memsys.settings``: one strict pydantic model per section.

Every ``_target_`` (a memory system, a loader, a backend) and every TypedDict / dataclass section
becomes a pydantic model built from its declarations (``_model``); each marker becomes a
validator. pydantic decides types (strict: ``"3"`` is no int, ``true`` no number, ``1`` no
string); the validators word each problem in one line naming the full key, the bad value and what
is allowed, and this module only turns pydantic's error locations into those keys::

    memory.top_k=-1: expected an integer >= 1
    memory.traversal='diagonal': expected one of collapsed | collapsed_expand | top_down

``check_target(section, key)`` checks a ``_target_`` section (unknown keys, missing required keys,
every value, the target's own ``check_settings`` rules); ``leaves`` lists every scalar or list
setting with its hint (for the fuzz test and for documentation).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import typing_extensions
from memharness.memsys.services.secrets import (
    looks_like_key,
    register_secret_env,
    register_secret_value,
)
from memharness.memsys.settings import (
    Check,
    ChoicesFrom,
    EnvVarName,
    Instantiated,
    NonEmpty,
    PathExists,
    Placeholders,
    Range,
    declared_settings,
    unwrap,
)
from pydantic import ConfigDict, PlainValidator, TypeAdapter, ValidationError, WrapValidator
from pydantic_core import PydanticCustomError

UNION_TYPES = (Union, types.UnionType)  # typing.get_origin of Optional[X] and of X | None
_MISSING = object()  # stands in for a required key absent from the section
_CONFIG = ConfigDict(arbitrary_types_allowed=True, strict=True)


def show(value: Any) -> str:
    """A short, one-line rendering of a config value."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        short = len(value) <= 60 and "\n" not in value
        return repr(value if short else value.split("\n", 1)[0][:57] + "...")
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _join(key: str, line: str) -> str:
    """``key`` in front of a line relative to it (``top_k=0: ...``, ``[2]=...``, ``: ...``)."""
    return line if not key else key + line if line[:1] in "=:[" else f"{key}.{line}"


def is_schema(hint: Any) -> bool:
    """A TypedDict or a dataclass: a nested section with named keys."""
    return typing.is_typeddict(hint) or (isinstance(hint, type) and dataclasses.is_dataclass(hint))


@functools.cache
def schema_fields(hint: Any) -> dict[str, tuple[Any, bool]]:
    """name -> (hint, required) of a TypedDict or dataclass section."""
    hints = typing.get_type_hints(hint, include_extras=True)
    if typing.is_typeddict(hint):
        total = getattr(hint, "__total__", True)
        return {
            n: (
                h,
                typing.get_origin(h) is typing.Required
                or (total and typing.get_origin(h) is not typing.NotRequired),
            )
            for n, h in hints.items()
        }
    return {
        f.name: (hints.get(f.name, Any), f.default is f.default_factory is dataclasses.MISSING)
        for f in dataclasses.fields(hint)
    }


def _list_like(base: Any) -> bool:
    return typing.get_origin(base) in (list, tuple, Sequence) or base in (list, tuple)


def _dict_like(base: Any) -> bool:
    return typing.get_origin(base) in (dict, Mapping) or base is dict


def _inner(base: Any, position: int) -> Any:
    args = typing.get_args(base)
    return args[position] if len(args) > position else Any


def _markers(hint: Any) -> dict[type, Any]:
    return {type(m): m for m in reversed(unwrap(hint)[1])}  # the first marker of a kind wins


def _structural(hint: Any, lists: bool = False) -> bool:
    """A section, a mapping (or, with ``lists``, a list): a value with items of its own."""
    base = unwrap(hint)[0]
    return is_schema(base) or _dict_like(base) or (lists and _list_like(base))


def _nullable(base: Any) -> bool:
    return typing.get_origin(base) in UNION_TYPES and type(None) in typing.get_args(base)


# ----------------------------------------------------------------------------- describing what is allowed


def describe(hint: Any, owner: Any = None) -> str:
    """What a setting allows, in words (``an integer >= 1``, ``one of a | b``, ``null or ...``)."""
    base, found = unwrap(hint)[0], _markers(hint)
    args = typing.get_args(base)
    if EnvVarName in found:
        return ("null or " if _nullable(base) else "") + "the name of an environment variable"
    if typing.get_origin(base) in UNION_TYPES:
        parts = [describe(a, owner) for a in args if a is not type(None)]
        return " or ".join((["null"] if type(None) in args else []) + parts)
    if Check in found:
        return found[Check].description
    if ChoicesFrom in found:
        return "one of " + " | ".join(map(str, found[ChoicesFrom].choices(owner)))
    if typing.get_origin(base) is Literal:
        return "one of " + " | ".join(a if isinstance(a, str) else show(a) for a in args)
    if Instantiated in found:
        return "a section with a _target_"
    return _describe_base(base, found, owner)


def _describe_base(base: Any, found: dict[type, Any], owner: Any) -> str:
    if base is bool:
        return "true or false"
    if base in (int, float):
        noun = "an integer" if base is int else "a number"
        return f"{noun} {found[Range].describe()}".strip() if Range in found else noun
    if base is str:
        return _describe_str(found)
    if base is type(None):
        return "null"
    if _list_like(base):
        inner = _inner(base, 0)
        return f"a list (each {describe(inner, owner)})" if inner is not Any else "a list"
    if _dict_like(base):
        inner = _inner(base, 1)
        return (
            f"a mapping (each value {describe(inner, owner)})" if inner is not Any else "a mapping"
        )
    if is_schema(base):
        return "a mapping with keys " + ", ".join(schema_fields(base))
    return "any value" if base is Any else getattr(base, "__name__", str(base))


def _describe_str(found: dict[type, Any]) -> str:
    if PathExists in found:
        kinds = {"file": "the path of an existing file", "dir": "the path of an existing folder"}
        return kinds.get(found[PathExists].kind, "an existing path")
    if Placeholders in found:
        template = found[Placeholders]
        fields = [*template.required, *(f"optionally {o}" for o in template.optional)]
        return "a template string" + (
            f" with {{placeholders}}: {', '.join(fields)}" if fields else ""
        )
    return "a non-empty string" if NonEmpty in found else "a string"


# ----------------------------------------------------------------------------- pydantic, one validator per rule


def _problem(*lines: str) -> PydanticCustomError:
    """A problem at the current location, as lines relative to it (``=3: expected ...``)."""
    return PydanticCustomError("setting", "{lines}", {"lines": list(lines)})


def _lines_check(problems: Any) -> PlainValidator:
    """A validator from a function listing a value's problems (relative lines; none: valid)."""

    def check(value: Any) -> Any:
        if lines := problems(value):
            raise _problem(*lines)
        return value

    return PlainValidator(check)


def _mismatch(value: Any, hint: Any, owner: Any) -> str:
    return f"={show(value)}: expected {describe(hint, owner)}"


def problem_lines(err: ValidationError) -> list[str]:
    """pydantic's errors as one-line problems, each keyed by its location."""
    out = []
    for e in err.errors(include_url=False):
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".")
        out += [_join(key, line) for line in (e.get("ctx") or {}).get("lines", [f": {e['msg']}"])]
    return out


@dataclass(frozen=True)
class Section:
    """A mapping with named keys: (name, hint, required) each; ``open`` accepts further keys."""

    fields: tuple[tuple[str, Any, bool], ...]
    owner: Any = None
    open: bool = False
    what: str = ""  # `` for <target>`` in the unknown-key message

    @classmethod
    def of(cls, fields: dict[str, tuple[Any, bool]], owner: Any = None, **kw: Any) -> Section:
        return cls(tuple((n, h, r) for n, (h, r) in fields.items()), owner, **kw)


@functools.cache
def _model(section: Section) -> TypeAdapter:
    """The strict pydantic model of a section (a TypedDict: any key may be a setting's name)."""
    fields = {
        name: Annotated[
            _pydantic(hint, section.owner), WrapValidator(_present(hint, section.owner))
        ]
        for name, hint, _ in section.fields
    }
    model = typing_extensions.TypedDict("Section", fields, total=False)
    model.__pydantic_config__ = ConfigDict(_CONFIG, extra="ignore")
    return TypeAdapter(model)


def _present(hint: Any, owner: Any) -> Any:
    def check(value: Any, handler: Any) -> Any:
        if value is _MISSING:
            raise _problem(f": missing (expected {describe(hint, owner)})")
        return handler(value)

    return check


def section_lines(section: Section, value: Any) -> list[str]:
    """Unknown keys first, then each declared key in order (lines relative to the section)."""
    names = [n for n, _, _ in section.fields]
    if not isinstance(value, Mapping):
        return [f"={show(value)}: expected a mapping with keys {', '.join(names)}"]
    known = ", ".join(sorted(names)) or "none"
    out = [
        f"{k}: unknown setting{section.what}; known: {known}"
        for k in value
        if not section.open and k not in names and not str(k).startswith("_")
    ]
    given = {n: value.get(n, _MISSING) for n, _, needed in section.fields if needed or n in value}
    try:
        _model(section).validate_python(given)
    except ValidationError as err:
        out += problem_lines(err)
    return out


@functools.cache
def _adapter(hint: Any, owner: Any = None) -> TypeAdapter:
    return TypeAdapter(_pydantic(hint, owner), config=_CONFIG)


def _pydantic(hint: Any, owner: Any) -> Any:
    """The pydantic type of a declared hint; every rule raises its own one-line problem."""
    base, found = unwrap(hint)[0], _markers(hint)
    members = typing.get_args(base) if typing.get_origin(base) in UNION_TYPES else ()
    if EnvVarName in found or any(EnvVarName in _markers(m) for m in members):
        return Annotated[Any, _lines_check(functools.partial(_env_lines, nullable=_nullable(base)))]
    if Instantiated in found:
        spec, nullable = found[Instantiated], _nullable(base)
        return Annotated[
            Any, _lines_check(lambda v: [] if v is None and nullable else target_lines(v, spec))
        ]
    if members:
        return Annotated[Any, _lines_check(_union(hint, owner))]
    if is_schema(base):
        section = Section.of(schema_fields(base), owner)
        core = Annotated[Any, _lines_check(functools.partial(section_lines, section))]
    elif _list_like(base) or _dict_like(base):
        shape = (list[_pydantic(_inner(base, 0), owner)], (list, tuple), list)
        if _dict_like(base):
            shape = (dict[Any, _pydantic(_inner(base, 1), owner)], Mapping, dict)
        core = Annotated[shape[0], WrapValidator(_shaped(shape[1], shape[2], hint, owner))]
    elif typing.get_origin(base) is Literal:
        allowed = typing.get_args(base)
        is_allowed = lambda v: any(type(v) is type(a) and v == a for a in allowed)
        core = Annotated[
            Any, _lines_check(lambda v: [] if is_allowed(v) else [_mismatch(v, hint, owner)])
        ]
    else:
        core = (
            Annotated[base, WrapValidator(_shaped(object, None, hint, owner))]
            if base is not Any
            else Any
        )
    return Annotated[core, WrapValidator(_rules(hint, owner))] if found else core


def _shaped(kinds: Any, make: Any, hint: Any, owner: Any) -> Any:
    """The value's own type is checked here (one line saying what is allowed); a list's or mapping's
    items are checked each by its own validator (each problem keyed by its item)."""

    def check(value: Any, handler: Any) -> Any:
        if not isinstance(value, kinds):
            raise _problem(_mismatch(value, hint, owner))
        if make is not None:
            return handler(make(value))
        try:
            return handler(value)
        except ValidationError:
            raise _problem(_mismatch(value, hint, owner)) from None

    return check


def _union(hint: Any, owner: Any) -> Any:
    """Any member may pass; a mapping or list given for the one nested member gets its own problems."""
    base, markers = unwrap(hint)
    members = [Annotated[m, *markers] if markers else m for m in typing.get_args(base)]
    nested = [m for m in members if _structural(m, lists=True)]

    def problems(value: Any) -> list[str]:
        for member in members:
            try:
                _adapter(member, owner).validate_python(value)
                return []
            except ValidationError as err:
                if len(nested) == 1 and member is nested[0]:
                    inside = problem_lines(err)
        if len(nested) == 1 and isinstance(value, (Mapping, list, tuple)):
            return inside
        return [_mismatch(value, hint, owner)]

    return problems


def _rules(hint: Any, owner: Any) -> Any:
    """The markers' own rules, after the type check, on the value as given (``2``, not ``2.0``);
    the first broken one is the problem."""
    markers = unwrap(hint)[1]

    def check(value: Any, handler: Any) -> Any:
        checked = handler(value)
        for marker in markers if value is not None else ():
            if line := _rule_problem(value, marker, hint, owner):
                raise _problem(line)
        return checked

    return check


def _rule_problem(value: Any, marker: Any, hint: Any, owner: Any) -> str | None:
    if isinstance(marker, (Range, Check)) and not marker.ok(value):
        return _mismatch(value, hint, owner)
    if isinstance(marker, ChoicesFrom) and value not in marker.choices(owner):
        return _mismatch(value, hint, owner)
    problem = marker.problem(value) if isinstance(marker, (Placeholders, PathExists)) else None
    if isinstance(marker, Placeholders) and problem:
        return f": {problem}"  # the template itself is not echoed
    if isinstance(marker, NonEmpty) and not value:
        return f"={show(value)}: must not be empty"
    return f"={show(value)}: {problem}" if problem else None


def _env_lines(value: Any, nullable: bool) -> list[str]:
    """Never echo the value: it may be the key itself."""
    if (value is None and nullable) or (
        isinstance(value, str) and value and not looks_like_key(value)
    ):
        if value is not None:
            register_secret_env(value)
        return []
    if isinstance(value, str) and value:
        register_secret_value(value)
    return [
        ": expected the NAME of an environment variable that holds the key (such as OPENAI_API_KEY); "
        "the value given is not a variable name and may be the key itself, so it is not shown. "
        "Export the key in a variable and pass that variable's name"
        + (", or null for a server without authentication" if nullable else "")
    ]


# ----------------------------------------------------------------------------- the public checks


def locate(path: str) -> Any:
    from hydra.utils import get_object

    return get_object(path)


def target_fields(obj: Any, spec: Instantiated) -> dict[str, tuple[Any, bool]]:
    """The section keys of a target: the caller's extra keys, then the target's declarations."""
    fields = {name: (hint, required) for name, hint, required in spec.extra}
    fields.update(
        {n: (s.hint, s.required) for n, s in declared_settings(obj, spec.services).settings.items()}
    )
    return fields


def target_lines(section: Any, spec: Instantiated | None = None) -> list[str]:
    """The problems of a ``_target_`` section, relative to it."""
    if not isinstance(section, Mapping):
        return [f"={show(section)}: expected a section with a _target_"]
    target = section.get("_target_")
    if not isinstance(target, str) or not target:
        return ["_target_: missing (the class or function to build)"]
    try:
        obj = locate(target)
    except Exception as err:  # noqa: BLE001 (any import problem is the user's to fix)
        reason = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        return [f"_target_={target!r}: cannot be imported ({reason})"]
    spec = spec or Instantiated()
    decl = declared_settings(obj, spec.services)
    own = Section.of(target_fields(obj, spec), obj, open=decl.open, what=f" for {target}")
    problems = section_lines(own, section)
    hook = getattr(obj, "check_settings", None)
    if not problems and callable(hook):
        values = {k: v for k, v in section.items() if not str(k).startswith("_")}
        problems += [f"{rel}: {message}" for rel, message in hook(values)]
    return problems


def check_target(section: Any, key: str, spec: Instantiated | None = None) -> list[str]:
    """Check a ``_target_`` section against the target's declared settings."""
    return [_join(key, line) for line in target_lines(section, spec)]


def check_value(value: Any, hint: Any, key: str, owner: Any = None) -> list[str]:
    """Problems of ``value`` against ``hint`` (empty when it is allowed)."""
    try:
        _adapter(hint, owner).validate_python(value)
    except ValidationError as err:
        return [_join(key, line) for line in problem_lines(err)]
    return []


def check_mapping(value: Any, fields: dict[str, tuple[Any, bool]], key: str = "") -> list[str]:
    """A section with named keys (the whole config when ``key`` is empty)."""
    return [
        _join(key or ("config" if line[0] == "=" else ""), line)
        for line in section_lines(Section.of(fields), value)
    ]


# ----------------------------------------------------------------------------- leaves (fuzz test, documentation)


@dataclass(frozen=True)
class Leaf:
    key: str  # as the checker's messages name it
    path: tuple[Any, ...]  # the keys to reach it in the plain config
    hint: Any
    value: Any
    owner: Any


def leaves(
    value: Mapping, fields: dict[str, tuple[Any, bool]], path: tuple = (), owner: Any = None
) -> Iterator[Leaf]:
    """Every scalar or list setting of a section with named keys (only the keys present)."""
    for name, (hint, _) in fields.items():
        if name in value:
            yield from _leaves(value[name], hint, (*path, name), owner)


def _leaves(value: Any, hint: Any, path: tuple, owner: Any) -> Iterator[Leaf]:
    base, found = unwrap(hint)[0], _markers(hint)
    nested = [m for m in typing.get_args(base) if _structural(m)]
    if (
        Instantiated in found
        and isinstance(value, Mapping)
        and isinstance(value.get("_target_"), str)
    ):
        obj = locate(value["_target_"])
        yield from leaves(value, target_fields(obj, found[Instantiated]), path, obj)
    elif typing.get_origin(base) in UNION_TYPES and isinstance(value, Mapping) and len(nested) == 1:
        yield from _leaves(value, nested[0], path, owner)
    elif is_schema(base) and isinstance(value, Mapping):
        yield from leaves(value, schema_fields(base), path, owner)
    elif _dict_like(base) and isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, _inner(base, 1), (*path, k), owner)
    else:
        yield Leaf(".".join(map(str, path)), path, hint, value, owner)
