"""Published numbers as data: the schema, the names it uses, and every value against the paper texts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from memharness.data_prep import multihop, novelqa, quality
from memharness.eval.papers.check import check_paper, numbers_in, papers_candidates, papers_folder
from memharness.eval.papers.load import load_all, load_paper
from memharness.eval.papers.names import CATEGORY_LABELS, harness_problems, position_labels
from memharness.eval.papers.store import (
    FOLDER,
    Identity,
    PublishedError,
    normalize_model_id,
)
from paths import TESTS

FIXTURES = TESTS / "fixtures"
FILES = sorted(FOLDER.glob("*.yaml"))
PAPERS = papers_folder()


def _skip_without_papers() -> None:
    if PAPERS is None:
        pytest.skip(
            "SKIPPED, paper texts absent: the published values were NOT checked against the papers "
            f"(looked in {[str(p) for p in papers_candidates()]}; CI has /work/shared/papers, "
            "or set MEMHARNESS_PAPERS)"
        )


# ------------------------------------------------------------------------------ against the papers
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_value_is_printed_where_the_file_says(path):
    _skip_without_papers()
    problems = check_paper(load_paper(path), PAPERS)
    assert not problems, "\n".join(problems)


def _mutated(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    text = (FOLDER / f"{name}.yaml").read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    out = tmp_path / f"{name}.yaml"
    out.write_text(text)
    return out


def test_the_check_catches_swapped_columns_wrong_sections_and_misquotes(tmp_path):
    _skip_without_papers()
    memtree = _mutated(
        tmp_path,
        "memtree_2024",
        (
            "memtree: {inference: 96.0, comparison: 73.9, temporal: 68.4, overall: 80.5}",
            "memtree: {inference: 96.0, comparison: 68.4, temporal: 73.9, overall: 80.5}",
        ),
        (
            '{value: 15, quote: "the maximum depth decreases from 15 to 11"}',
            '{value: 16, quote: "the maximum depth decreases from 15 to 11"}',
        ),
        (
            '{value: 10, relation: "~", quote: "MemTree inserts new information in 10 seconds',
            '{value: 10, relation: "~", quote: "MemTree inserts new information in 12 seconds',
        ),
    )
    problems = "\n".join(check_paper(load_paper(memtree), PAPERS))
    assert (
        "table 4 cell memtree/comparison" in problems
        and "table 4 cell memtree/temporal" in problems
    )
    assert "t08_l025/depth_max: value(s) [16.0]" in problems
    assert "memtree/insert_s: quote not in block" in problems
    structmem = _mutated(
        tmp_path,
        "structmem_2024",
        (
            "source_label: Mixed, source_after: Reranking}",
            'source_label: Mixed, source_after: "Iterative Retrieval"}',
        ),
    )
    problems = "\n".join(check_paper(load_paper(structmem), PAPERS))
    assert (
        "rerank_mixed/quality_acc: value(s) [77.5] not among the numbers printed there [79.5]"
        in problems
    )
    cam = _mutated(
        tmp_path,
        "cam_2025",
        ("source_col: 9, source_head: [MH-RAG, EM]", "source_col: 8, source_head: [MH-RAG, EM]"),
        ("fables_f1p: 91.5, fables_f1n: 52.5", "fables_f1p: 52.5, fables_f1n: 91.5"),
        ("musique_em: 21.8, musique_f1: 32.2", "musique_em: 21.8, musique_f1: 32.3"),
    )
    problems = "\n".join(check_paper(load_paper(cam), PAPERS))
    assert "column 8 has no header 'MH-RAG'" in problems
    assert "table 2 cell cam/fables_f1p: value(s) [52.5]" in problems  # swapped F1_P / F1_N
    assert "table 7 cell hipporag/musique_f1: value(s) [32.3]" in problems
    structmem = _mutated(
        tmp_path,
        "structmem_2024",
        ("hotpot_em: 55.50, hotpot_f1: 75.77", "hotpot_em: 75.77, hotpot_f1: 55.50"),
    )
    problems = "\n".join(check_paper(load_paper(structmem), PAPERS))
    assert "full_content/hotpot_em: value(s) [75.77]" in problems


SYNTHETIC_TEXT = """Intro prose. Table 9: Scores\nModel\tContext\tAcc\tCalls\nGPT-4o\tQuery + A\t81.5\t3,164\n
GPT-4o\tQuery + B\t70.0\t2.5 ± 1.2 per insertion\nEnd of nine.
<p>Table 8: Grid</p><table><tr><td rowspan="2">M</td><td colspan="2">Set</td></tr><tr><td>EM</td><td>F1</td></tr>
<tr><td>X [1]</td><td>1.5</td><td>-</td></tr></table>
Prose block: the tree grows to depth 12 within an hour. Done prose.
"""


def _synthetic_paper(
    tmp_path: Path, a_acc: float = 81.5, b_sd: float = 1.2, quote: str = "grows to depth 12"
) -> Path:
    doc = {
        "schema": 1,
        "version": 1,
        "paper": {"key": "toy_2024", "short": "Toy", "title": "Toy", "source": "toy.txt"},
        "tables": [
            {
                "id": "9",
                "caption": "scores",
                "source": {"anchor": "Table 9: Scores", "end": "End of nine.", "format": "tsv"},
                "rows": [
                    {
                        "id": "a",
                        "label": "A",
                        "system": "memtree",
                        "source_label": ["GPT-4o", "Query + A"],
                    },
                    {
                        "id": "b",
                        "label": "B",
                        "system": "memtree",
                        "source_label": ["GPT-4o", "Query + B"],
                    },
                ],
                "columns": [
                    {
                        "id": "acc",
                        "label": "Acc",
                        "dataset": "multihop",
                        "metric": "judge",
                        "unit": "%",
                        "source_col": 2,
                        "source_head": "Acc",
                    },
                    {
                        "id": "calls",
                        "label": "Calls",
                        "dataset": "multihop",
                        "source": "run",
                        "metric": "llm_requests.build",
                        "unit": "calls",
                        "source_col": 3,
                    },
                ],
                "cells": {
                    "a": {"acc": a_acc, "calls": 3164},
                    "b": {"acc": 70.0, "calls": {"value": 2.5, "sd": b_sd}},
                },
            },
            {
                "id": "8",
                "caption": "grid",
                "source": {"anchor": "Table 8: Grid", "end": "</table>", "format": "html"},
                "rows": [{"id": "x", "label": "X", "system": "memtree", "source_label": "X [1]"}],
                "columns": [
                    {
                        "id": "em",
                        "label": "EM",
                        "dataset": "multihop",
                        "metric": "exact_match",
                        "unit": "%",
                        "source_col": 1,
                        "source_head": ["Set", "EM"],
                    },
                    {
                        "id": "f1",
                        "label": "F1",
                        "dataset": "multihop",
                        "metric": "f1",
                        "unit": "%",
                        "source_col": 2,
                        "source_head": ["Set", "F1"],
                    },
                ],
                "cells": {"x": {"em": 1.5, "f1": {"value": None, "note": "'-' in the paper"}}},
            },
            {
                "id": "fig1",
                "kind": "figure",
                "caption": "prose",
                "source": {"anchor": "Prose block:", "end": "Done prose.", "format": "text"},
                "rows": [{"id": "t", "label": "T", "system": "memtree"}],
                "columns": [
                    {
                        "id": "d",
                        "label": "depth",
                        "dataset": "multihop",
                        "source": "memory_stats",
                        "metric": "structure.depth_max",
                        "unit": "depth",
                    },
                    {
                        "id": "h",
                        "label": "hours",
                        "dataset": "multihop",
                        "source": "run",
                        "metric": "time.build_s",
                        "harness_unit": "s",
                        "unit": "h",
                    },
                ],
                "cells": {
                    "t": {
                        "d": {"value": 12, "quote": quote},
                        "h": {
                            "value": 1,
                            "relation": "<",
                            "value_text": "an hour",
                            "quote": "within an hour",
                        },
                    }
                },
            },
        ],
    }
    (tmp_path / "toy.txt").write_text(SYNTHETIC_TEXT)
    path = tmp_path / "toy_2024.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return path


def test_the_checker_on_a_synthetic_paper_passes_and_fails(tmp_path):
    """Runs without the shared papers: tsv, html with spans, prose quotes, thousands separators, sd."""
    assert check_paper(load_paper(_synthetic_paper(tmp_path)), tmp_path) == []
    bad = check_paper(
        load_paper(_synthetic_paper(tmp_path, a_acc=70.0, b_sd=2.1, quote="grows to depth 13")),
        tmp_path,
    )
    text = "\n".join(bad)
    assert "cell a/acc: value(s) [70.0]" in text and "cell b/calls: value(s) [2.1]" in text
    assert "cell t/d: quote not in block" in text and len(bad) == 3


def test_numbers_are_read_as_printed():
    assert numbers_in("3,164 and 2.38; −2.3, +4.5; θ_0 = 0.8; 1.4x") == [
        3164.0,
        2.38,
        -2.3,
        4.5,
        0.8,
        1.4,
    ]


# ------------------------------------------------------------------------------ schema
REQUIRED = {
    "memtree_2024": {"1", "2", "3", "4", "5", "A.2", "A.3", "A.4", "figA.4", "fig5"},
    "cam_2025": {"2", "3", "7", "fig3a"},
    "structmem_2024": {"1"},
}


def test_every_paper_and_table_the_issue_names_is_stored():
    papers = {p.key: p for p in load_all()}
    assert set(papers) == set(REQUIRED)
    for key, tables in REQUIRED.items():
        assert tables <= {t.id for t in papers[key].tables}, key
    memtree, cam, structmem = papers["memtree_2024"], papers["cam_2025"], papers["structmem_2024"]
    assert len(memtree.table("4").cells) == 20 and len(cam.table("2").cells) == 8 * 16
    assert len(cam.table("3").cells) == 40 and len(structmem.table("1").cells) == 16 * 11
    assert len(cam.table("2").columns) == 16 and len(cam.table("7").cells) == 4 * 6
    # every column of the seed tables (issue 26): CAM Table 2's six datasets, structmem Table 1's six
    assert [c.datasets[0] for c in cam.table("2").columns][::3][:3] == [
        "novelqa",
        "qmsum",
        "fables",
    ]
    assert {c.datasets[0] for c in cam.table("2").columns} == {
        "novelqa",
        "qmsum",
        "fables",
        "multihop",
        "odsum_story",
        "odsum_meeting",
    }
    assert [c.datasets[0] for c in structmem.table("1").columns][::2] == [
        "hotpotqa",
        "twowiki",
        "musique",
        "narrativeqa",
        "locomo",
        "quality_mc",
    ]
    assert cam.table("2").cells[("cam", "fables_f1n")].value == 52.5
    assert cam.table("7").cells[("hipporag", "twowiki_f1")].value == 71.0
    assert structmem.table("1").cells[("rerank_mixed", "narrativeqa_em")].value == 11.98
    assert {r.system for r in cam.table("2").rows} >= {"memgpt", "hipporag", "readagent"}
    assert structmem.table("1").cells[("iterative_mixed", "locomo_f1")].value == 45.25
    assert memtree.table("A.2").cells[("memtree", "llm_calls")].sd == 2.38


def test_every_cell_has_the_required_fields():
    for paper in load_all():
        for table in paper.tables:
            for cell in table.cells.values():
                rec, where = cell.record(), f"{paper.key} {table.id} {cell.row}/{cell.column}"
                assert (
                    rec["paper"] == paper.key and rec["table"] and rec["row"] and rec["column"]
                ), where
                assert rec["unit"], where
                assert {"model", "embedder", "judge"} <= set(rec), where
                assert cell.numbers() or cell.note, f"{where}: no value and no note"
                assert cell.metric or cell.ratio or cell.note, f"{where}: no metric, ratio or note"
                assert cell.datasets or table.kind == "figure", f"{where}: no dataset"
                if cell.system is not None and cell.metric == "judge":
                    assert cell.judge is not None, (
                        f"{where}: a judge cell without the paper's judge"
                    )


def test_names_map_to_the_harness():
    problems = [p for paper in load_all() for p in harness_problems(paper)]
    assert not problems, "\n".join(problems)


def test_unknown_names_are_reported(tmp_path):
    doc = yaml.safe_load((FOLDER / "memtree_2024.yaml").read_text())
    tables = {t["id"]: t for t in doc["tables"]}
    rows = {r["id"]: r for r in tables["1"]["rows"]}
    rows["memorystream"]["system"] = "memorystreem"
    rows["memtree"]["memory"] = {"travesal": "collapsed"}
    tables["1"]["setting"]["protocol"] = {"dataset.budget_token": 1000}
    easy = tables["3"]["columns"][0]
    easy["category"], easy["metric"] = {"difficulty": "simple"}, "judgement"
    tables["2"]["columns"][0]["dataset"] = "msc_ee"
    tables["4"]["experiment"] = "memtree_tabel4"
    path = tmp_path / "memtree_2024.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    text = "\n".join(harness_problems(load_paper(path)))
    assert "system 'memorystreem' is not a memory" in text
    assert "memory.travesal is not a key of conf/memory for memtree" in text
    assert "protocol 'dataset.budget_token' is in none of the configs" in text
    assert (
        "quality has no category difficulty=simple" in text
        and "metric 'judgement' is not a metric key" in text
    )
    assert "dataset 'msc_ee' is not a dataset" in text
    assert "experiment 'memtree_tabel4' is not a file of conf/experiment" in text


def test_category_registry_matches_what_the_loaders_write():
    assert set(CATEGORY_LABELS["type"]["multihop"]) == {
        t.removesuffix("_query") for t in multihop.TYPES
    }
    ds = quality.load(path=str(FIXTURES / "quality" / "QuALITY.v1.0.1.htmlstripped.dev"))
    labels = {
        k: {q.categories[k] for e in ds.episodes for q in e.questions} for k in ("difficulty",)
    }
    assert labels["difficulty"] == set(CATEGORY_LABELS["difficulty"]["quality"]) == {"easy", "hard"}
    assert {k for e in ds.episodes for q in e.questions for k in q.categories} == {"difficulty"}
    nq = novelqa.load(path=str(FIXTURES / "novelqa"))
    for key in ("complexity", "aspect"):
        seen = {q.categories[key] for e in nq.episodes for q in e.questions}
        assert seen and seen <= set(CATEGORY_LABELS[key]["novelqa"]), (key, seen)
    assert position_labels()[:5] == ("0-40", "40-80", "80-120", "120-160", "160-200")


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / f"{doc['paper']['key']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _doc(cell, column=None, row=None) -> dict:
    return {
        "schema": 1,
        "version": 1,
        "paper": {"key": "bad_2024", "short": "B", "title": "B", "source": "b.txt"},
        "tables": [
            {
                "id": "1",
                "caption": "c",
                "source": {"anchor": "a", "end": "e", "format": "tsv"},
                "rows": [row or {"id": "r", "label": "R", "system": "memtree"}],
                "columns": [
                    column
                    or {"id": "c", "label": "C", "dataset": "msc", "metric": "judge", "unit": "%"}
                ],
                "cells": {"r": {"c": cell}},
            }
        ],
    }


@pytest.mark.parametrize(
    "cell,column,row,message",
    [
        ({"value": None}, None, None, "needs a 'note'"),
        ({"value": 1, "relation": "about"}, None, None, "relation 'about'"),
        ({"value": 1, "colour": "red"}, None, None, "unknown keys ['colour']"),
        ({"value": "81.5"}, None, None, "should be a number"),
        ({"low": 1, "high": 2, "relation": "in", "value": 3}, None, None, "takes low and high"),
        (
            1,
            {"id": "c", "label": "C", "dataset": "msc", "metric": "judge"},
            None,
            "missing field 'unit'",
        ),
        (
            1,
            {
                "id": "c",
                "label": "C",
                "metric": "time.build_s",
                "source": "run",
                "harness_unit": "count",
                "unit": "h",
            },
            None,
            "no conversion from 'count' to 'h'",
        ),
        (1, None, {"id": "r", "label": "R", "system": None}, "needs 'why'"),
        (
            {"value": 2, "ratio": {"numerator": "r", "denominator": "nobody", "column": "c"}},
            None,
            None,
            "names a row or column",
        ),
    ],
)
def test_schema_errors_name_the_cell(tmp_path, cell, column, row, message):
    with pytest.raises(PublishedError, match="bad_2024.yaml") as err:
        load_paper(_write(tmp_path, _doc(cell, column, row)))
    assert message in str(err.value)


def test_file_name_must_be_the_paper_key(tmp_path):
    doc = _doc(1)
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(PublishedError, match="should equal the file name"):
        load_paper(path)


def test_model_ids_match_the_papers_names():
    gpt4o = Identity("GPT-4o", ("gpt-4o", "gpt-4o-2024-05-13"))
    assert gpt4o.matches("openai:gpt-4o@1a2b3c4d") and gpt4o.matches(
        "vllm:openai/gpt-4o-2024-05-13"
    )
    assert not gpt4o.matches("openai:gpt-4o-mini@1a2b3c4d") and not gpt4o.matches(None)
    assert (
        normalize_model_id("llama.cpp:SmolLM2-135M-Instruct-Q4_1.gguf:ctx4096")
        == "smollm2-135m-instruct-q4_1"
    )
    llama = Identity("Llama", ("llama-3.1-8b-instruct",))
    assert llama.matches("vllm:meta-llama/Llama-3.1-8B-Instruct")
    assert not llama.matches(
        "llama.cpp:Llama-3.1-8B-Instruct-Q4_K_M.gguf:ctx8192"
    )  # quantised: not the paper's
