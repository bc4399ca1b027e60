"""The rehearsal backend (memsys/testing/rehearsal*.py): every prompt family's reply read by the
system's own parser, the family table against conf/, topic-separating embeddings, latency and
capacity, and the HTTP server answering as in process."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import yaml
from memharness.eval.judge.prompt import parse_judge
from memharness.eval.metrics.beam import parse_nugget_reply
from memharness.eval.metrics.claims import parse_verdict
from memharness.eval.metrics.lexical import parse_choice
from memharness.memsys.cam.retrieval import parse_selection
from memharness.memsys.extraction.entities import parse_json_reply, parse_records
from memharness.memsys.extraction.parsing import FailureLog, fill, parse_json_object
from memharness.memsys.graphrag.reports import parse_report
from memharness.memsys.hipporag.extract import parse_entities
from memharness.memsys.hipporag.extract import parse_triples as parse_openie
from memharness.memsys.memgpt.calls import parse_call
from memharness.memsys.memorystream.memory import parse_importance
from memharness.memsys.readagent.lookup import parse_pages
from memharness.memsys.readagent.pagination import parse_label
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.structmem.extraction import parse_atomic_facts, parse_summary
from memharness.memsys.structmem.extraction import parse_triples as parse_numbered
from memharness.memsys.structmem.retrieval import parse_rerank_json, parse_rerank_lines
from memharness.memsys.testing.rehearsal import (
    Latency,
    RehearsalChat,
    RehearsalEmbedder,
    rehearsal_reply,
)
from memharness.memsys.testing.rehearsal_families import CONF, FAMILIES
from memharness.memsys.testing.rehearsal_replies import REPLIES
from memharness.memsys.testing.rehearsal_server import RehearsalServer

TEXT = (
    "Anna Berg signed up for the Lisbon marathon in October. She trains with the Harbour Running "
    "Club every Sunday. Her brother Tomas lives in Medellin and grows coffee. Tomas visited Anna "
    "in Lisbon last spring. The Harbour Running Club meets at the old pier."
)
QUESTION = "Which marathon did Anna Berg sign up for?"


def prompt(file: str, key: str, **values: str) -> str:
    node = yaml.safe_load((CONF / file).read_text())
    for part in key.split("."):
        node = node[part]
    return fill(node, **values)


def ask(text: str, **params) -> tuple[str, str]:
    return rehearsal_reply(ChatRequest.user(text, **params))


def test_family_table_covers_every_prompt_key_of_conf():
    """A prompt added to conf/ without a family entry fails here (it would reach the generic reply)."""
    found = set()

    def walk(node, path, file):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, [*path, str(k)], file)
        elif isinstance(node, str) and len(node) > 40 and "prompt" in ".".join(path).lower():
            found.add(f"{file}:{'.'.join(path)}")

    for f in sorted(CONF.rglob("*.yaml")):
        walk(yaml.safe_load(f.read_text()), [], f.relative_to(CONF).as_posix())
    assert found - set(FAMILIES) == set()
    assert set(FAMILIES.values()) - {"fragment"} <= set(REPLIES)


def test_the_forget_judges_get_their_digits():
    """The forgetting judges (eval.forget_judge): a leak when the answer says the old value, an
    abstention when it declines; recognised as their own families, not the harness judge's."""
    leak = "eval/default.yaml", "forget_judge.leak_prompt"
    said = prompt(*leak, question=QUESTION, prediction="The Lisbon marathon.", reference="Lisbon")
    kept = prompt(*leak, question=QUESTION, prediction="Porto.", reference="Lisbon")
    assert ask(said) == ("verdict_digit", "1") and ask(kept) == ("verdict_digit", "0")
    abstain = "eval/default.yaml", "forget_judge.abstain_prompt"
    declined = prompt(*abstain, question=QUESTION, prediction="I don't know.")
    answered = prompt(*abstain, question=QUESTION, prediction="Porto.")
    assert ask(declined) == ("verdict_abstain", "1") and ask(answered) == ("verdict_abstain", "0")


