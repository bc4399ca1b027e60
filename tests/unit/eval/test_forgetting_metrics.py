"""forget_leak, stale_retrieval and the answer readings (eval/metrics/forgetting.py), on the
generated suite streamed into a real memory and into one whose forget does nothing."""

from __future__ import annotations

import pytest
from fakes import LeakyMemory
from memharness.baselines.full_context import FullContext
from memharness.data_prep import forgetting, sample
from memharness.eval.metrics import registry
from memharness.eval.metrics.forgetting import Forgetting, answer_scores, retrieval_scores
from memharness.eval.record.scores import value
from memharness.memsys.testing.doubles import WordTokenizer
from memharness.memsys.types import FORGET_KEY, Question, RetrievedItem, Update


def streamed(memory_class):
    """Every update question of the sample's suite with what the memory retrieved for it."""
    suite = forgetting.apply(sample.load(parts=["dialogues"]), {"facts": 2})
    out = []
    for episode in suite.episodes:
        memory = memory_class(tokenizer=WordTokenizer())
        for kind, payload in episode.events():
            if kind == "insert":
                memory.insert(payload)
            elif payload.update is not None:
                out.append((payload, memory.retrieve_question(payload, 100_000), memory))
    return out


@pytest.mark.parametrize(("memory_class", "leak"), [(FullContext, 0.0), (LeakyMemory, 1.0)])
def test_forget_leak_is_zero_for_a_memory_that_forgets_and_one_for_one_that_does_not(
    memory_class, leak
):
    asked = streamed(memory_class)
    deletions = [(q, items) for q, items, _ in asked if q.update.kind == "deletion"]
    assert len(deletions) == 2
    assert [retrieval_scores(q, items)["forget_leak"] for q, items in deletions] == [leak] * 2
    memory = asked[0][2]
    # the request itself is an operation: counted in forgets, never stored as content
    assert memory.forgets and all(FORGET_KEY not in u.metadata for u in memory.units)


def item(units: tuple[str, ...]) -> RetrievedItem:
    return RetrievedItem(text="t", score=1.0, node_id="n", source_unit_ids=units)


CORRECTION = Question(
    "q",
    "Where does my brother live?",
    ("Porto",),
    9,
    update=Update(
        "correction",
        superseded_units=("old",),
        current_units=("new",),
        superseded_answer="Medellin, Colombia",
    ),
)


@pytest.mark.parametrize(
    ("retrieved", "stale"),
    [
        ([("old",)], 1.0),  # only the superseded fact
        ([("old",), ("new",)], 1.0),  # the current one ranked below it
        ([("new",), ("old",)], 0.0),
        ([("new",)], 0.0),
        ([("other",)], 0.0),
        ([("x", "old"), ("new",)], 1.0),  # a derived item holding the old unit counts
    ],
)
def test_stale_retrieval_reads_rank_and_provenance(retrieved, stale):
    items = [item(u) for u in retrieved]
    assert retrieval_scores(CORRECTION, items) == {"stale_retrieval": stale}


def test_answer_readings():
    deletion = Question(
        "d",
        "Dog's name?",
        ("I don't know",),
        9,
        update=Update("deletion", ("u",), (), (), "Pepper"),
    )
    assert answer_scores(deletion, "The dog is called Pepper.") == {
        "forget_answer_leak": 1.0,
        "forget_abstain": 0.0,
    }
    assert answer_scores(deletion, "I do not know the dog's name.") == {
        "forget_answer_leak": 0.0,
        "forget_abstain": 1.0,
    }
    assert answer_scores(CORRECTION, "He lives in Medellin.") == {"stale_answer": 1.0}
    assert answer_scores(CORRECTION, "In Porto; he left Medellin.") == {"stale_answer": 0.0}
    assert answer_scores(Question("p", "?", ("a",), 0), "a") == {}


def test_the_scorer_writes_registered_metrics_and_skips_failed_retrievals():
    record = {"status": "scored", "prediction": "Medellin"}
    failed = {"status": "retrieve_failed"}
    Forgetting().score([(CORRECTION, [item(("old",))], record), (CORRECTION, [], failed)], None)
    assert value(record, "stale_retrieval") == 1.0 and value(record, "stale_answer") == 1.0
    assert "scores" not in failed
    for name in ("forget_leak", "forget_answer_leak", "forget_abstain", "stale_retrieval"):
        assert registry.lookup(name).scorer == "forgetting"
    assert registry.direction("forget_leak") is False and registry.direction("forget_abstain")


def test_the_judged_readings_ask_whether_the_answer_means_the_old_value():
    from types import SimpleNamespace

    from memharness.eval.judge.forgetting import ForgetJudge
    from memharness.memsys.services.llm import LLM
    from memharness.memsys.services.meter import Meter
    from memharness.memsys.testing.doubles import ScriptedChat
    from omegaconf import OmegaConf

    def judge(request):  # "1" when the answer (after P:) names the reference (after R:)
        prompt = request.messages[-1][1]
        reference, answer = prompt.split("R: ")[1].split(" P: ")
        return "1" if reference.split(",")[0] in answer else "0"

    meter = Meter()
    services = SimpleNamespace(
        meter=meter, llm=LLM(ScriptedChat(reply=judge), meter, progress=False)
    )
    cfg = OmegaConf.create(
        {
            "eval": {
                "judge": {"prompt": "Q: {question} R: {reference} P: {prediction}", "max_tokens": 2}
            }
        }
    )
    deletion = Question(
        "d",
        "Dog's name?",
        ("I don't know",),
        9,
        update=Update("deletion", ("u",), (), (), "Pepper"),
    )
    plain = Question("p", "?", ("a",), 0)
    records = [
        {"status": "scored", "mode": "generative", "prediction": p}
        for p in ("It is Pepper.", "No idea.", "He lives in Medellin.", "Porto.", "a")
    ]
    questions = [deletion, deletion, CORRECTION, CORRECTION, plain]
    ForgetJudge().score(
        [(q, [], r) for q, r in zip(questions, records, strict=True)],
        SimpleNamespace(cfg=cfg, services=services, judges=None),
    )
    assert [value(r, "forget_answer_leak_judge") for r in records[:2]] == [1.0, 0.0]
    assert [value(r, "stale_answer_judge") for r in records[2:4]] == [1.0, 0.0]
    assert "scores" not in records[4]  # no update: never asked
    assert meter.intrinsic["judge"].calls == 4
