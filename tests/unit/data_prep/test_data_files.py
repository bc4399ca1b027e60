"""Broken dataset files, for every loader: a non-UTF-8 byte, an empty file, a truncated file, a field
of the wrong type. Each gives a DatasetError naming the file (and line or record and field where
there is one) that never dumps the file's content."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from memharness.data_prep import (
    beam,
    mab,
    membench,
    msc,
    msc_e,
    multihop,
    novelqa,
    quality,
    sample,
)
from memharness.data_prep.base import DatasetError
from paths import TESTS

FIX = TESTS / "fixtures"


def _json_edit(edit: Callable[[Any], None]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        edit(data)
        path.write_text(json.dumps(data), encoding="utf-8")

    return apply


def _jsonl_edit(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        lines = path.read_text(encoding="utf-8").splitlines()
        row = json.loads(lines[0])
        edit(row)
        path.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n", encoding="utf-8")

    return apply


def _set(*keys: Any, value: Any) -> Callable[[Any], None]:
    def edit(data: Any) -> None:
        for k in keys[:-1]:
            data = data[k]
        data[keys[-1]] = value

    return edit


def _parquet(folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        json.loads(line)
        for line in (FIX / "quality" / "emozilla_quality.validation.jsonl").read_text().splitlines()
    ]
    path = folder / "quality.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


# name -> (setup(tmp) -> (folder or file passed as path, the file to break), load(path), a wrong-field edit, field)
LOADERS: dict[str, tuple[Callable, Callable, Callable | None, str]] = {
    "sample": (
        lambda t: _copy(sample.BUNDLED, t),
        lambda p: sample.load(str(p)),
        _json_edit(lambda d: d["dialogues"][0].__setitem__("sessions", "oops")),
        "sessions",
    ),
    "msc": (
        lambda t: _copy(FIX / "msc" / "msc_self_instruct.jsonl", t),
        lambda p: msc.load(str(p)),
        _jsonl_edit(_set("self_instruct", "B", value=5)),
        "'B'",
    ),
    "msc_e": (
        lambda t: _copy(FIX / "msc_e" / "msc_e.v1.jsonl", t),
        lambda p: msc_e.load(str(p)),
        _jsonl_edit(_set("rounds", value={"a": 1})),
        "'rounds'",
    ),
    "quality_official": (
        lambda t: _copy(FIX / "quality" / "QuALITY.v1.0.1.htmlstripped.dev", t),
        lambda p: quality.load(str(p)),
        _jsonl_edit(_set("questions", value="x")),
        "'questions'",
    ),
    "quality_mirror": (
        lambda t: _copy(FIX / "quality" / "emozilla_quality.validation.jsonl", t),
        lambda p: quality.load(str(p)),
        _jsonl_edit(_set("options", value=5)),
        "'options'",
    ),
    "quality_parquet": (lambda t: (_parquet(t),) * 2, lambda p: quality.load(str(p)), None, ""),
    "multihop_corpus": (
        lambda t: _tree(FIX / "multihop", t, "corpus.json"),
        lambda p: multihop.load(str(p)),
        _json_edit(_set(0, "body", value=7)),
        "'body'",
    ),
    "multihop_queries": (
        lambda t: _tree(FIX / "multihop", t, "MultiHopRAG.json"),
        lambda p: multihop.load(str(p)),
        _json_edit(_set(0, "query", value=None)),
        "'query'",
    ),
    "novelqa_questions": (
        lambda t: _tree(FIX / "novelqa", t, "Data/PublicDomain/B01.json"),
        lambda p: novelqa.load(str(p)),
        _json_edit(_set(0, "Question", value=3)),
        "'Question'",
    ),
    "mab": (
        lambda t: _copy(FIX / "mab" / "Accurate_Retrieval.jsonl", t),
        lambda p: mab.load("ar", "ruler_qa1_197K", path=str(p)),
        _jsonl_edit(_set("questions", value="x")),
        "'questions'",
    ),
    "beam": (
        lambda t: _copy(FIX / "beam" / "100K.jsonl", t),
        lambda p: beam.load("128k", path=str(p)),
        _jsonl_edit(_set("chat", value="x")),
        "'chat'",
    ),
    "membench": (
        lambda t: _copy(FIX / "membench" / "data" / "ThirdAgentDataLowLevel.json", t),
        lambda p: membench.load("third", "low", path=str(p)),
        _json_edit(_set("simple", "roles", 0, "message_list", value="x")),
        "'message_list'",
    ),
    "membench_memdata": (
        lambda t: _tree(FIX / "membench", t, "MemData/FirstAgent/simple.json"),
        lambda p: membench.load("first", "low", path=str(p)),
        _json_edit(_set("roles", 0, "QA", "ground_truth", value=2)),
        "'ground_truth'",
    ),
    "novelqa_book": (
        lambda t: _tree(FIX / "novelqa", t, "Books/PublicDomain/B01.txt"),
        lambda p: novelqa.load(str(p)),
        None,
        "",
    ),
}


def _copy(src: Path, tmp: Path) -> tuple[Path, Path]:
    dst = tmp / src.name
    shutil.copy(src, dst)
    return dst, dst


def _tree(src: Path, tmp: Path, broken: str) -> tuple[Path, Path]:
    dst = tmp / src.name
    shutil.copytree(src, dst)
    return dst, dst / broken


def _non_utf8(path: Path) -> str:
    """A latin-1 byte at the start of a line in the middle; returns its 'line:column'."""
    data = path.read_bytes()
    cut = (
        data.index(b"\n", len(data) // 2) + 1 if b"\n" in data[len(data) // 2 :] else len(data) // 2
    )
    path.write_bytes(data[:cut] + b"caf\xe9 " + data[cut:])
    line = data[:cut].count(b"\n") + 1
    return f"{line}:4"


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


BREAKS = {"non_utf8": _non_utf8, "empty": _empty, "truncated": _truncated, "wrong_field": None}
CASES = [
    (loader, brk)
    for loader in LOADERS
    for brk in BREAKS
    if not (brk == "wrong_field" and LOADERS[loader][2] is None)
    and not (loader == "novelqa_book" and brk == "truncated")
]  # half a book is still a book


@pytest.mark.parametrize("loader,brk", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_broken_file_names_the_file_and_never_dumps_it(loader, brk, tmp_path):
    setup, load, wrong_field, field = LOADERS[loader]
    path, broken = setup(tmp_path)
    original = broken.read_bytes()
    where = (wrong_field if brk == "wrong_field" else BREAKS[brk])(broken)
    with pytest.raises(DatasetError) as info:
        load(path)
    message = str(info.value)
    assert str(broken) in message, message
    assert "\n" not in message and len(message) < 400 + len(str(broken)), message
    text = original.decode("utf-8", "ignore")
    middle = text[len(text) // 2 : len(text) // 2 + 40]
    assert len(middle.strip()) < 10 or middle not in message  # the content is not echoed
    if brk == "non_utf8" and broken.suffix != ".parquet":
        assert f"{broken}:{where}: not valid UTF-8" in message, message
    if brk == "wrong_field":
        assert field in message, message