def test_summaries_keep_a_share_of_their_input_within_the_cap():
    family, reply = ask(prompt("memory/raptor.yaml", "summaries.prompt", context=TEXT * 3))
    assert family == "summary" and reply and len(reply.split()) <= 75  # 100 tokens x 0.75
    assert len(reply.split()) < len((TEXT * 3).split()) and "marathon" in reply + TEXT
    memtree = prompt(
        "memory/memtree.yaml",
        "aggregate_prompt",
        new_content=TEXT,
        current_content="Tomas grows coffee.",
        n_children="2",
    )
    family, reply = ask(memtree, max_tokens=192)
    assert family == "summary" and 0 < len(reply.split()) < len(TEXT.split())


def test_graphrag_records_glean_and_report_parse():
    settings = {
        "tuple_delimiter": "<|>",
        "record_delimiter": "##",
        "completion_delimiter": "<|COMPLETE|>",
    }
    first = prompt(
        "memory/graphrag.yaml",
        "prompts.extract_prompt",
        entity_types="ORGANIZATION,PERSON,GEO,EVENT",
        input_text=TEXT,
        **settings,
    )
    family, reply = ask(first)
    log = FailureLog()
    ents, rels = parse_records(reply, "c1", log)
    assert family == "graph_records" and not log.counts
    names = {e.name for e in ents}
    assert {"ANNA BERG", "LISBON"} <= names and rels and all(r.source in names for r in rels)
    glean = prompt("memory/graphrag.yaml", "prompts.continue_prompt")
    convo = ChatRequest(messages=(("user", first), ("assistant", reply), ("user", glean)))
    family, more = rehearsal_reply(convo)
    new, _ = parse_records(more, "c1", log)
    assert family == "graph_glean" and not log.counts and not names & {e.name for e in new}
    first = prompt(
        "memory/graphrag.yaml",
        "prompts.extract_json_prompt",
        entity_types="ORGANIZATION,PERSON,GEO,EVENT",
        input_text=TEXT,
    )
    family, reply = ask(first, json_output=True)
    ents, rels = parse_json_reply(reply, "c1", log)
    assert family == "graph_json" and ents and rels and not log.counts
    convo = ChatRequest(messages=(("user", first), ("assistant", reply), ("user", glean)))
    more, _ = parse_json_reply(rehearsal_reply(convo)[1], "c1", log)  # gleaning in JSON too
    assert more and not log.counts and not {e.name for e in ents} & {e.name for e in more}
    family, report = ask(
        prompt(
            "memory/graphrag.yaml",
            "prompts.report_prompt",
            input_text=TEXT,
            max_report_length="2000",
        )
    )
    parsed = parse_report(0, report, log)
    assert family == "graph_report" and parsed.status == "parsed" and parsed.findings


def test_hipporag_ner_openie_and_filter_parse():
    family, ner = ask(prompt("memory/hipporag.yaml", "prompts.ner_prompt", passage=TEXT))
    names = parse_entities(ner)
    assert family == "ner" and names and "Anna Berg" in names
    openie = prompt(
        "memory/hipporag.yaml", "prompts.triple_prompt", passage=TEXT, named_entity_json=ner
    )
    family, reply = ask(openie)
    triples, dropped = parse_openie(reply, "c1", FailureLog())
    assert family == "openie" and triples and dropped == 0
    assert any(o.startswith("the ") for _, _, o in triples)  # near-duplicate phrases: synonym edges
    facts = json.dumps(
        {"fact": [["anna berg", "signed up for", "lisbon marathon"], ["tomas", "grows", "coffee"]]}
    )
    family, kept = ask(
        prompt(
            "memory/hipporag.yaml",
            "prompts.filter_prompt",
            question=QUESTION,
            fact_before_filter=facts,
        )
    )
    assert family == "fact_filter" and parse_json_object(kept)["fact"] == [
        ["anna berg", "signed up for", "lisbon marathon"]
    ]


