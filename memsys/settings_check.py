"""The generic checker for the declarations of ``memsys.settings``.

``check_value(value, hint, key)`` returns one message per problem, each a single line that names
the full key, the bad value and what is allowed::

    memory.top_k=-1: expected an integer >= 1
    memory.traversal='diagonal': expected one of collapsed | collapsed_expand | top_down

``check_target(section, key)`` checks a ``_target_`` section against the target's declarations
(unknown keys, missing required keys, every value, the target's own ``check_settings`` rules).
``memsys.settings_leaves`` lists every scalar or list setting with its hint (for the fuzz test and
for documentation).

Whether a value is of a declared type is decided by pydantic's strict validation (no coercion);
what stays here is the walk that names each problem's own key and words it in one line, the
markers' own rules (ranges, choices, templates, paths) and the never-echo rule for secrets.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union

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
    looks_like_key,
    path_problem,
    unwrap,
)
from pydantic import ConfigDict, TypeAdapter, ValidationError

UNION_TYPES = (Union, types.UnionType)  # typing.get_origin of Optional[X] and of X | None


def show(value: Any) -> str:
    """A short, one-line rendering of a config value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = (
            value
            if len(value) <= 60 and "\n" not in value
            else value.split("\n", 1)[0][:57] + "..."
        )
        return repr(text)
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def join(key: str, name: Any) -> str:
    return f"{key}.{name}" if key else str(name)


def is_schema(hint: Any) -> bool:
    """A TypedDict or a dataclass: a nested section with named keys."""
    return typing.is_typeddict(hint) or (isinstance(hint, type) and dataclasses.is_dataclass(hint))


