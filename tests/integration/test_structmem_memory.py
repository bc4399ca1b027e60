"""Structural memory as a whole: Memory-Doc order and provenance, persistence, the call cache sharing
extraction across retrieval settings, the answer style and the experiment configs."""

from __future__ import annotations

import json

import pytest
from conftest import CONF
from hydra import compose, initialize_config_dir
from memharness.eval.metrics.lexical import parse_choice
from memharness.eval.run.answer import answer_request
from memharness.eval.run.runner import run
from memharness.memsys.hierarchy import load_memory
from memharness.memsys.types import Question, RetrievedItem
from omegaconf import OmegaConf
from structmem_fakes import PROMPTS, FakeLLM, by_kind, make_memory, unit

TEXTS = [
    ("Nora adopted a grey cat.", "doc-a"),
    ("Omar plays the cello.", "doc-b"),
    ("Nora named the cat Pepper.", "doc-a"),
    ("Lena climbs in Wales.", "doc-c"),
]


def _memory(**params):
    # Two triples per chunk, written from the chunk's first word, so each unit's chunk is known.
    def reply(prompt):
        if prompt.startswith(PROMPTS["triples"].split("\n")[0]):
            word = prompt.split("Text:\n", 1)[1].split()[0]
            return f"1. {word}; is; first\n2. {word}; is; second"
        return ""

    memory = make_memory(FakeLLM(reply), structure="triples", **params)
    units = [unit(t, i, src) for i, (t, src) in enumerate(TEXTS)]
    memory.insert(units)
    return memory, units


def test_memory_doc_maps_units_to_their_chunks_in_first_retrieved_order():
    memory, units = _memory(answer_with="documents", documents="chunk")
    node = {
        (memory.store.meta[v]["chunk"], memory.store.texts[v].split(";")[2].strip()): v
        for v in range(len(memory.store))
    }
    # retrieved: chunk 3's unit, chunk 1's, chunk 3's again, chunk 0's (a set() would lose this order)
    ranked = [
        (node[(units[3].id, "second")], 0.9),
        (node[(units[1].id, "first")], 0.8),
        (node[(units[3].id, "first")], 0.7),
        (node[(units[0].id, "first")], 0.6),
    ]
    items = memory.document_items(ranked)
    assert [i.text for i in items] == [TEXTS[3][0], TEXTS[1][0], TEXTS[0][0]]
    assert [i.score for i in items] == [0.9, 0.8, 0.6]  # the score of the first unit that led there
    assert [i.source_unit_ids for i in items] == [(units[3].id,), (units[1].id,), (units[0].id,)]
    assert items[0].tokens == memory.tokenizer.count(TEXTS[3][0])


def test_memory_doc_reads_the_original_documents_by_default_when_there_are_several():
    from memharness.memsys.structmem import StructuralMemory

    # auto: the whole source when the memory holds several (here three), the passage over one
    assert StructuralMemory().documents == "auto"
    memory, units = _memory(answer_with="documents")
    assert memory.documents == "auto"  # conf/memory/structmem.yaml agrees
    items = memory.retrieve("Nora named the cat", 10_000)
    assert "doc:doc-a" in [i.node_id for i in items]
    assert (
        next(i for i in items if i.node_id == "doc:doc-a").text == f"{TEXTS[0][0]}\n\n{TEXTS[2][0]}"
    )


def test_memory_doc_source_documents_join_every_unit_of_the_source_in_stream_order():
    memory, units = _memory(answer_with="documents", documents="source")
    by_chunk = {memory.store.meta[v]["chunk"]: v for v in range(len(memory.store))}
    items = memory.document_items(
        [(by_chunk[units[2].id], 0.9), (by_chunk[units[1].id], 0.5), (by_chunk[units[0].id], 0.4)]
    )
    assert [i.node_id for i in items] == ["doc:doc-a", "doc:doc-b"]
    assert items[0].text == f"{TEXTS[0][0]}\n\n{TEXTS[2][0]}" and items[0].source_unit_ids == (
        units[0].id,
        units[2].id,
    )