def test_structural_memory_replies_parse():
    for key, parse in (
        ("prompts.triples", parse_numbered),
        ("prompts.atomic_facts", parse_atomic_facts),
    ):
        _, reply = ask(prompt("memory/structmem.yaml", key, text=TEXT))
        items, malformed, *_ = parse(reply)
        assert len(items) >= 3 and malformed == 0
    _, reply = ask(prompt("memory/structmem.yaml", "prompts.summaries", text=TEXT))
    assert parse_summary(reply)[0]
    docs = "Document 1:\nTomas grows coffee.\n\nDocument 2:\nAnna Berg signed up for the Lisbon marathon."
    formats = yaml.safe_load((CONF / "memory/structmem.yaml").read_text())["rerank"]["formats"]
    for fmt, parse in (("json", parse_rerank_json), ("lines", parse_rerank_lines)):
        _, reply = ask(
            prompt(
                "memory/structmem.yaml",
                "prompts.rerank",
                output_format=formats[fmt],
                documents=docs,
                question=QUESTION,
            )
        )
        scores = parse(reply, 2)
        assert set(scores) == {1, 2} and scores[2] > scores[1]
    _, thought = ask(
        prompt("memory/structmem.yaml", "prompts.thought", context=TEXT, question=QUESTION)
    )
    assert "So the answer is:" in thought and "Lisbon" in thought


def test_ratings_selections_pages_and_lookups_parse():
    ratings = [
        parse_importance(ask(prompt("memory/memorystream.yaml", "importance_prompt", memory=m))[1])
        for m in ("ok", TEXT)
    ]
    assert None not in ratings and ratings[0] < ratings[1]  # derived from the text, not a constant
    passages = (
        "Passage 1: Tomas grows coffee.\nPassage 2: Anna Berg signed up for the Lisbon marathon."
    )
    _, pick = ask(
        prompt("memory/cam.yaml", "selection.prompt", question=QUESTION, passages=passages)
    )
    assert parse_selection(pick, 2) == [1]
    page = (
        "Anna runs.\n<3>\nAnna runs marathons.\n<4>\nCoffee grows in Medellin.\n<5>\nCoffee beans."
    )
    _, label = ask(
        prompt("memory/readagent.yaml", "pagination.prompt", previous="", passage=page, next="")
    )
    assert parse_label(label) == 4  # the label where the topic changes
    gists = "<Page 0>\nCoffee grows in Medellin.\n<Page 1>\nAnna Berg signed up for the Lisbon marathon."
    _, look = ask(
        prompt(
            "memory/readagent.yaml", "lookup.prompt", gists=gists, question=QUESTION, max_pages="5"
        )
    )
    assert parse_pages(look, 2)[0][0] == 1


def test_memgpt_searches_then_sends_an_answer():
    """The queue as memsys/memgpt/agent.py writes it: JSON entries, consecutive user ones joined."""
    from memharness.memsys.memgpt.agent import packaged

    system = prompt(
        "memory/memgpt.yaml",
        "prompts.system_prompt",
        core_memory="persona",
        page_size="5",
        recall_count="3",
        archival_count="0",
    )
    asked = packaged("user_message", QUESTION, "2024-05-01")
    first = ChatRequest(messages=(("system", system), ("user", asked)), json_output=True)
    family, reply = rehearsal_reply(first)
    call = parse_call(reply)
    assert family == "agent_call" and call.function == "conversation_search" and call.heartbeat
    result = packaged("", f"Showing results: {TEXT}", None, status="OK")
    beat = packaged("heartbeat", "your turn", None)
    found = ChatRequest(
        messages=(*first.messages, ("assistant", reply), ("user", f"{result}\n{beat}"))
    )
    call = parse_call(rehearsal_reply(found)[1])
    assert call.function == "send_message" and "Lisbon" in call.arguments["message"]
    again = packaged("user_message", "Where does Tomas live?", None)
    later = ChatRequest(messages=(*found.messages, ("assistant", "{}"), ("user", again)))
    assert parse_call(rehearsal_reply(later)[1]).function == "conversation_search"


