"""``cache-merge`` and ``hierarchy`` on bad input (issue 43 case 11): one ``error:`` line naming the file
to blame, exit 2, and no empty target left behind."""

from __future__ import annotations

import sqlite3

import pytest
from memharness.eval.cli import cache_merge
from memharness.memsys.hierarchy.__main__ import main as hierarchy
from memharness.memsys.services.cache import CallCache


def a_cache(path):
    """A real call cache holding one chat entry."""
    CallCache(path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO chat VALUES ('k1', 'm', 'v')")
    return path


@pytest.mark.parametrize(
    ("content", "blame"),
    [
        (b"not a database at all, just text" * 10, "is not a readable SQLite call cache"),
        (None, "has no chat table of a call cache"),  # a SQLite file of something else
    ],
)
def test_a_bad_source_is_blamed_and_no_target_is_created(tmp_path, capsys, content, blame):
    good = a_cache(tmp_path / "good.sqlite")
    bad = tmp_path / "bad.sqlite"
    if content is None:
        with sqlite3.connect(bad) as conn:
            conn.execute("CREATE TABLE notes (x TEXT)")
    else:
        bad.write_bytes(content)
    into = tmp_path / "shared.sqlite"
    assert cache_merge.main([str(into), str(good), str(bad)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {bad}: {blame}") and str(into) not in line
    assert not into.exists()
    assert cache_merge.main([str(into), str(good)]) == 0  # the good one alone merges
    assert "1 chat" in capsys.readouterr().out


def test_a_target_that_is_not_a_cache_is_named(tmp_path, capsys):
    good = a_cache(tmp_path / "good.sqlite")
    into = tmp_path / "notes.txt"
    into.write_text("my notes\n" * 100)
    assert cache_merge.main([str(into), str(good)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(into) in line and "Traceback" not in line
    assert into.read_text() == "my notes\n" * 100  # left as it was


@pytest.mark.parametrize(
    ("files", "argv", "expected"),
    [
        ({}, [], "holds no hierarchy.json"),
        ({"hierarchy.json": "{"}, [], "hierarchy.json: not valid JSON"),
        ({"hierarchy.json": '{"a": 1}'}, [], "not a readable saved hierarchical memory"),
        ({"hierarchy.json": "{}"}, ["--budget", "0"], "--budget must be at least 1"),
    ],
)
def test_hierarchy_refuses_bad_input_in_one_line(tmp_path, capsys, files, argv, expected):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(SystemExit) as done:
        hierarchy([str(tmp_path), *argv])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert expected in err[-1] and not any("Traceback" in x for x in err)