def test_memory_doc_cuts_a_document_longer_than_the_budget_instead_of_dropping_it():
    sentence = "The harbour master logged the arrival of the grain ship at dawn. "
    article = [unit(f"Part {i}. " + sentence * 40, i, source="article-1") for i in range(10)]
    memory = make_memory(
        FakeLLM(lambda p: ""), structure="chunks", answer_with="documents", documents="source"
    )
    memory.insert(article + [unit("A short note on tides.", 10, source="note")])
    tok = memory.tokenizer
    assert tok.count("\n\n".join(u.text for u in article)) > 4096
    items = memory.retrieve("When did the grain ship arrive?", 4096)
    assert [i.node_id for i in items] == [
        "doc:article-1"
    ]  # the note would not fit after the cut article
    assert 4000 < items[0].tokens <= 4096 and tok.count(items[0].text) == items[0].tokens
    shown = tuple(
        u.id for u in article if u.text[:7] in items[0].text
    )  # provenance: the units shown
    assert (
        items[0].text.startswith("Part 0.")
        and items[0].source_unit_ids == shown
        and 5 < len(shown) < 10
    )
    assert memory.stats()["retrieval_counts"]["documents_truncated"] == 1
    assert memory.traces[-1]["documents_truncated"] == 1
    # a document that fits is kept whole and the next one is cut to what is left
    items = memory.retrieve("A short note on tides.", 4096)
    assert [i.node_id for i in items] == ["doc:note", "doc:article-1"]
    assert items[0].text == "A short note on tides." and sum(i.tokens for i in items) <= 4096
    assert memory.stats()["retrieval_counts"]["documents_truncated"] == 2


def test_memory_only_and_memory_doc_search_end_to_end_and_survive_save_and_load(tmp_path):
    memory, units = _memory(answer_with="documents", top_k=3)
    items = memory.retrieve("Who named the cat Pepper?", 10_000)
    assert items and all(i.node_id.startswith("doc:") for i in items)
    assert len({i.node_id for i in items}) == len(items)  # de-duplicated
    memory.save(tmp_path / "m")
    loaded = load_memory(
        tmp_path / "m", llm=None, embedder=memory.embedder, tokenizer=memory.tokenizer
    )
    assert loaded.retrieve("Who named the cat Pepper?", 10_000) == items
    only, _ = _memory(answer_with="memory", top_k=3)
    units_items = only.retrieve("Who named the cat Pepper?", 10_000)
    assert len(units_items) == 3 and all(";" in i.text for i in units_items)
    view = (tmp_path / "m" / "view.html").read_text()
    assert "Pepper" in view


def _script_cfg(make_cfg, *overrides):
    cfg = make_cfg("memory=structmem", "dataset.limit=2", *overrides)
    cfg.llm.backend.script = [
        [
            "Read the text below and extract knowledge triples",
            "1. Alex; likes; tomatoes\n2. broken",
        ],
        ["extract its atomic facts", "1. Alex likes tomatoes. | Alex | tomatoes"],
        ["Write a summary of the text", "Alex likes tomatoes."],
        ["Rate how relevant", '{"ratings": [{"document": 1, "relevance_score": 7}]}'],
        ["reasoning step by step", "Alex grows them. So the answer is: tomatoes."],
    ]
    return cfg


def test_the_call_cache_alone_shares_extraction_across_retrieval_settings(make_cfg, tmp_path):
    first = run(
        _script_cfg(make_cfg, "memory.structure=mixed", "memory.retrieval=single"),
        tmp_path / "single",
    )
    build = first["calls"]["build"]
    assert build["calls"] > 0 and build["embed_calls"] > 0
    for retrieval in ("rerank", "iterative"):
        second = run(
            _script_cfg(make_cfg, "memory.structure=mixed", f"memory.retrieval={retrieval}"),
            tmp_path / retrieval,
        )
        assert (
            second["calls"]["build"]["calls"] == 0 and second["calls"]["build"]["embed_calls"] == 0
        )
        assert second["calls"]["build"]["cache_hits"] == build["calls"]
        assert second["calls"]["retrieve"]["calls"] > 0  # the rerank / thought requests are new
    stats = json.loads((tmp_path / "rerank" / "memory_stats.json").read_text())
    episode = next(iter(stats.values()))
    assert episode["extraction"]["malformed_lines"]["triples"] == episode["extraction"]["chunks"]
    assert episode["retrieval_counts"]["rerank_requests"] >= 1