def test_answers_and_verdicts_parse_and_follow_overlap():
    family, answer = ask(
        prompt("eval/default.yaml", "answer.prompt", context=TEXT, question=QUESTION)
    )
    assert family == "answer" and "Lisbon" in answer
    judge = yaml.safe_load((CONF / "eval/default.yaml").read_text())["judge"]["prompt"]
    right = fill(judge, question=QUESTION, reference="the Lisbon marathon", prediction=answer)
    wrong = fill(judge, question=QUESTION, reference="the Lisbon marathon", prediction="Paris")
    assert [parse_judge(ask(p, choices=("0", "1"))[1]) for p in (right, wrong)] == [1, 0]
    official = prompt(
        "judge/official/longmemeval.yaml",
        "prompts.multi-session",
        question=QUESTION,
        reference="Lisbon",
        prediction="the Lisbon one",
    )
    assert ask(official)[1] == "yes"
    label = prompt(
        "judge/prompts/locomo.yaml",
        "prompts.default",
        question=QUESTION,
        reference="Lisbon",
        prediction="Paris",
    )
    assert ask(label, choices=("CORRECT", "WRONG"))[1] == "WRONG"
    cot = prompt("answer_prompt/cot.yaml", "prompt", context=TEXT, question=QUESTION)
    assert ask(cot)[1].splitlines()[-1].startswith("Answer:") and "Lisbon" in ask(cot)[1]
    wrong = prompt(
        "eval/default.yaml",
        "judge_audit.wrong_prompt",
        question=QUESTION,
        reference="the Lisbon marathon",
    )
    assert "lisbon" not in ask(wrong)[1].lower()
    nugget = prompt(
        "judge/official/beam.yaml",
        "prompts.default",
        question=QUESTION,
        reference="names Lisbon",
        prediction="Lisbon",
    )
    assert parse_nugget_reply(ask(nugget)[1]) == 1.0
    claim = prompt(
        "eval/default.yaml",
        "answer.claim_prompt",
        context=TEXT,
        claim="Anna signed up for the Lisbon marathon",
    )
    assert parse_verdict(ask(claim)[1]) == "faithful"
    options = "(A) Paris marathon\n(B) Lisbon marathon"
    mc = prompt(
        "eval/structmem.yaml", "answer.mc_prompt", context=TEXT, question=QUESTION, options=options
    )
    assert parse_choice(ask(mc)[1], 2) == 1
    mc = prompt(
        "eval/default.yaml", "answer.mc_prompt", context=TEXT, question=QUESTION, options=options
    )
    assert ask(mc, choices=("A", "B"))[1] == "B"


def test_answer_prompt_with_the_dated_question_line_is_recognised():
    """LongMemEval's questions carry a date: eval/run/answer.py with_now inserts a line before the
    question's line, which must not make the answer prompt unrecognised."""
    from types import SimpleNamespace

    from memharness.eval.run.answer import with_now

    cfg = yaml.safe_load((CONF / "eval/default.yaml").read_text())["answer"]
    question = SimpleNamespace(asked_at="2023/05/30 (Tue) 10:00")
    template = with_now(cfg["prompt"], question, cfg)
    assert "Current date" in template
    family, answer = ask(template.format(context=TEXT, question=QUESTION))
    assert family == "answer" and "Lisbon" in answer


def test_unrecognised_prompts_get_a_summary_and_are_counted():
    chat = RehearsalChat()
    out = chat.chat(ChatRequest.user(f"Tell me something.\n{TEXT}", max_tokens=20))
    assert 0 < len(out.text.split()) <= 15 and chat.stats()["unrecognised"] == 1
    assert chat.chat(ChatRequest.user("Pick one.", choices=("x", "y"))).text in ("x", "y")
    again = RehearsalChat().chat(ChatRequest.user(f"Tell me something.\n{TEXT}", max_tokens=20))
    assert again.text == out.text  # a pure function of the request


def test_embeddings_separate_topics():
    """Sentences generated from two topic vocabularies: same-topic pairs are near, cross-topic far."""
    topics = {
        "sea": "harbour boat sail fishing tide anchor pier wave crew net".split(),
        "bake": "bread oven flour dough yeast bakery loaf crust butter sugar".split(),
    }
    rng = np.random.default_rng(0)
    texts = {
        t: [f"The {' and the '.join(rng.choice(w, 4))} were there." for _ in range(12)]
        for t, w in topics.items()
    }
    e = RehearsalEmbedder()
    sea, bake = e.embed(texts["sea"]), e.embed(texts["bake"])
    assert np.allclose(np.linalg.norm(sea, axis=1), 1.0, atol=1e-5)
    within = (sea @ sea.T)[np.triu_indices(12, 1)].mean()
    across = (sea @ bake.T).mean()
    assert within > 0.3 > 0.05 > across
    assert np.array_equal(sea, RehearsalEmbedder().embed(texts["sea"]))


