"""Generated data at real sizes (data_prep/synth): every shape through its real loader, sizes,
determinism and refusals. Small sizes here; `make rehearse` writes the real ones."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from memharness.data_prep.synth import SHAPES, cli
from memharness.data_prep.synth.text import SynthError
from memharness.eval.run.runner import load_dataset
from memharness.memsys.services.tokens import get_tokenizer
from paths import FIXTURES

COUNT = get_tokenizer("cl100k_base").count
SMALL = {  # (questions, tokens per episode): a few episodes each, seconds in all
    "longmemeval_s": (8, 4_000),
    "longmemeval_m": (2, 9_000),
    "locomo": (30, 3_000),
    "novelqa": (30, 4_000),
    "multihop": (20, 8_000),
    "beam": (24, 12_000),
}


def _write(tmp_path: Path, shape: str, seed: int = 3, **kw) -> dict:
    n, t = SMALL[shape]
    return cli.synthesize(
        shape, tmp_path / shape, kw.get("questions", n), kw.get("tokens", t), seed
    )


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", text.lower())


def _inside(answer: str, text: str) -> bool:
    """Every part of a list answer ("A, B and C") is in the text (case and punctuation aside)."""
    parts = re.split(r", | and ", answer)
    return all(_norm(p) in _norm(text) for p in parts)


def _load(make_cfg, summary: dict, *extra: str):
    cfg = make_cfg(*summary["overrides"], "dataset.loader.integrity=raise", *extra)
    return load_dataset(cfg)


def _check_longmemeval(ds, summary, tmp_path):
    asked = 0
    for ep in ds.episodes:
        for q in ep.questions:
            kind = q.categories["type"]
            if q.categories["abstention"] == "abstention" or kind == "single-session-assistant":
                assert not q.evidence  # the official rule: no marked user turn, no evidence
                continue
            text = " ".join(ep.units[e.position].text for e in q.evidence)
            assert all(ep.units[e.position].source_id == e.source_id for e in q.evidence)
            gold = q.answers[0]
            if kind == "single-session-preference":
                gold = re.fullmatch(r"The user would prefer suggestions involving a (.+)\.", gold)[
                    1
                ]
            assert _inside(gold, text), (q.id, gold, text)
            asked += 1
    ssa = summary["strata"].get("single-session-assistant", 0)
    assert ds.metadata["no_user_answer_turn"] == ssa and asked > 0


def _check_locomo(ds, summary, tmp_path):
    for ep in ds.episodes:
        for q in ep.questions:
            assert q.evidence and all(e.position is not None for e in q.evidence)
            text = " ".join(ep.units[e.position].text for e in q.evidence)
            if q.categories["locomo_category"] == "5":  # the distractor is what the turn says
                gold = q.options[1 - q.gold_option]
            else:
                gold = q.answers[0]
            assert _inside(gold, text), (q.id, gold, text)


def _check_novelqa(ds, summary, tmp_path):
    for ep in ds.episodes:
        book = "".join(u.text for u in ep.units)
        for q in ep.questions:
            gold = q.options[q.gold_option]
            if q.categories["aspect"] == "times":
                who, other, noun = re.fullmatch(
                    r"How many times did (.+) write to (.+) about the (.+)\?", q.text
                ).groups()
                assert book.count(f"{who} wrote a letter to {other} about the {noun}.") == int(gold)
            else:
                assert gold in book, (q.id, gold)


def _check_multihop(ds, summary, tmp_path):
    (ep,) = ds.episodes
    articles: dict[str, str] = {}
    for u in ep.units:
        articles[u.source_id] = articles.get(u.source_id, "") + u.text
    for q in ep.questions:
        if q.categories["type"] == "null":
            assert not q.evidence and q.answers == ("Insufficient information.",)
            continue
        assert len(q.evidence) >= 2 and all(e.position is not None for e in q.evidence)
        assert all(
            e.text in articles[e.source_id] for e in q.evidence
        )  # the fact is in its article
        if q.categories["type"] == "inference":
            assert all(q.answers[0] in e.text for e in q.evidence)


def _check_beam(ds, summary, tmp_path):
    file = next(iter(summary["files"]))
    rows = [json.loads(line) for line in (tmp_path / "beam" / file).read_text().splitlines()]
    for ep, row in zip(ds.episodes, rows, strict=True):
        by_id = {u.metadata["chat_id"]: u.text for u in ep.units}
        assert len(by_id) == len(ep.units)  # message ids unique in a conversation
        probes = ast.literal_eval(row["probing_questions"])
        for ability, items in probes.items():
            for item in items:
                refs = item.get("source_chat_ids", [])
                ids = [i for v in refs.values() for i in v] if isinstance(refs, dict) else refs
                assert all(i in by_id for i in ids)
                if ability in ("information_extraction", "multi_session_reasoning"):
                    assert _inside(item["answer"], " ".join(by_id[i] for i in ids))
                if ability == "knowledge_update":
                    assert item["answer"] in by_id[refs["updated_info"][0]]
                if ability != "abstention":
                    assert ids, (ability, item)
    assert {q.categories["ability"] for e in ds.episodes for q in e.questions} == set(probes)


CHECKS = {
    "longmemeval_s": _check_longmemeval,
    "longmemeval_m": _check_longmemeval,
    "locomo": _check_locomo,
    "novelqa": _check_novelqa,
    "multihop": _check_multihop,
    "beam": _check_beam,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_loads_through_its_loader_with_gold_evidence_and_answers_in_it(
    shape, tmp_path, make_cfg
):
    summary = _write(tmp_path, shape)
    extra = ("dataset.loader.include_null=true",) if shape == "multihop" else ()
    ds = _load(make_cfg, summary, *extra)
    assert ds.num_questions == SMALL[shape][0] == summary["questions"]
    assert ds.metadata["integrity"] == {}  # no duplicate ids, empty texts or dangling evidence
    assert len(ds.episodes) == summary["episodes"]
    for ep in ds.episodes:  # one question per subject: none asked twice, so each has one gold
        texts = [q.text for q in ep.questions]
        assert len(set(texts)) == len(texts), shape
    CHECKS[shape](ds, summary, tmp_path)
    half = make_cfg(*summary["overrides"], f"dataset.limit={SMALL[shape][0] // 2}")
    sub = load_dataset(half)  # a stratified subset of the generated file, as of a real one
    assert sub.num_questions == SMALL[shape][0] // 2 and len(sub.metadata["strata"]) > 1


def _episode_tokens(shape: str, root: Path) -> list[int]:
    """Tokens per episode recounted from the written files (texts only, not the JSON)."""
    if shape.startswith("longmemeval"):
        (file,) = root.glob("longmemeval_*.json")
        return [
            sum(COUNT(t["content"]) for s in r["haystack_sessions"] for t in s)
            for r in json.loads(file.read_text())
        ]
    if shape == "locomo":
        recs = json.loads((root / "locomo10.json").read_text())
        return [
            sum(
                COUNT(t["text"])
                for k, v in r["conversation"].items()
                if re.fullmatch(r"session_\d+", k)
                for t in v
            )
            for r in recs
        ]
    if shape == "novelqa":
        return [COUNT(p.read_text()) for p in sorted((root / "Books").rglob("*.txt"))]
    if shape == "multihop":
        return [sum(COUNT(a["body"]) for a in json.loads((root / "corpus.json").read_text()))]
    out = []
    for line in next(root.glob("*.jsonl")).read_text().splitlines():
        row = json.loads(line)
        chats = [p["chat"] for p in row["plans"]] if row.get("plans") else [row["chat"]]
        out.append(sum(COUNT(m["content"]) for c in chats for b in c for m in b))
    return out


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("scale", [1, 5])
def test_tokens_per_episode_land_within_ten_percent_of_the_target(shape, scale, tmp_path):
    n, t = SMALL[shape]
    n = max(1, n // 4) if scale > 1 else n  # the larger size with fewer episodes, to stay fast
    summary = cli.synthesize(shape, tmp_path / shape, n, t * scale, seed=5)
    counts = _episode_tokens(shape, tmp_path / shape)
    assert all(abs(c - t * scale) <= 0.1 * t * scale for c in counts), (counts, t * scale)
    assert abs(sum(counts) - summary["tokens"]) <= 0.01 * sum(counts)  # the reported count holds


def test_the_same_seed_writes_byte_identical_files_and_another_seed_other_files(tmp_path):
    for shape in SHAPES:
        a = _write(tmp_path / "a", shape, seed=11)
        b = _write(tmp_path / "b", shape, seed=11)
        c = _write(tmp_path / "c", shape, seed=12)
        assert a["files"] == b["files"], shape  # sha256 and bytes of every file
        assert a["files"] != c["files"], shape
        first = (tmp_path / "a" / shape / "synth.json").read_text().replace(str(tmp_path / "a"), "")
        again = (tmp_path / "b" / shape / "synth.json").read_text().replace(str(tmp_path / "b"), "")
        assert first == again


def test_the_command_writes_synth_json_and_prints_the_overrides(tmp_path, capsys):
    out = tmp_path / "lme"
    code = cli.main(
        ["longmemeval_s", "--out", str(out), "--questions", "3", "--tokens", "3000", "--seed", "2"]
    )
    printed = capsys.readouterr().out
    summary = json.loads((out / "synth.json").read_text())
    assert code == 0 and summary["questions"] == 3 and summary["seed"] == 2
    assert "overrides: " + " ".join(summary["overrides"]) in printed
    assert summary["overrides"][1] == f"dataset.loader.path={out}"  # DIR itself, for every shape
    digest = summary["files"]["longmemeval_s_cleaned.json"]["sha256"]
    assert digest in printed and len(digest) == 64


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["lme_s"], "unknown shape 'lme_s'; choose one of longmemeval_s, longmemeval_m"),
        (
            ["locomo", "--questions", "400", "--tokens", "500"],
            "--tokens 500 is too small for 400 locomo questions",
        ),
        (["beam", "--questions", "0"], "--questions must be at least 1"),
    ],
)
def test_a_malformed_request_is_refused_in_one_line_and_writes_nothing(
    argv, message, tmp_path, capsys
):
    out = tmp_path / "never"
    assert cli.main([argv[0], "--out", str(out), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()
    with pytest.raises(SynthError):
        cli.check_request(argv[0], *([400, 500] if argv[0] == "locomo" else [0, None]))


def _schema(obj, path: str = "") -> set[tuple[str, str]]:
    """Every (path, type) in a JSON value: list items merged as ``[]``, numbers and speaker names
    in keys folded (``session_N``, ``events_session_N.<speaker>``)."""
    if isinstance(obj, dict):
        out = set()
        for k, v in obj.items():
            key = re.sub(r"\d+", "N", k)
            key = (
                "<speaker>"
                if re.search(r"(events_session|_observation)_?N?$", path) and key != "date"
                else key
            )
            out |= _schema(v, f"{path}.{key}")
        return out
    if isinstance(obj, list):
        return {(path, "list")}.union(*(_schema(v, path + "[]") for v in obj))
    return {(path, type(obj).__name__)}


def _rows(file: Path) -> list[dict]:
    """BEAM rows with their probing questions parsed."""
    rows = [json.loads(line) for line in file.read_text().splitlines()]
    return [dict(r, probing_questions=ast.literal_eval(r["probing_questions"])) for r in rows]


# BEAM's per-ability fields as the upstream probing_questions.json files write them
# (mohammadtavakoli78/BEAM chats/100K/1/probing_questions/probing_questions.json).
BEAM_FIELDS = {
    "abstention": (
        "question ideal_response difficulty abstention_type why_unanswerable plan_reference rubric"
    ),
    "contradiction_resolution": (
        "question ideal_answer difficulty contradiction_type topic_questioned "
        "conversation_references tests_for source_chat_ids rubric"
    ),
    "event_ordering": (
        "question answer difficulty ordering_type total_mentions "
        "conversation_references ordering_tested source_chat_ids rubric"
    ),
    "information_extraction": (
        "question answer difficulty question_type conversation_reference "
        "key_facts_tested source_chat_ids rubric"
    ),
    "instruction_following": (
        "question instruction_being_tested expected_compliance "
        "compliance_indicators non_compliance_signs difficulty instruction_type "
        "source_chat_ids rubric"
    ),
    "knowledge_update": (
        "question answer difficulty update_type tests_retention_of "
        "conversation_references potential_confusion source_chat_ids rubric"
    ),
    "multi_session_reasoning": (
        "question answer difficulty reasoning_type sessions_required "
        "conversation_references reasoning_steps source_chat_ids rubric"
    ),
    "preference_following": (
        "question preference_being_tested expected_compliance "
        "compliance_indicators non_compliance_signs difficulty preference_type "
        "source_chat_ids rubric"
    ),
    "summarization": (
        "question ideal_summary difficulty summarization_type "
        "bullet_points_covered conversation_sessions key_elements_tested "
        "synthesis_required source_chat_ids rubric"
    ),
    "temporal_reasoning": (
        "question answer difficulty temporal_type time_points "
        "conversation_references calculation_required source_chat_ids rubric"
    ),
}


def test_the_files_have_the_exact_schema_of_the_upstream_fixtures(tmp_path):
    """Same keys, nesting and types as tests/fixtures' exact-schema files, down to the release's
    rarer variants (integer golds, captioned images, null authors)."""

    def read(*parts):
        return json.loads(Path(*parts).read_text())

    pairs = {
        "longmemeval_s": (
            lambda d: read(d, "longmemeval_s_cleaned.json"),
            read(FIXTURES, "longmemeval", "longmemeval_s_cleaned.json"),
        ),
        "locomo": (lambda d: read(d, "locomo10.json"), read(FIXTURES, "locomo", "locomo10.json")),
        "multihop": (
            lambda d: [read(d, "corpus.json"), read(d, "MultiHopRAG.json")],
            [
                read(FIXTURES, "multihop", "corpus.json"),
                read(FIXTURES, "multihop", "MultiHopRAG.json"),
            ],
        ),
        "novelqa": (
            lambda d: [
                read(d, "Data", "PublicDomain", "B00.json"),
                read(d, "bookmeta.json")["B00"],
            ],
            [
                read(FIXTURES, "novelqa", "Data", "PublicDomain", "B01.json"),
                read(FIXTURES, "novelqa", "bookmeta.json")["B01"],
            ],
        ),
    }
    sizes = {"longmemeval_s": 60, "locomo": 120, "multihop": 40, "novelqa": 60}  # rare variants too
    for shape, (generated, fixture) in pairs.items():
        _write(tmp_path, shape, questions=sizes[shape], tokens=SMALL[shape][1] * 3)
        mine, theirs = _schema(generated(tmp_path / shape)), _schema(fixture)
        assert mine == theirs, shape  # integer golds, shared images and null authors included
    for split, tokens in (("100K", 12_000), ("10M", 2_100_000)):
        cli.synthesize("beam", tmp_path / split, 20, tokens, seed=1)
        (row,) = _rows(tmp_path / split / f"{split}.jsonl")
        (fix, *_) = _rows(FIXTURES / "beam" / f"{split}.jsonl")
        assert list(row) == list(fix)  # the same keys in the same order
        assert _schema(fix) - _schema(row) == set()
        for ability, items in row["probing_questions"].items():
            assert all(list(item) == BEAM_FIELDS[ability].split() for item in items), ability


SHAPE_LOADER = {"longmemeval_s": "longmemeval", "longmemeval_m": "longmemeval"}
SHAPE_LOADER.update({s: s for s in ("locomo", "novelqa", "multihop", "beam")})


def test_memharness_synth_is_the_contract_make_rehearse_calls(tmp_path, capsys):
    """`memharness synth SHAPE --out DIR --questions N --tokens T --seed S`, through the one command."""
    from memharness.eval.cli.command import dispatch

    for shape in ("longmemeval_s", "longmemeval_m", "locomo", "novelqa", "multihop", "beam"):
        argv = ["synth", shape, "--out", str(tmp_path / shape), "--questions", "3"]
        assert dispatch([*argv, "--tokens", "12000", "--seed", "7"]) == 0, shape
        summary = json.loads((tmp_path / shape / "synth.json").read_text())
        assert summary["seed"] == 7 and summary["overrides"][0] == f"dataset={SHAPE_LOADER[shape]}"
        assert f"dataset.loader.path={tmp_path / shape}" in summary["overrides"]  # DIR itself
    assert capsys.readouterr().out.count("overrides: dataset=") == 6
