"""The full-history summary: built once per episode in insert order (one call per session, each with
the summary so far), never per question; the summary's provenance is every summarised unit."""

from __future__ import annotations

from memharness.baselines.history_summary import HistorySummary
from memharness.memsys.testing.doubles import ScriptedLLM, WordTokenizer
from memharness.memsys.types import units_from_texts

PROMPT = "SUMMARY<{summary}> HISTORY<{history}>"


def sessions():
    units = units_from_texts(["alice likes tea", "bob hates rain"], source_id="s1")
    units += units_from_texts(["alice moved to oslo"], source_id="s2", start=2)
    return units


def memory(llm, **kw) -> HistorySummary:
    settings = dict(
        incremental_prompt=PROMPT,
        one_shot_prompt="ALL<{history}>",
        source_header="[S{index}]",
        separator=" | ",
        empty_summary="none",
    )
    return HistorySummary(llm=llm, tokenizer=WordTokenizer(), **{**settings, **kw})


def prompts(llm) -> list[str]:
    return [r.messages[-1][1] for batch in llm.batches for r in batch]


def test_incremental_folds_each_session_in_insert_order_with_the_summary_so_far():
    llm = ScriptedLLM(["sum one", "sum two"])
    m = memory(llm)
    m.insert(sessions())
    items = m.retrieve("where does alice live?", 100)
    assert prompts(llm) == [
        "SUMMARY<none> HISTORY<[S1] | alice likes tea | bob hates rain>",
        "SUMMARY<sum one> HISTORY<[S2] | alice moved to oslo>",
    ]
    assert [i.text for i in items] == ["sum two"]
    assert items[0].source_unit_ids == tuple(u.id for u in sessions()) and items[0].level == 1


def test_the_summary_is_built_once_not_per_question_and_later_units_are_folded_in():
    llm = ScriptedLLM(["s1", "s2", "s3"])
    m = memory(llm)
    m.insert(sessions())
    for q in ("one?", "two?", "three?"):
        m.retrieve(q, 100)
    assert m.stats()["summary_calls"] == 2 and m.stats()["builds"] == 1
    m.insert(units_from_texts(["carol arrives"], source_id="s3", start=3))
    assert m.retrieve("four?", 100)[0].text == "s3"
    assert prompts(llm)[-1] == "SUMMARY<s2> HISTORY<[S3] | carol arrives>"
    assert m.stats()["summary_calls"] == 3 and m.stats()["summarised_units"] == 4


def test_a_long_session_is_read_in_steps_within_step_max_tokens():
    llm = ScriptedLLM(lambda prompt: "ok")
    m = memory(llm, step_max_tokens=6, summary_max_tokens=2)
    m.insert(units_from_texts(["w " * 4, "w " * 4, "w " * 4], source_id="s1"))
    m.retrieve("q", 100)
    assert len(prompts(llm)) == 3
    assert all(r.max_tokens == 2 for batch in llm.batches for r in batch)  # the summary budget


def test_one_shot_is_one_call_over_the_history_most_recent_kept_and_the_cut_counted():
    llm = ScriptedLLM(["whole"])
    m = memory(llm, mode="one_shot", history_max_tokens=7)
    m.insert(sessions())
    items = m.retrieve("q", 100)
    assert prompts(llm) == ["ALL<[S1] | bob hates rain | [S2] | alice moved to oslo>"]
    assert items[0].source_unit_ids == tuple(u.id for u in sessions()[1:])
    assert m.stats()["history_tokens_cut"] == 3 and m.stats()["unsummarised_units"] == 1


def test_a_failed_step_is_counted_and_its_units_are_not_in_the_provenance():
    llm = ScriptedLLM(lambda prompt: None if "oslo" in prompt else "kept")
    m = memory(llm)
    m.insert(sessions())
    items = m.retrieve("q", 100)
    assert items[0].text == "kept" and len(items[0].source_unit_ids) == 2
    assert m.degraded == {"summary_failed": 1} and m.stats()["summary_failures"] == 1


def test_stats_report_tokens_calls_and_compression_and_the_budget_cuts_the_summary():
    m = memory(ScriptedLLM(["a b c d", "a b c d e f"]))
    m.insert(sessions())
    items = m.retrieve("q", 4)
    assert items[0].text == "a b c d" and items[0].tokens == 4
    stats = m.stats()
    assert (stats["summary_tokens"], stats["source_tokens"], stats["summary_calls"]) == (6, 10, 2)
    assert abs(stats["compression_ratio"] - 10 / 6) < 1e-9
    assert stats["summary_cut_at_retrieval"] == 1


def test_state_round_trips_without_new_calls():
    llm = ScriptedLLM(["one", "two"])
    m = memory(llm)
    m.insert(sessions())
    m.retrieve("q", 100)
    again = memory(ScriptedLLM([]))
    again.units = list(m.units)
    again.load_state(m.state())
    assert again.search("q", 100) == m.search("q", 100)


def test_memtree_table1s_summary_row_answers_with_the_no_answer_prompt_and_no_other_row_does():
    """Packer et al.'s baseline may reply NO ANSWER (MemGPT Sec. 3.1.1); the row that copies it answers
    with that prompt by default in experiment=memtree_table1; the other rows keep the shared prompt."""
    from conftest import FAKES
    from hydra import compose, initialize_config_dir
    from memharness.eval.run.validate import config_problems

    from tests.paths import ROOT

    base = [*FAKES, "cache.path=/nonexistent/c.sqlite", "data_dir=/nonexistent/d"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):

        def prompt(*overrides: str) -> str:
            cfg = compose(config_name="config", overrides=[*base, *overrides])
            assert config_problems(cfg) == []
            return cfg.eval.answer.prompt

        row = prompt("experiment=memtree_table1", "memory=history_summary")
        shared = prompt("memory=history_summary")
        other = prompt("experiment=memtree_table1", "memory=memtree")
    assert "NO ANSWER" in row and "not say that you are an AI" in row
    assert row.index("{context}") < row.index("{question}")
    assert "NO ANSWER" not in shared and other == shared