def test_latency_per_token_and_capacity_queue():
    lat = Latency(base_ms=30, per_token_ms=10, capacity=2)
    start = time.perf_counter()
    threads = [threading.Thread(target=lat.serve, args=(2,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    stats = lat.stats()
    assert stats["peak_in_flight"] == 2 and stats["queued"] == 2 and stats["requests"] == 4
    assert wall >= 2 * 0.05 and abs(stats["busy_s"] - 4 * 0.05) < 1e-9  # two rounds of 50 ms
    with pytest.raises(ValueError):
        Latency(capacity=0)


def test_server_answers_as_in_process_and_requires_its_key():
    chat, local = RehearsalChat(), RehearsalChat()
    text = prompt("memory/memorystream.yaml", "importance_prompt", memory=TEXT)
    judge = yaml.safe_load((CONF / "eval/default.yaml").read_text())["judge"]["prompt"]
    verdict = fill(judge, question=QUESTION, reference="Lisbon", prediction="Lisbon")
    with RehearsalServer(chat, api_key="k-123") as srv:
        headers = {"Authorization": "Bearer k-123"}
        assert httpx.get(f"{srv.url}/models", timeout=5).status_code == 401
        models = httpx.get(f"{srv.url}/models", headers=headers, timeout=5).json()
        assert models["data"][0]["id"] == "rehearsal"
        body = {"messages": [{"role": "user", "content": text}], "max_tokens": 4}
        reply = httpx.post(
            f"{srv.url}/chat/completions", json=body, headers=headers, timeout=5
        ).json()
        assert (
            reply["choices"][0]["message"]["content"]
            == local.chat(ChatRequest.user(text, max_tokens=4)).text
        )
        body = {"messages": [{"role": "user", "content": verdict}], "guided_choice": ["0", "1"]}
        reply = httpx.post(
            f"{srv.url}/chat/completions", json=body, headers=headers, timeout=5
        ).json()
        assert reply["choices"][0]["message"]["content"] == "1"
        emb = httpx.post(
            f"{srv.url}/embeddings", json={"input": [TEXT]}, headers=headers, timeout=5
        ).json()
        assert np.allclose(emb["data"][0]["embedding"], RehearsalEmbedder().embed([TEXT])[0])
        stats = httpx.get(srv.url.removesuffix("/v1") + "/stats", timeout=5).json()
    assert stats["rejected"] == 1 and stats["rehearsal"]["chat"]["families"] == {
        "rating": 1,
        "verdict_digit": 1,
    }
    assert "k-123" not in json.dumps(stats)


def test_conf_dir_is_read_for_the_templates(tmp_path: Path):
    """The templates come from the config files: another conf_dir with a changed prompt is recognised."""
    conf = tmp_path / "conf"
    for key in FAMILIES:
        src = CONF / key.split(":")[0]
        dst = conf / key.split(":")[0]
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text())
    path = conf / "memory/memorystream.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["importance_prompt"] = "Score this memory from 1 to 10, digits only.\n{memory}\nScore:"
    path.write_text(yaml.safe_dump(cfg))
    family, reply = rehearsal_reply(
        ChatRequest.user(f"Score this memory from 1 to 10, digits only.\n{TEXT}\nScore:"),
        conf_dir=str(conf),
    )
    assert family == "rating" and parse_importance(reply) is not None


def test_test_backend_command_refuses_bad_options_in_one_line(capsys):
    from memharness.memsys.testing.rehearsal_server import main

    with pytest.raises(SystemExit) as out:
        main(["--port", "0", "--capacity", "0"])
    assert out.value.code == 2 and "--capacity >= 1" in capsys.readouterr().err
    with RehearsalServer() as busy:
        port = int(busy.url.rsplit(":", 1)[1].split("/")[0])
        assert main(["--port", str(port)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port}") and "\n" not in err


def test_a_conf_dir_without_the_prompts_is_a_config_error(tmp_path: Path):
    from memharness.memsys.services.types import ConfigError
    from memharness.memsys.testing.rehearsal_families import load_templates

    with pytest.raises(ConfigError, match="has no memory/memtree.yaml"):
        load_templates(str(tmp_path))
    with pytest.raises(ConfigError, match="conf_dir"):
        RehearsalChat(conf_dir=str(tmp_path))