@functools.cache
def schema_fields(hint: Any) -> dict[str, tuple[Any, bool]]:
    """name -> (hint, required) of a TypedDict or dataclass section."""
    if typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        total = getattr(hint, "__total__", True)
        out = {}
        for name, h in hints.items():
            origin = typing.get_origin(h)
            required = origin is typing.Required or (total and origin is not typing.NotRequired)
            out[name] = (h, required)
        return out
    hints = typing.get_type_hints(hint, include_extras=True)
    return {
        f.name: (
            hints.get(f.name, Any),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(hint)
    }


# ----------------------------------------------------------------------------- describing what is allowed


def describe(hint: Any, owner: Any = None) -> str:
    base, markers = unwrap(hint)
    origin, args = typing.get_origin(base), typing.get_args(base)
    if any(isinstance(m, EnvVarName) for m in markers):
        optional = origin in UNION_TYPES and type(None) in args
        return ("null or " if optional else "") + "the name of an environment variable"
    if origin in UNION_TYPES:
        parts = [describe(a, owner) for a in args if a is not type(None)]
        return " or ".join((["null"] if type(None) in args else []) + parts)
    rng = next((m for m in markers if isinstance(m, Range)), None)
    choices = next((m for m in markers if isinstance(m, ChoicesFrom)), None)
    check = next((m for m in markers if isinstance(m, Check)), None)
    if check is not None:
        return check.description
    if choices is not None:
        return "one of " + " | ".join(map(str, choices.choices(owner)))
    if origin is Literal:
        return "one of " + " | ".join(show(a) if not isinstance(a, str) else a for a in args)
    if any(isinstance(m, Instantiated) for m in markers):
        return "a section with a _target_"
    if base is bool:
        return "true or false"
    if base in (int, float):
        noun = "an integer" if base is int else "a number"
        return f"{noun} {rng.describe()}".strip() if rng else noun
    path = next((m for m in markers if isinstance(m, PathExists)), None)
    if base is str and path is not None:
        return {
            "file": "the path of an existing file",
            "dir": "the path of an existing folder",
        }.get(path.kind, "an existing path")
    if base is str:
        template = next((m for m in markers if isinstance(m, Placeholders)), None)
        if template is not None:
            fields = [*template.required, *(f"optionally {o}" for o in template.optional)]
            return "a template string" + (
                f" with {{placeholders}}: {', '.join(fields)}" if fields else ""
            )
        return "a non-empty string" if any(isinstance(m, NonEmpty) for m in markers) else "a string"
    if base is type(None):
        return "null"
    if origin in (list, tuple, Sequence) or base in (list, tuple):
        inner = args[0] if args else Any
        return f"a list (each {describe(inner, owner)})" if inner is not Any else "a list"
    if origin in (dict, Mapping) or base is dict:
        inner = args[1] if len(args) == 2 else Any
        return (
            f"a mapping (each value {describe(inner, owner)})" if inner is not Any else "a mapping"
        )
    if is_schema(base):
        return "a mapping with keys " + ", ".join(schema_fields(base))
    return "any value" if base is Any else getattr(base, "__name__", str(base))


# ----------------------------------------------------------------------------- checking


def check_value(value: Any, hint: Any, key: str, owner: Any = None) -> list[str]:
    """Problems of ``value`` against ``hint`` (empty when it is allowed)."""
    base, markers = unwrap(hint)
    if any(isinstance(m, EnvVarName) for m in markers):
        return _check_env_name(value, base, key)
    origin = typing.get_origin(base)
    if origin in UNION_TYPES:
        return _check_union(value, hint, base, markers, key, owner)
    problems = _check_type(value, base, key, owner)
    if problems == [_MISMATCH]:
        return [f"{key}={show(value)}: expected {describe(hint, owner)}"]
    if problems:
        return problems
    for marker in markers:
        message = _marker_problem(value, marker, owner)
        if message and isinstance(marker, Placeholders):
            return [f"{key}: {message}"]  # the template itself is not echoed
        if message:
            allowed = (
                describe(hint, owner)
                if isinstance(marker, (Range, ChoicesFrom, Check))
                else message
            )
            return [
                f"{key}={show(value)}: "
                + (f"expected {allowed}" if allowed != message else message)
            ]
    return []


def _check_union(
    value: Any, hint: Any, base: Any, markers: tuple, key: str, owner: Any
) -> list[str]:
    members = typing.get_args(base)
    if any(isinstance(m, EnvVarName) for member in members for m in unwrap(member)[1]):
        return _check_env_name(
            value, base, key
        )  # never falls through to a message showing the value
    for member in members:
        if not check_value(
            value, typing.Annotated[member, *markers] if markers else member, key, owner
        ):
            return []
    nested = [
        m
        for m in members
        if _structural(unwrap(m)[0]) and isinstance(value, (Mapping, list, tuple))
    ]
    if len(nested) == 1:  # a mapping or list given: report the precise nested problem
        return check_value(value, nested[0], key, owner)
    return [f"{key}={show(value)}: expected {describe(hint, owner)}"]


def _structural(base: Any) -> bool:
    origin = typing.get_origin(base)
    return (
        is_schema(base)
        or origin in (list, tuple, dict, Mapping, Sequence)
        or base in (list, tuple, dict)
    )


_MISMATCH = "\0mismatch"  # the value is not of the declared type (check_value words the message)


def _check_type(value: Any, base: Any, key: str, owner: Any) -> list[str]:
    """Whether ``value`` is of type ``base`` is pydantic's strict validation's call; this walk only
    descends into lists, mappings and sections so that each problem names its own key."""
    origin, args = typing.get_origin(base), typing.get_args(base)
    if origin in (list, tuple, Sequence) or base in (list, tuple):
        if not _is_a(value, list[Any] | tuple[Any, ...]):
            return [_MISMATCH]
        inner = args[0] if args else Any
        return [p for i, v in enumerate(value) for p in check_value(v, inner, f"{key}[{i}]", owner)]
    if origin in (dict, Mapping) or base is dict:
        if not _is_a(value, Mapping[Any, Any]):
            return [_MISMATCH]
        inner = args[1] if len(args) == 2 else Any
        return [p for k, v in value.items() for p in check_value(v, inner, join(key, k), owner)]
    if is_schema(base):
        return check_mapping(value, schema_fields(base), key, owner)
    return [] if _is_a(value, base) else [_MISMATCH]


@functools.cache
def _strict(base: Any) -> TypeAdapter:
    return TypeAdapter(base, config=ConfigDict(strict=True, arbitrary_types_allowed=True))


def _is_a(value: Any, base: Any) -> bool:
    """pydantic, strict: no coercion (``"3"`` is no int, ``true`` no number, ``1`` no string)."""
    try:
        _strict(base).validate_python(value)
    except ValidationError:
        return False
    return True


def _marker_problem(value: Any, marker: Any, owner: Any) -> str | None:
    if value is None:
        return None  # null passed the type check (an Optional): markers constrain actual values
    if isinstance(marker, Range) and not marker.ok(value):
        noun = "an integer" if isinstance(value, int) else "a number"
        return f"expected {noun} {marker.describe()}"
    if isinstance(marker, ChoicesFrom) and value not in marker.choices(owner):
        return "expected one of " + " | ".join(map(str, marker.choices(owner)))
    if isinstance(marker, Placeholders) and isinstance(value, str):
        return marker.problem(value)
    if isinstance(marker, NonEmpty) and not value:
        return "must not be empty"
    if isinstance(marker, PathExists) and isinstance(value, str):
        return path_problem(value, marker.kind)
    if isinstance(marker, Check) and not marker.ok(value):
        return f"expected {marker.description}"
    if isinstance(marker, Instantiated):
        return None  # checked as a whole by check_target (see check_mapping's caller)
    return None


def _check_env_name(value: Any, base: Any, key: str) -> list[str]:
    """Never echo the value: it may be the key itself."""
    from memharness.memsys.services.secrets import register_secret_env, register_secret_value

    if (
        value is None
        and typing.get_origin(base) in UNION_TYPES
        and type(None) in typing.get_args(base)
    ):
        return []
    if isinstance(value, str) and value and not looks_like_key(value):
        register_secret_env(value)
        return []
    if isinstance(value, str) and value:
        register_secret_value(value)
    return [
        f"{key}: expected the NAME of an environment variable that holds the key (such as OPENAI_API_KEY); "
        "the value given is not a variable name and may be the key itself, so it is not shown. "
        "Export the key in a variable and pass that variable's name"
        + (
            ", or null for a server without authentication"
            if typing.get_origin(base) in UNION_TYPES
            else ""
        )
    ]


def check_mapping(
    value: Any,
    fields: dict[str, tuple[Any, bool]],
    key: str,
    owner: Any = None,
    open_: bool = False,
    what: str = "",
) -> list[str]:
    """A section with named keys: unknown keys, missing required keys, then every value."""
    if not isinstance(value, Mapping):
        return [
            f"{key or 'config'}={show(value)}: expected a mapping with keys {', '.join(fields)}"
        ]
    problems = []
    if not open_:
        for name in value:
            if name not in fields and not str(name).startswith("_"):
                problems.append(
                    f"{join(key, name)}: unknown setting{what}; known: {', '.join(sorted(fields)) or 'none'}"
                )
    for name, (hint, required) in fields.items():
        if name not in value:
            if required:
                problems.append(f"{join(key, name)}: missing (expected {describe(hint, owner)})")
            continue
        problems += check_field(value[name], hint, join(key, name), owner)
    return problems


def check_field(value: Any, hint: Any, key: str, owner: Any = None) -> list[str]:
    """check_value, plus ``Instantiated`` sections checked against their target."""
    base, markers = unwrap(hint)
    inst = next((m for m in markers if isinstance(m, Instantiated)), None)
    if inst is None:
        return check_value(value, hint, key, owner)
    if (
        value is None
        and typing.get_origin(base) in UNION_TYPES
        and type(None) in typing.get_args(base)
    ):
        return []
    return check_target(value, key, inst)


def locate(path: str) -> Any:
    from hydra.utils import get_object

    return get_object(path)


def check_target(section: Any, key: str, spec: Instantiated | None = None) -> list[str]:
    """Check a ``_target_`` section against the target's declared settings."""
    if not isinstance(section, Mapping):
        return [f"{key}={show(section)}: expected a section with a _target_"]
    target = section.get("_target_")
    if not isinstance(target, str) or not target:
        return [f"{key}._target_: missing (the class or function to build)"]
    try:
        obj = locate(target)
    except Exception as err:  # noqa: BLE001 (any import problem is the user's to fix)
        reason = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        return [f"{key}._target_={target!r}: cannot be imported ({reason})"]
    spec = spec or Instantiated()
    decl = declared_settings(obj, spec.services)
    fields = {name: (hint, required) for name, hint, required in spec.extra}
    fields.update({n: (s.hint, s.required) for n, s in decl.settings.items()})
    what = f" for {target}"
    problems = check_mapping(section, fields, key, obj, decl.open, what)
    hook = getattr(obj, "check_settings", None)
    if not problems and callable(hook):
        values = {k: v for k, v in section.items() if not str(k).startswith("_")}
        problems += [f"{join(key, rel)}: {message}" for rel, message in hook(values)]
    return problems
