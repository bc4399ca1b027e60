"""The checker for the declarations of ``memsys.settings``: one strict pydantic type per setting.

Every key declared by a ``_target_`` or by a TypedDict / dataclass section is checked by a strict
pydantic type built from its hint, each marker a validator (pydantic decides types: ``"3"`` is no
int, ``true`` no number, ``1`` no string). Each problem is one line naming the full key, the bad
value and what is allowed; this module only turns pydantic's error locations into those keys::

    memory.top_k=-1: expected an integer >= 1
    memory.traversal='diagonal': expected one of collapsed | collapsed_expand | top_down
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from hydra.utils import get_object as locate  # a _target_'s class or function
from memharness.memsys import settings as s
from memharness.memsys.services import secrets
from memharness.memsys.settings import describe, schema_fields, show
from pydantic import ConfigDict, PlainValidator, TypeAdapter, ValidationError, WrapValidator
from pydantic_core import PydanticCustomError

_CONFIG = ConfigDict(arbitrary_types_allowed=True, strict=True)


def _join(key: str, line: str) -> str:
    """``key`` in front of a line relative to it (``top_k=0: ...``, ``[2]=...``, ``: ...``)."""
    return line if not key else key + line if line[:1] in "=:[" else f"{key}.{line}"


def _problem(*lines: str) -> PydanticCustomError:
    """A problem at the current location, as lines relative to it (``=3: expected ...``)."""
    return PydanticCustomError("setting", "{lines}", {"lines": list(lines)})


def _checked(problems: Any) -> Any:
    """Any value, checked by a function listing its problems (relative lines; none: valid)."""

    def check(value: Any) -> Any:
        if lines := problems(value):
            raise _problem(*lines)
        return value

    return Annotated[Any, PlainValidator(check)]


def _mismatch(value: Any, hint: Any, owner: Any) -> str:
    return f"={show(value)}: expected {describe(hint, owner)}"


Fields = dict[str, tuple[Any, bool]]  # a section's keys: name -> (hint, required)


def section_lines(
    fields: Fields, value: Any, owner: Any = None, open_: bool = False, what: str = ""
) -> list[str]:
    """Unknown keys first (unless ``open_``), then each declared key in order (relative lines)."""
    if not isinstance(value, Mapping):
        return [f"={show(value)}: expected a mapping with keys {', '.join(fields)}"]
    known = ", ".join(sorted(fields)) or "none"
    out = [
        f"{k}: unknown setting{what}; known: {known}"
        for k in value
        if not open_ and k not in fields and not str(k).startswith("_")
    ]
    for name, (hint, needed) in fields.items():
        if name in value:
            out += check_value(value[name], hint, name, owner)
        elif needed:
            out.append(f"{name}: missing (expected {describe(hint, owner)})")
    return out


def _problems(adapter: TypeAdapter, value: Any) -> list[str]:
    """pydantic's errors for ``value`` as one-line problems, each keyed by its location."""
    try:
        adapter.validate_python(value)
    except ValidationError as err:
        out = []
        for e in err.errors(include_url=False):
            key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".")
            out += [_join(key, ln) for ln in (e.get("ctx") or {}).get("lines", [f": {e['msg']}"])]
        return out
    return []


@functools.cache
def _adapter(hint: Any, owner: Any = None) -> TypeAdapter:
    return TypeAdapter(_pydantic(hint, owner), config=_CONFIG)


def _pydantic(hint: Any, owner: Any) -> Any:
    """The pydantic type of a declared hint; every rule raises its own one-line problem."""
    base, found = s.unwrap(hint)[0], s.markers(hint)
    members, (shape, inner) = s.union_args(base), s.container(base)
    if s.EnvVarName in found or any(s.EnvVarName in s.markers(m) for m in members):
        return _checked(functools.partial(_env_lines, nullable=type(None) in members))
    if s.Instantiated in found:
        spec, nullable = found[s.Instantiated], type(None) in members
        return _checked(lambda v: [] if v is None and nullable else target_lines(v, spec))
    if members:
        return _checked(_union(hint, owner))
    if s.is_schema(base):
        return _checked(functools.partial(section_lines, schema_fields(base), owner=owner))
    if shape is not None:  # a list's or mapping's items are checked each on its own
        items = _pydantic(inner, owner)
        base = list[items] if shape is list else dict[Any, items]
    return Annotated[base, WrapValidator(_shaped(hint, owner, shape))]  # also a Literal's choices


def _shaped(hint: Any, owner: Any, shape: type | None = None) -> Any:
    """The value's own type, checked here (one line saying what is allowed; a list's or mapping's
    items each by its own validator, keyed by its item), then the markers' rules on the value as
    given (``2``, not ``2.0``): the first broken one is the problem."""
    kinds = {list: (list, tuple), dict: Mapping, None: object}[shape]

    def check(value: Any, handler: Any) -> Any:
        if not isinstance(value, kinds):
            raise _problem(_mismatch(value, hint, owner))
        try:
            checked = handler(value if shape is None else shape(value))
        except ValidationError:
            if shape is not None:
                raise  # the items' own problems
            raise _problem(_mismatch(value, hint, owner)) from None
        for marker in s.unwrap(hint)[1] if value is not None else ():
            if line := _broken(marker, value, hint, owner):
                raise _problem(line)
        return checked

    return check


