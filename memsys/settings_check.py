"""The checker for ``memsys.settings``' declarations: every declared key by a strict pydantic type
built from its hint, each marker a validator (``"3"`` is no int, ``true`` no number). Each problem
is one line naming the full key, the bad value and what is allowed::

    memory.top_k=-1: expected an integer >= 1
    memory.traversal='diagonal': expected one of collapsed | collapsed_expand | top_down
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any

from hydra.utils import get_object as locate  # a _target_'s class or function
from memharness.memsys import settings as s
from memharness.memsys.services import secrets
from memharness.memsys.settings import Fields, describe, schema_fields, show
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
        return _checked(
            functools.partial(secrets.env_name_problems, nullable=type(None) in members)
        )
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
    """The value's own type (a list's or mapping's items each by its own validator), then the
    markers' rules on the value as given (``2``, not ``2.0``): the first broken one is the problem."""
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
    nested = [m for m in members if s.is_schema(b := s.unwrap(m)[0]) or s.container(b)[0]]

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


def target_fields(obj: Any, spec: s.Instantiated) -> Fields:
    """The section keys of a target: the caller's extra keys, then the target's declarations."""
    fields = {name: (hint, required) for name, hint, required in spec.extra}
    return fields | s.declared_settings(obj, spec.services)[0]


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
    is_open = s.declared_settings(obj, spec.services)[1]
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
