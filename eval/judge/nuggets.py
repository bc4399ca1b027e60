"""BEAM's rubric-nugget judge as a ``judge.official`` protocol (``per_nugget: true``;
conf/judge/official/beam.yaml), run by eval/judge/official.py beside the audited harness judge.

Every rubric item of a question is one request to the ``judge=`` model (the protocol's prompt with
``{reference}`` = the item); each reply's JSON ``score`` (1, 0.5 or 0) is that nugget's verdict and
the question's ``beam_nugget`` is their mean (eval/metrics/beam.py). Every nugget, its verdict and
the judge's reply go into the sample record's score details. A reply with no readable score makes
the question ``judge_unparsed`` (no value: never a guessed verdict), a failed call
``judge_failed``; both are counted in the summary. Event-ordering questions also get
``beam_event_order`` (Kendall tau x F1): every (rubric item, answer line) pair is asked with
``equivalence_prompt`` (upstream's yes/no same-event classifier, ``'yes' in reply``), then the
greedy alignment is replayed from those verdicts (the same result as asking pair by pair). With
``constrained: true`` the nugget replies are held to the verdict's JSON schema (a grammar on
llama.cpp: small local judges then always give a readable score).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memharness.eval.judge.loop import ask
from memharness.eval.metrics import beam
from memharness.eval.record.scores import put
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question

NUGGET_METRIC = "beam_nugget"
ORDER_METRIC = "beam_event_order"
KIND = "official_judge"


VERDICT_SCHEMA = json.dumps(  # constrained: true: the reply held to the prompt's JSON verdict
    {
        "type": "object",
        "properties": {"score": {"enum": list(beam.SCORES)}, "reason": {"type": "string"}},
        "required": ["score", "reason"],
    }
)


def nugget_requests(
    question: Question, prediction: str, proto: Mapping[str, Any]
) -> list[ChatRequest]:
    template = proto["prompts"]["default"]
    return [
        ChatRequest.user(
            template.format(question=question.text, reference=item, prediction=prediction),
            max_tokens=int(proto["max_tokens"]),
            json_output=bool(proto.get("constrained")),
            json_schema=VERDICT_SCHEMA if proto.get("constrained") else None,
        )
        for item in question.rubric
    ]


def order_pairs(question: Question, prediction: str) -> list[tuple[str, str]]:
    """(rubric item, answer line) for every pair the alignment may ask about."""
    if question.categories.get("ability") != beam.EVENT_ORDERING:
        return []
    return [(item, line) for line in prediction.split("\n") for item in question.rubric]


def order_requests(pairs: Sequence[tuple[str, str]], proto: Mapping[str, Any]) -> list[ChatRequest]:
    template = proto["equivalence_prompt"]
    return [
        ChatRequest.user(template.format(first=a, second=b), max_tokens=int(proto["max_tokens"]))
        for a, b in pairs
    ]


def record_nuggets(record: dict, question: Question, comps: Sequence[Any]) -> None:
    """``beam_nugget`` from the nugget replies, every verdict kept in the details."""
    verdicts = [beam.parse_nugget_reply(c.text) if c.ok else None for c in comps]
    nuggets = [
        {"nugget": item, "score": v, "reply": c.text, "ok": c.ok}
        for item, v, c in zip(question.rubric, verdicts, comps, strict=True)
    ]
    if not all(c.ok for c in comps):
        put(record, NUGGET_METRIC, None, KIND, nuggets=nuggets, status="judge_failed")
    elif any(v is None for v in verdicts):
        put(record, NUGGET_METRIC, None, KIND, nuggets=nuggets, status="judge_unparsed")
    else:
        score = beam.nugget_score([float(v) for v in verdicts if v is not None])
        put(record, NUGGET_METRIC, score, KIND, nuggets=nuggets, status="parsed")


def record_order(record: dict, question: Question, pairs: list, comps: Sequence[Any]) -> None:
    """``beam_event_order`` (tau_norm x F1) from the pairwise same-event verdicts."""
    if not all(c.ok for c in comps):
        put(record, ORDER_METRIC, None, KIND, status="judge_failed")
        return
    same = {pair: "yes" in c.text.lower() for pair, c in zip(pairs, comps, strict=True)}
    lines = record["prediction"].split("\n")
    result = beam.event_ordering_score(question.rubric, lines, lambda a, b: same[(a, b)])
    put(record, ORDER_METRIC, result["final_score"], KIND, **result, status="parsed")


def judge_nuggets(
    todo: Sequence[tuple[Question, dict]], proto: Mapping[str, Any], services: Any, judges: Any
) -> None:
    """Judge every rubric of ``todo`` (the answers official.py would judge) in one batch."""
    todo = [(q, r) for q, r in todo if q.rubric]
    plans = []
    for q, r in todo:
        pairs = order_pairs(q, r["prediction"])
        plans.append(
            (nugget_requests(q, r["prediction"], proto), pairs, order_requests(pairs, proto))
        )
    flat = [req for nug, _, order in plans for req in (*nug, *order)]
    comps = ask(judges.primary, flat, services, f"{proto['name']} nugget judge") if flat else []
    at = 0
    for (q, record), (nug, pairs, order) in zip(todo, plans, strict=True):
        record_nuggets(record, q, comps[at : at + len(nug)])
        at += len(nug)
        if pairs:
            record_order(record, q, pairs, comps[at : at + len(order)])
            at += len(order)
    if proto.get("audit", True) and todo:
        audit_nuggets(todo, proto, services, judges)


def canary_requests(todo: Sequence[tuple[Question, dict]], proto: Mapping[str, Any]) -> list:
    """(record, kind, requests): the first question's rubric judged against its own gold answer
    (``reference``: should be met) and against the next question's (``other_reference``: should
    not), as the main judge's canaries; one pair per episode."""
    q, record = todo[0]
    other = next((o for o, _ in todo[1:] if o.answers[0] != q.answers[0]), None)
    out = [(record, "reference", nugget_requests(q, q.answers[0], proto))]
    if other is not None:
        out.append((record, "other_reference", nugget_requests(q, other.answers[0], proto)))
    return out