def _union(hint: Any, owner: Any) -> Any:
    """Any member may pass; a mapping or list given for the one nested member gets its own problems."""
    base, markers = s.unwrap(hint)
    members = [Annotated[m, *markers] if markers else m for m in s.union_args(base)]
    nested = [m for m in members if _nested(m, lists=True)]

    def problems(value: Any) -> list[str]:
        for member in members:
            if not (lines := _problems(_adapter(member, owner), value)):
                return []
            if len(nested) == 1 and member is nested[0]:
                inside = lines
        if len(nested) == 1 and isinstance(value, (Mapping, list, tuple)):
            return inside
        return [_mismatch(value, hint, owner)]

    return problems


def _nested(hint: Any, lists: bool = False) -> bool:
    """A section, a mapping (or, with ``lists``, a list): a value with items of its own."""
    base = s.unwrap(hint)[0]
    return s.is_schema(base) or s.container(base)[0] in ((list, dict) if lists else (dict,))


def _broken(marker: Any, value: Any, hint: Any, owner: Any) -> str | None:
    """The line of the marker's rule ``value`` breaks, relative to its key (None: it keeps it)."""
    chosen = not isinstance(marker, s.ChoicesFrom) or value in marker.choices(owner)
    if not chosen or isinstance(marker, (s.Range, s.Check)) and not marker.ok(value):
        return _mismatch(value, hint, owner)
    if isinstance(marker, s.NonEmpty) and not value:
        return f"={show(value)}: must not be empty"
    if isinstance(marker, s.Placeholders) and (problem := marker.problem(value)):
        return f": {problem}"  # the template itself is not echoed
    if isinstance(marker, s.PathExists) and (problem := marker.problem(value)):
        return f"={show(value)}: {problem}"
    return None


def _env_lines(value: Any, nullable: bool) -> list[str]:
    """Never echo the value: it may be the key itself."""
    if named := isinstance(value, str) and value and not secrets.looks_like_key(value):
        secrets.register_secret_env(value)
    if named or (value is None and nullable):
        return []
    if isinstance(value, str) and value:
        secrets.register_secret_value(value)
    return [
        ": expected the NAME of an environment variable that holds the key (such as OPENAI_API_KEY); "
        "the value given is not a variable name and may be the key itself, so it is not shown. "
        "Export the key in a variable and pass that variable's name"
        + (", or null for a server without authentication" if nullable else "")
    ]


def target_fields(obj: Any, spec: s.Instantiated) -> Fields:
    """The section keys of a target: the caller's extra keys, then the target's declarations."""
    fields = {name: (hint, required) for name, hint, required in spec.extra}
    declared = s.declared_settings(obj, spec.services).settings.values()
    return fields | {d.name: (d.hint, d.required) for d in declared}


def target_lines(section: Any, spec: s.Instantiated | None = None) -> list[str]:
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
    spec = spec or s.Instantiated()
    is_open = s.declared_settings(obj, spec.services).open
    problems = section_lines(target_fields(obj, spec), section, obj, is_open, f" for {target}")
    hook = getattr(obj, "check_settings", None)
    if not problems and callable(hook):
        values = {k: v for k, v in section.items() if not str(k).startswith("_")}
        problems += [f"{rel}: {message}" for rel, message in hook(values)]
    return problems


def check_target(section: Any, key: str, spec: s.Instantiated | None = None) -> list[str]:
    """Check a ``_target_`` section against the target's declared settings."""
    return [_join(key, line) for line in target_lines(section, spec)]


def check_value(value: Any, hint: Any, key: str, owner: Any = None) -> list[str]:
    """Problems of ``value`` against ``hint`` (empty when it is allowed)."""
    return [_join(key, line) for line in _problems(_adapter(hint, owner), value)]


def check_mapping(value: Any, fields: Fields, key: str = "") -> list[str]:
    """A section with named keys (the whole config when ``key`` is empty)."""
    lines = section_lines(fields, value)
    return [_join(key or ("config" if line[0] == "=" else ""), line) for line in lines]


@dataclass(frozen=True)
class Leaf:
    key: str  # as the checker's messages name it
    path: tuple[Any, ...]  # the keys to reach it in the plain config
    hint: Any
    owner: Any


def leaves(value: Mapping, fields: Fields, path: tuple = (), owner: Any = None) -> Iterator[Leaf]:
    """Every scalar or list setting of a section with named keys (only the keys present)."""
    for name, (hint, _) in fields.items():
        if name in value:
            yield from _leaves(value[name], hint, (*path, name), owner)


def _leaves(value: Any, hint: Any, path: tuple, owner: Any) -> Iterator[Leaf]:
    base, found = s.unwrap(hint)[0], s.markers(hint)
    nested = [m for m in s.union_args(base) if _nested(m)]
    target = value.get("_target_") if isinstance(value, Mapping) else None
    if s.Instantiated in found and isinstance(target, str):
        obj = locate(target)
        yield from leaves(value, target_fields(obj, found[s.Instantiated]), path, obj)
    elif isinstance(value, Mapping) and len(nested) == 1:
        yield from _leaves(value, nested[0], path, owner)
    elif s.is_schema(base) and isinstance(value, Mapping):
        yield from leaves(value, schema_fields(base), path, owner)
    elif s.container(base)[0] is dict and isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, s.container(base)[1], (*path, k), owner)
    else:
        yield Leaf(".".join(map(str, path)), path, hint, owner)
