"""Structural memory's grouped settings (memsys/structmem/settings.py): checked under their key
paths, old flat keys refused, the groups reaching the steps that read them, and the hyperparameters
saved as the YAML sections they came from."""

from __future__ import annotations

from memharness.memsys.hierarchy import load_memory
from memharness.memsys.settings_check import check_target
from memharness.memsys.structmem import StructuralMemory
from memharness.memsys.structmem.settings import BM25, Extraction, Fusion, Iterative, Rerank
from structmem_fakes import PROMPTS, FakeLLM, by_kind, make_memory, unit

TARGET = "memharness.memsys.structmem.memory.StructuralMemory"


def problems(**settings):
    return check_target({"_target_": TARGET, "prompts": PROMPTS, **settings}, "memory")


def test_a_bad_grouped_setting_is_named_by_its_key_path():
    assert problems(rerank={"batch": 0}) == ["memory.rerank.batch=0: expected an integer >= 1"]
    assert problems(bm25={"b": 1.5}) == ["memory.bm25.b=1.5: expected a number in [0, 1]"]
    (line,) = problems(iterative={"final": "last"})
    assert line.startswith("memory.iterative.final='last': expected one of best_score")
    (line,) = problems(extraction={"chunk_tokens": 0})
    assert line.startswith("memory.extraction.chunk_tokens=0")
    assert problems(fusion={"k": 60, "depth": 100}, rerank={"format": "lines"}) == []


def test_a_flat_key_of_before_the_grouping_is_refused_not_ignored():
    (line,) = problems(rerank_batch=3)
    assert line.startswith("memory.rerank_batch") and "\n" not in line
    (line,) = problems(rerank={"batches": 3})
    assert line.startswith("memory.rerank.batches") and "\n" not in line


def test_cross_field_rules_name_the_grouped_keys():
    rules = dict(
        StructuralMemory.check_settings(
            {"retrieval": "rerank", "prompts": PROMPTS, "rerank": {"format": "lines"}}
        )
    )
    assert rules == {"rerank.formats": "has no entry for rerank.format='lines'"}


def test_the_groups_reach_the_steps_that_read_them():
    memory = make_memory(
        FakeLLM(by_kind()),
        scorer="hybrid",
        fusion={"k": 30, "depth": 7},
        bm25={"k1": 1.2, "stopwords": False},
        rerank={"batch": 3},
    )
    assert isinstance(memory.fusion, Fusion) and isinstance(memory.bm25, BM25)
    assert (memory.retriever.rrf_k, memory.retriever.rrf_depth) == (30.0, 7)
    assert memory.retriever.bm25_params == {
        "k1": 1.2,
        "b": 0.75,
        "epsilon": 0.25,
        "stopwords": False,
    }
    assert memory.rerank == Rerank(batch=3, format="json", formats=memory.rerank.formats)
    assert set(memory.rerank.formats) == {"json", "lines"}
    assert StructuralMemory().iterative == Iterative()  # null sections: the defaults
    assert StructuralMemory().extraction == Extraction(
        max_tokens={"triples": 512, "atomic_facts": 1024, "summaries": 256}
    )


def test_hyperparameters_save_each_group_as_its_section_and_load_back(tmp_path):
    memory = make_memory(
        FakeLLM(by_kind()),
        structure="triples",
        extraction={"chunk_tokens": 64, "deduplicate": True},
        iterative={"final": "final_query", "thought_budget_tokens": None},
    )
    memory.insert([unit("Nora adopted a grey cat.", 0)])
    saved = memory.hyperparameters()
    assert saved["extraction"] == {
        "chunk_tokens": 64,
        "max_tokens": {"triples": 512, "atomic_facts": 1024, "summaries": 256},
        "deduplicate": True,
    }
    assert saved["iterative"]["final"] == "final_query"
    assert saved["iterative"]["thought_budget_tokens"] is None
    assert StructuralMemory(**saved).hyperparameters() == saved
    memory.save(tmp_path / "m", view=False)
    loaded = load_memory(
        tmp_path / "m", llm=None, embedder=memory.embedder, tokenizer=memory.tokenizer
    )
    assert loaded.hyperparameters() == saved
    assert loaded.stats()["config"]["extraction.deduplicate"] is True
