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
from paths import ROOT

CONF_EVAL = ROOT / "conf" / "eval" / "default.yaml"


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


def forget_judged(predictions, questions, reply):
    """Run the judged readings over (question, prediction) pairs with a scripted judge; returns
    the records, the prompts the judge saw and the meter."""
    from types import SimpleNamespace

    from memharness.eval.judge.forgetting import ForgetJudge
    from memharness.memsys.services.llm import LLM
    from memharness.memsys.services.meter import Meter
    from memharness.memsys.testing.doubles import ScriptedChat
    from omegaconf import OmegaConf

    seen = []

    def judge(request):
        seen.append(request.messages[-1][1])
        return reply(seen[-1])

    meter = Meter()
    services = SimpleNamespace(
        meter=meter, llm=LLM(ScriptedChat(reply=judge), meter, progress=False)
    )
    cfg = OmegaConf.create(
        {
            "eval": {
                "judge": {"prompt": "ACCURACY Q: {question} R: {reference} P: {prediction}"},
                "forget_judge": {
                    "max_tokens": 2,
                    "leak_prompt": "LEAK Q: {question} R: {reference} P: {prediction}",
                    "abstain_prompt": "ABSTAIN Q: {question} P: {prediction}",
                },
            }
        }
    )
    records = [{"status": "scored", "mode": "generative", "prediction": p} for p in predictions]
    ForgetJudge().score(
        [(q, [], r) for q, r in zip(questions, records, strict=True)],
        SimpleNamespace(cfg=cfg, services=services, judges=None),
    )
    return records, seen, meter


def scripted_forget_judge(prompt: str) -> str:
    """LEAK: "1" when the answer (after P:) names the old value (after R:); ABSTAIN: "1" when it
    says "No idea"; "maybe" for the answer "Garbled." (an unparsable verdict)."""
    answer = prompt.split(" P: ")[1]
    if answer == "Garbled.":
        return "maybe"
    if prompt.startswith("ABSTAIN"):
        return "1" if "No idea" in answer else "0"
    reference = prompt.split("R: ")[1].split(" P: ")[0]
    return "1" if reference.split(",")[0] in answer else "0"


DELETION = Question(
    "d", "Dog's name?", ("I don't know",), 9, update=Update("deletion", ("u",), (), (), "Pepper")
)


def test_the_judged_readings_ask_the_forget_prompts_not_the_accuracy_one():
    """The old code sent eval.judge.prompt ("is this answer correct?" against the deleted value):
    Qwen said 1 to "The dog was named Max." against "Pepper, a grey greyhound", so every system
    read 0.5. The leak and abstain verdicts must come from eval.forget_judge's own prompts."""
    plain = Question("p", "?", ("a",), 0)
    predictions = ("It is Pepper.", "No idea.", "He lives in Medellin.", "Porto.", "a")
    questions = [DELETION, DELETION, CORRECTION, CORRECTION, plain]
    records, seen, meter = forget_judged(predictions, questions, scripted_forget_judge)
    assert not [p for p in seen if p.startswith("ACCURACY")]
    assert sorted(p.split()[0] for p in seen) == ["ABSTAIN", "ABSTAIN"] + ["LEAK"] * 4
    assert [value(r, "forget_answer_leak_judge") for r in records[:2]] == [1.0, 0.0]
    assert [value(r, "forget_abstain_judge") for r in records[:2]] == [0.0, 1.0]
    assert [value(r, "stale_answer_judge") for r in records[2:4]] == [1.0, 0.0]
    assert "forget_abstain_judge" not in records[2]["scores"]  # corrections: nothing to decline
    assert "scores" not in records[4]  # no update: never asked
    assert records[0]["scores"]["forget_answer_leak_judge"]["details"]["reply"] == "1"
    assert meter.intrinsic["judge"].calls == 6


def test_an_unparsable_forget_verdict_is_recorded_without_a_value():
    records, _, _ = forget_judged(("Garbled.",), [DELETION], scripted_forget_judge)
    for metric in ("forget_answer_leak_judge", "forget_abstain_judge"):
        score = records[0]["scores"][metric]
        assert score["value"] is None and score["details"]["status"] == "judge_unparsed"
        assert score["details"]["reply"] == "maybe"


def test_the_shipped_forget_prompts_are_their_own_and_registered():
    from omegaconf import OmegaConf

    conf = OmegaConf.load(CONF_EVAL)
    section = conf.forget_judge
    for name, fields in (("leak_prompt", 3), ("abstain_prompt", 2)):
        text = section[name]
        assert text != conf.judge.prompt
        assert (
            len({f for f in ("{question}", "{reference}", "{prediction}") if f in text}) == fields
        )
    assert registry.lookup("forget_abstain_judge").scorer == "forget_judge"
    assert registry.direction("forget_abstain_judge") is True
