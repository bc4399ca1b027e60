"""The settings declarations (memsys.settings) and their generic checker, on hand-made targets."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pytest
from memharness.memsys.base import MemorySystem
from memharness.memsys.hierarchy.memory import HierarchicalMemory
from memharness.memsys.services.secrets import install_log_redaction, redact_text
from memharness.memsys.settings import (
    ChoicesFrom,
    Instantiated,
    NonEmpty,
    Placeholders,
    Range,
    declared_settings,
)
from memharness.memsys.settings_check import check_target, check_value

SERVICES = ("llm", "embedder", "tokenizer")


class Flat(MemorySystem):
    """A flat memory declaring its own settings, one of them a cross-field rule."""

    modes = ("fast", "slow")

    def __init__(
        self,
        llm=None,
        embedder=None,
        tokenizer=None,
        *,
        top_k: Annotated[int, Range(1, 50)] = 5,
        mode: Annotated[str, ChoicesFrom("modes")] = "fast",
        scoring: Literal["cos", "dot"] = "cos",
        prompt: Annotated[str, Placeholders("text")] = "{text}",
        weight: float = 1.0,
        plain=3,
    ) -> None:
        super().__init__(llm, embedder, tokenizer)

    @classmethod
    def check_settings(cls, settings: dict[str, Any]) -> Iterator[tuple[str, str]]:
        if settings.get("scoring") == "dot" and settings.get("mode") == "slow":
            yield "scoring", "dot scoring needs mode=fast"

    def search(self, question, budget_tokens):
        return []


class Wider(Flat):
    """Extends the choices through the class attribute; re-declares top_k plainly."""

    modes = ("fast", "slow", "exhaustive")

    def __init__(
        self, *, top_k: int = 7, extra: Annotated[float, Range(0, 1)] = 0.5, **rest: Any
    ) -> None:
        super().__init__(top_k=top_k, **rest)


class Tree(HierarchicalMemory):
    """A hierarchical memory adding one setting and a traversal; the base's declarations apply."""

    traversals = (*HierarchicalMemory.traversals, "beam")

    def __init__(
        self,
        llm=None,
        embedder=None,
        tokenizer=None,
        *,
        beam_width: Annotated[int, Range(1)] = 2,
        top_k: int = 3,
        html_max_nodes: Annotated[int, Range(10, 100)] = 50,
        **core: Any,
    ) -> None:
        super().__init__(
            llm, embedder, tokenizer, top_k=top_k, html_max_nodes=html_max_nodes, **core
        )

    def add(self, units):
        pass


def target(cls: type, **values: Any) -> list[str]:
    return check_target(
        {"_target_": f"{__name__}.{cls.__name__}", **values}, "memory", Instantiated(SERVICES)
    )


def test_a_valid_section_has_no_problems():
    assert target(Flat, top_k=50, mode="slow", scoring="cos", prompt="say {text}", weight=2) == []
    assert (
        target(Tree, beam_width=4, traversal="beam", top_k=1, diagnostics={"revenue_samples": 5})
        == []
    )


@pytest.mark.parametrize(
    "values,expected",
    [
        ({"top_k": 0}, "memory.top_k=0: expected an integer in [1, 50]"),
        ({"top_k": 2.5}, "memory.top_k=2.5: expected an integer in [1, 50]"),
        ({"top_k": True}, "memory.top_k=true: expected an integer in [1, 50]"),
        ({"top_k": "abc"}, "memory.top_k='abc': expected an integer in [1, 50]"),
        ({"mode": "exhaustive"}, "memory.mode='exhaustive': expected one of fast | slow"),
        ({"scoring": "COS"}, "memory.scoring='COS': expected one of cos | dot"),
        ({"prompt": "no field"}, "memory.prompt: must contain the placeholder(s) {text}"),
        (
            {"prompt": "{text} {txet}"},
            "memory.prompt: unknown placeholder(s) {txet}; allowed: {text}",
        ),
        ({"weight": "heavy"}, "memory.weight='heavy': expected a number"),
        ({"weight": float("nan")}, None),  # a plain float: NaN is a float (no range declared)
        ({"plain": "x"}, "memory.plain='x': expected an integer"),  # type taken from the default
        ({"mode": "slow", "scoring": "dot"}, "memory.scoring: dot scoring needs mode=fast"),
        ({"top_kk": 3}, "memory.top_kk: unknown setting for"),
    ],
)
def test_each_problem_is_one_line_naming_key_value_and_what_is_allowed(values, expected):
    problems = target(Flat, **values)
    if expected is None:
        assert problems == []
        return
    assert len(problems) == 1 and problems[0].startswith(expected), problems
    assert "\n" not in problems[0]


def test_declarations_are_inherited_through_kwargs():
    settings, is_open = declared_settings(Wider, SERVICES)
    assert set(settings) == {"top_k", "extra", "mode", "scoring", "prompt", "weight", "plain"}
    assert not is_open  # Flat's __init__ takes no **kwargs: the key set is closed
    # top_k re-declared as a bare int keeps Flat's range
    assert target(Wider, top_k=51) == ["memory.top_k=51: expected an integer in [1, 50]"]
    # ChoicesFrom reads the subclass's attribute
    assert target(Wider, mode="exhaustive") == []
    assert target(Wider, extra=1.5) == ["memory.extra=1.5: expected a number in [0, 1]"]


