"""Hydra's own errors for the typos people make, as one ``error:`` line and exit status 2.

Hydra reports a misspelled config choice (``memory=raptr``), an unknown key
(``memory.num_layer=3``, or a sweep's key the chosen memory lacks) and an override it cannot parse
(``memory.summary_prompt={context} x``) as several lines and exits 1. ``install`` wraps Hydra's
reporting so these become one line that names the key or value and lists the valid ones, closest
match first; any other error keeps Hydra's report.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
from omegaconf.errors import ConfigAttributeError, ConfigKeyError


def closest_first(word: str, choices: Iterable[str]) -> list[str]:
    """``choices`` ordered by similarity to ``word`` (most similar first; ties keep their order)."""
    choices = list(dict.fromkeys(str(c) for c in choices))
    return sorted(
        choices, key=lambda c: -difflib.SequenceMatcher(None, word.lower(), c.lower()).ratio()
    )


def explain(err: BaseException, argv: Sequence[str] = ()) -> str | None:
    """One line for a composition or parse error Hydra raised, or None for any other error."""
    if isinstance(err, MissingConfigException) and err.missing_cfg_file and err.options:
        group, _, value = str(err.missing_cfg_file).rpartition("/")
        if group:
            valid = ", ".join(closest_first(value, err.options))
            return f"{group}={value}: no such {group} config; choose one of: {valid}"
    if isinstance(err, OverrideParseException):
        key, sep, value = str(err.override).partition("=")
        if sep:
            return (
                f"{key}: cannot read the value {value!r} (braces, spaces, commas, brackets and "
                f"quotes have a meaning in an override); quote it inside the argument: "
                f"'{key}=\"{value}\"'"
            )
        return f"cannot read the override {err.override!r}: {err.message.splitlines()[0]}"
    cause = err.__cause__
    if isinstance(err, ConfigCompositionException) and isinstance(
        cause, (ConfigKeyError, ConfigAttributeError)
    ):
        return _unknown_key(cause, argv)
    return None


def _unknown_key(cause: Exception, argv: Sequence[str]) -> str | None:
    full_key = str(getattr(cause, "full_key", "") or "")
    parent = getattr(cause, "parent_node", None)
    if not full_key or parent is None:
        return None
    section, _, name = full_key.rpartition(".")
    try:
        keys = [str(k) for k in parent.keys() if str(k) != "_target_"]
    except Exception:  # not a mapping: Hydra's own text says more
        return None
    owner = section or "the config"
    if section and "." not in section and "name" in keys:
        owner = f"{section}={parent.get('name')}"
    given = any(a.lstrip("+~").partition("=")[0] == full_key for a in argv)
    experiment = next((a for a in argv if a.startswith("experiment=")), None)
    source = f" (set by {experiment})" if experiment and not given else ""
    return (
        f"{full_key}{source}: not a setting of {owner}; its settings are: "
        f"{', '.join(closest_first(name, keys))}"
    )


def install(argv: Sequence[str], report: Callable[[str], None], code: int) -> None:
    """Make Hydra report the errors ``explain`` knows as ``report(line)`` and exit ``code``."""
    from hydra._internal import utils as hydra_utils

    original = hydra_utils.run_and_report
    if getattr(original, "_memharness", False):
        return

    def run_and_report(func: Callable[[], Any]) -> Any:
        def guarded() -> Any:
            try:
                return func()
            except Exception as err:
                line = explain(err, argv)
                if line is None:
                    raise
                report(line)
                sys.exit(code)

        return original(guarded)

    run_and_report._memharness = True  # type: ignore[attr-defined]
    hydra_utils.run_and_report = run_and_report