def test_the_paper_answer_style_selects_its_prompts_by_question_mode(make_cfg):
    cfg = make_cfg("memory=structmem", "eval=structmem", "dataset=quality_mc")
    assert cfg.dataset.name == "quality_mc" and cfg.dataset.loader.mode == "multiple_choice"
    items = [RetrievedItem(text="The lighthouse was built in 1870.", score=1.0, node_id="n")]
    mc = Question(
        id="q",
        text="When was it built?",
        answers=(),
        position=0,
        options=("1870", "1900"),
        gold_option=0,
    )
    req = answer_request(mc, items, cfg.eval.answer)
    assert req.choices is None and req.max_tokens == 64 and "Answer: (X)" in req.messages[-1][1]
    assert parse_choice("Answer: (A) 1870", 2) == 0 and parse_choice("answer: B", 2) == 1
    free = Question(id="f", text="When was it built?", answers=("1870",), position=0)
    req = answer_request(free, items, cfg.eval.answer)
    assert "noun phrase" in req.messages[-1][1] and req.max_tokens == 32
    default = make_cfg("dataset=quality_mc")  # the default eval keeps the constrained single letter
    assert answer_request(mc, items, default.eval.answer).choices == ("A", "B")


@pytest.mark.parametrize(
    "experiment,memory_keys,swept",
    [
        (
            "structmem_table1",
            {},
            {
                "memory.structure": "chunks,triples,atomic_facts,summaries,mixed",
                "memory.retrieval": "single,rerank,iterative",
            },
        ),
        (
            "structmem_fig3_answer",
            {"documents": "auto"},
            {"memory.answer_with": "memory,documents"},
        ),
        ("structmem_fig4_k", {"retrieval": "single"}, {"memory.top_k": "10,25,50,100,200"}),
        (
            "structmem_fig5_r",
            {"retrieval": "rerank", "top_k": 100},
            {"memory.top_r": "5,10,25,50,75"},
        ),
        (
            "structmem_fig6_t",
            {"retrieval": "iterative", "top_k": 100, "turns": 4},
            {"memory.top_t": "10,25,50,75"},
        ),
        ("structmem_fig7_n", {"retrieval": "iterative", "top_t": 50}, {"memory.turns": "1,2,3,4"}),
    ],
)
def test_experiments_compose_with_their_sweeps(experiment, memory_keys, swept):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            config_name="config", overrides=[f"experiment={experiment}"], return_hydra_config=True
        )
    assert cfg.memory.name == "structmem" and cfg.eval.answer.mc_constrained is False
    assert cfg.dataset.budget_tokens == 4096
    assert {k: cfg.memory[k] for k in memory_keys} == memory_keys
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    assert {k: params[k] for k in swept} == swept


@pytest.mark.parametrize("retrieval", ["rerank", "iterative"])
def test_every_llm_call_runs_at_the_papers_temperature_with_the_run_seed_so_it_is_cached(retrieval):
    memory = make_memory(
        FakeLLM(by_kind(other="Nora. So the answer is: Nora.")),
        structure="mixed",
        retrieval=retrieval,
        turns=2,
        seed=7,
    )
    assert (
        memory.temperature == 0.2
    )  # the paper's GPT-4o-mini temperature (Sec. 4.3); the code uses 0
    memory.insert([unit("Nora adopted a grey cat.", 0), unit("Omar plays the cello.", 1)])
    memory.retrieve("Who adopted a cat?", 4096)
    requests = memory.llm.requests
    assert len(requests) > 6  # 3 kinds x 2 chunks, then the rerank batches or the thought
    assert {(r.temperature, r.seed) for r in requests} == {(0.2, 7)} and all(
        r.cacheable for r in requests
    )
    greedy = make_memory(FakeLLM(by_kind()), structure="triples", temperature=0.0)
    greedy.insert([unit("Nora adopted a grey cat.", 0)])
    assert [(r.temperature, r.seed) for r in greedy.llm.requests] == [
        (0.0, None)
    ]  # the cache keys of temperature 0