def test_hierarchical_base_declarations_reach_every_subclass():
    assert target(Tree, traversal="diagonal") == [
        "memory.traversal='diagonal': expected one of collapsed | collapsed_expand | top_down | beam"
    ]
    assert target(Tree, top_k=-1) == ["memory.top_k=-1: expected an integer >= 1"]
    assert target(Tree, retrieve_threshold=2) == [
        "memory.retrieve_threshold=2: expected a number in [-1, 1]"
    ]
    assert target(Tree, diagnostics={"revenue_samples": 0, "typo": 1}) == [
        "memory.diagnostics.typo: unknown setting; known: coherence_exact_max_members, coherence_samples, "
        "revenue_exact_max_leaves, revenue_samples, ss_theta_groups, ss_theta_max_tokens",
        "memory.diagnostics.revenue_samples=0: expected an integer >= 1",
    ]
    # a subclass narrows an inherited declaration by re-declaring it with the narrower hint
    assert target(Tree, html_max_nodes=5) == [
        "memory.html_max_nodes=5: expected an integer in [10, 100]"
    ]
    assert target(Tree, beam_width=0) == ["memory.beam_width=0: expected an integer >= 1"]
    assert target(Tree, bogus=1) == [
        f"memory.bogus: unknown setting for {__name__}.Tree; known: beam_width, diagnostics, html_max_nodes, "
        "retrieve_threshold, seed, stop_at_first_overflow, top_down_returns, top_k, traversal"
    ]


def test_missing_required_and_bad_targets_are_named():
    assert check_target(
        {"_target_": "memharness.memsys.services.backends.openai_compat.OpenAIBackend"},
        "llm.backend",
    ) == ["llm.backend.model: missing (expected a non-empty string)"]
    problems = check_target({"_target_": "memharness.memsys.nope.Missing"}, "memory")
    assert len(problems) == 1 and problems[0].startswith(
        "memory._target_='memharness.memsys.nope.Missing': cannot be"
    )
    assert check_target({"top_k": 1}, "memory") == [
        "memory._target_: missing (the class or function to build)"
    ]


def test_a_key_where_a_variable_name_belongs_is_refused_without_echo_and_then_masked(caplog):

    from memharness.memsys.settings import EnvVarName

    hint = Annotated[str | None, EnvVarName()]
    key = "Live-4f9XcQ2vLp8RzT6wBn3Kq"  # not key-shaped: only the registration masks it
    problems = check_value(key, hint, "llm.backend.api_key_env")
    assert (
        len(problems) == 1 and "llm.backend.api_key_env" in problems[0] and key not in problems[0]
    )
    assert check_value(None, hint, "llm.backend.api_key_env") == []
    assert check_value("OPENAI_API_KEY", hint, "llm.backend.api_key_env") == []
    assert redact_text(f"sent {key}") == "sent ***"
    install_log_redaction()  # every record from now on, tracebacks included
    try:
        raise RuntimeError(f"server said: bad key {key}")
    except RuntimeError:
        logging.getLogger("memharness.test").exception("value %s", key)
    assert key not in caplog.text and caplog.text.count("***") == 2


def test_union_problems_point_into_the_nested_section():
    from memharness.memsys.hierarchy.memory import DiagnosticsSettings

    hint = DiagnosticsSettings | None
    assert check_value({"coherence_samples": -1}, hint, "memory.diagnostics") == [
        "memory.diagnostics.coherence_samples=-1: expected an integer >= 1"
    ]
    assert check_value(3, hint, "memory.diagnostics")[0].startswith(
        "memory.diagnostics=3: expected null or a mapping"
    )


def test_paths_ranges_and_templates_word_each_problem(tmp_path, monkeypatch):
    """The rules the shipped configs never break: each still gets its own one-line wording."""
    from memharness.memsys.settings import PathExists
    from memharness.memsys.settings_check import describe

    monkeypatch.chdir(tmp_path)  # short paths: a value over 60 characters is shortened
    folder, missing, a_file = "sub", "absent", "f.txt"
    (tmp_path / folder).mkdir()
    (tmp_path / a_file).write_text("")
    model = Annotated[str, PathExists("file")]
    assert check_value(missing, model, "k") == [f"k={missing!r}: no such file"]
    assert check_value(folder, model, "k") == [f"k={folder!r}: not a file"]
    assert check_value(a_file, model, "k") == []
    assert check_value(missing, Annotated[str, PathExists()], "k") == [
        f"k={missing!r}: does not exist"
    ]
    assert describe(model) == "the path of an existing file"
    assert check_value(7, Annotated[int, Range(hi=5)], "k") == ["k=7: expected an integer <= 5"]
    assert describe(Annotated[float, Range(hi=5, hi_open=True)]) == "a number < 5"
    assert check_value("{text", Annotated[str, Placeholders("text")], "k")[0].startswith(
        "k: not a valid template ("
    )
    assert check_value([], Annotated[list[int], NonEmpty()], "k") == ["k=[]: must not be empty"]


def test_a_signature_may_widen_an_inherited_setting_to_null():
    """RAPTOR declares ``top_k: Annotated[int, Range(1)] | None`` itself (null: fill the budget)."""
    section = {"_target_": "memharness.memsys.raptor.memory.Raptor"}
    spec = Instantiated(SERVICES)
    assert check_target({**section, "top_k": None}, "memory", spec) == []
    assert check_target({**section, "top_k": 0}, "memory", spec) == [
        "memory.top_k=0: expected null or an integer >= 1"
    ]
