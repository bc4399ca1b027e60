"""Memory-Doc on a single-document episode (QuALITY, MSC-E): the document of a memory unit is the
passage it was extracted from, so the context follows the question; ``documents: source`` (the whole
article, cut to the budget) gives one context whatever the question."""

from __future__ import annotations

import pytest
from memharness.memsys.structmem import StructuralMemory
from structmem_fakes import CONF, PROMPTS, FakeLLM, make_memory, unit

# One article (one source id), four chunks about different topics, as a QuALITY episode.
CHUNKS = [
    "The lighthouse keeper Ida trimmed the lamp wick every evening at dusk. " * 6,
    "The orchard grew pears and plums; Tomas pruned the trees in February. " * 6,
    "The starship Vega reached the moon Hesper after a voyage of nine years. " * 6,
    "The bakery on Mill Lane sold rye bread and cinnamon buns each Saturday. " * 6,
]
QUESTIONS = ("Who pruned the pear trees in the orchard?", "Which moon did the starship reach?")


def summary_of(prompt: str) -> str:
    """The summary extraction reply: the chunk's first sentence."""
    if prompt.startswith(PROMPTS["summaries"].split("\n")[0]):
        return prompt.split("Text:\n", 1)[1].split(".")[0].strip() + "."
    return ""


def article_memory(**params) -> StructuralMemory:
    memory = make_memory(
        FakeLLM(summary_of), structure="summaries", answer_with="documents", top_k=2, **params
    )
    memory.insert([unit(text, i, source="article") for i, text in enumerate(CHUNKS)])
    return memory


def context(memory: StructuralMemory, question: str, budget: int = 120) -> str:
    return "\n---\n".join(i.text for i in memory.retrieve(question, budget))


def test_memory_doc_depends_on_the_question_on_a_single_document_episode():
    memory = article_memory()  # the shipped default: documents auto -> passage over one source
    assert memory.documents == "auto"
    first, second = (context(memory, q) for q in QUESTIONS)
    assert first != second
    assert first.startswith(CHUNKS[1][:40]) and second.startswith(CHUNKS[2][:40])
    assert memory.traces[-1]["documents"] == "passage"


def test_documents_source_keeps_the_old_constant_context():
    memory = article_memory(documents="source")
    first, second = (context(memory, q) for q in QUESTIONS)
    assert first == second  # the article's first tokens, whatever the question
    assert first.startswith(CHUNKS[0][:40])
    assert memory.traces[-1]["documents"] == "source"


def test_auto_reads_whole_sources_when_the_memory_holds_several():
    memory = make_memory(
        FakeLLM(summary_of), structure="summaries", answer_with="documents", top_k=2
    )
    memory.insert([unit(CHUNKS[0], 0, "a"), unit(CHUNKS[1], 1, "b"), unit(CHUNKS[2], 2, "b")])
    items = memory.retrieve(QUESTIONS[1], 10_000)
    assert items[0].node_id == "doc:b" and items[0].text == f"{CHUNKS[1]}\n\n{CHUNKS[2]}"
    assert memory.traces[-1]["documents"] == "source"


@pytest.mark.parametrize("documents", ["passage", "chunk"])
def test_passage_is_the_piece_read_when_chunk_tokens_cuts_a_unit(documents):
    """With ``extraction.chunk_tokens`` a dataset unit is read in pieces: ``passage`` maps a unit to its piece,
    ``chunk`` to the whole dataset unit."""
    memory = make_memory(
        FakeLLM(summary_of),
        structure="chunks",
        answer_with="documents",
        documents=documents,
        extraction={"chunk_tokens": 90},
        top_k=1,
    )
    whole = "".join(CHUNKS)
    memory.insert([unit(whole, 0, source="article")])
    (item,) = memory.retrieve(QUESTIONS[1], 10_000)
    if documents == "passage":
        assert "starship Vega" in item.text and len(item.text) < len(whole) / 2
    else:
        assert item.text == whole
    assert item.source_unit_ids == (memory.store.units[0][0],)


def _run_values(n_ctx: int, **memory) -> dict:
    """The parts of a resolved run config the context check reads."""
    settings = {k: v for k, v in CONF.items() if k != "seed"}
    for key, value in memory.items():  # a group's values update its shipped section
        settings[key] = {**settings[key], **value} if isinstance(value, dict) else value
    return {
        "memory": settings,
        "dataset": {"loader": {"chunk_size": 1024}},
        "llm": {"backend": {"n_ctx": n_ctx}},
        "tokenizer": "cl100k_base",
    }


def test_a_rerank_or_thought_prompt_over_the_context_is_refused_naming_the_settings():
    from memharness.eval.run.validate import context_problems

    (line,) = context_problems(_run_values(4096, retrieval="rerank"))
    assert line.startswith("llm.backend.n_ctx=4096: structmem's rerank batches")
    assert "memory.rerank.batch" in line and "\n" not in line
    (line,) = context_problems(_run_values(4096, retrieval="iterative"))
    assert "thought prompts" in line and "memory.iterative.thought_budget_tokens" in line
    assert context_problems(_run_values(16384, retrieval="rerank")) == []
    assert context_problems(_run_values(4096, retrieval="rerank", rerank={"batch": 3})) == []
    budget = {"thought_budget_tokens": 2048}
    assert context_problems(_run_values(4096, retrieval="iterative", iterative=budget)) == []
    openai = _run_values(4096, retrieval="rerank")
    del openai["llm"]["backend"]["n_ctx"]  # a backend without a fixed context is not checked
    assert context_problems(openai) == []