def audit_nuggets(
    todo: Sequence[tuple[Question, dict]], proto: Mapping[str, Any], services: Any, judges: Any
) -> None:
    """Stage ``audit``: the canaries (one question per episode) and, with ``judge@judge2``, every
    nugget judged again by the second judge; both kept in ``beam_nugget``'s details."""
    cases = canary_requests(todo, proto)
    second = getattr(judges, "second", None)
    again = [nugget_requests(q, r["prediction"], proto) for q, r in todo] if second else []
    with services.meter.stage("audit"):
        flat = [req for _, _, reqs in cases for req in reqs]
        comps = judges.primary.complete(flat, desc="nugget canaries")
        redo = (
            second.complete([x for reqs in again for x in reqs], desc="nugget judge2")
            if second
            else []
        )
    at = 0
    for record, kind, reqs in cases:
        part, at = comps[at : at + len(reqs)], at + len(reqs)
        verdicts = [beam.parse_nugget_reply(c.text) if c.ok else None for c in part]
        record["scores"][NUGGET_METRIC]["details"].setdefault("canaries", {})[kind] = verdicts
    at = 0
    for (_, record), reqs in zip(todo, again, strict=False):  # again is empty without judge2
        part, at = redo[at : at + len(reqs)], at + len(reqs)
        record["scores"][NUGGET_METRIC]["details"]["judge2"] = [
            beam.parse_nugget_reply(c.text) if c.ok else None for c in part
        ]


def audit_summary(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics.json ``official_judge.nugget_audit``: the canaries' mean verdicts (the reference
    should score near 1, another question's near 0: its mean is the false-accept rate) and the
    agreement and kappa of the two judges over the nuggets both read."""
    from memharness.eval.metrics.stats import cohen_kappa
    from memharness.eval.record.scores import detail

    canaries: dict[str, list[float]] = {"reference": [], "other_reference": []}
    pairs: list[tuple[float, float]] = []
    for s in samples:
        for kind, verdicts in (detail(s, NUGGET_METRIC, "canaries") or {}).items():
            canaries[kind] += [v for v in verdicts if v is not None]
        nuggets = detail(s, NUGGET_METRIC, "nuggets") or []
        second = detail(s, NUGGET_METRIC, "judge2") or []
        pairs += [
            (n["score"], v)
            for n, v in zip(nuggets, second, strict=False)
            if n["score"] is not None and v is not None
        ]
    out: dict[str, Any] = {
        f"{kind}_mean": (sum(v) / len(v) if v else None) for kind, v in canaries.items()
    }
    out["canary_nuggets"] = {kind: len(v) for kind, v in canaries.items()}
    if pairs:
        a, b = zip(*pairs, strict=True)
        out["judge_vs_judge2"] = cohen_kappa([str(x) for x in a], [str(x) for x in b])
    return out
