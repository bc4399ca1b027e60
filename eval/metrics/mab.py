"""MemoryAgentBench's official per-question scores (``utils/eval_other_utils.py`` of
HUST-AI-HYZ/MemoryAgentBench @455306d), re-implemented to give the same numbers.

- Normalisation: lower case, punctuation removed, the words a / an / the removed, whitespace
  collapsed. Exact match compares the normalised strings; substring exact match asks whether the
  normalised gold is inside the normalised answer; token F1 is 0 when either side is (only) one of
  yes / no / noanswer and they differ. Every score is the best over the accepted answers.
- ROUGE-L and ROUGE-Lsum (rouge-score, Porter stemmer): the best F1 and the best recall.
- The answer is also "parsed": the text after the first ``Answer:`` on its line, else the first
  line. Which text is scored depends on the sub-dataset (its ``metadata.source``):
  ``icl*`` the parsed text only; ``eventqa*`` the parsed text, plus ``mab_recall`` = 1 when every
  gold element is inside the raw answer (case-insensitive); ``ruler_niah*`` only ``mab_recall`` =
  share of gold elements inside the raw answer; ``*choice_eng*`` the best of raw and parsed, with
  substring match = the gold option text (the second answer) inside the raw answer; every other
  source the best of raw and parsed, metric by metric. ``recsys*`` needs the ReDial entity map,
  which the Hub rows do not carry: it gets no score here.
- ``mab_accuracy`` is the benchmark's headline per sub-dataset (its README table): substring exact
  match for accurate retrieval and conflict resolution, exact match for the ICL sets and
  DetectiveQA, none for LongMemEval and InfBench-Sum (LLM-judged upstream: use ``judge``).

Questions of other datasets carry no ``mab_source`` category and get no value.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from memharness.eval.metrics.lexical import MetricError
from memharness.eval.metrics.lexical import normalize_answer as normalize  # SQuAD's, as upstream
from memharness.memsys.types import Question

SOURCE_KEY = "mab_source"  # set by data_prep/mab.py
_SPECIAL = {"yes", "no", "noanswer"}
_ANSWER_LINE = re.compile(r"(?:Answer:)(.*)(?:\n|$)", re.IGNORECASE)
_FIRST_LINE = re.compile(r"(?:^)(.*)(?:\n|$)")


def f1(prediction: str, gold: str) -> float:
    """Token F1 of the normalised texts, with upstream's yes / no / noanswer rule."""
    pred, ref = normalize(prediction), normalize(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    common = sum((Counter(pred.split()) & Counter(ref.split())).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred.split()), common / len(ref.split())
    return 2 * precision * recall / (precision + recall)


def parse_answer(output: str) -> str:
    """The text after ``Answer:`` on its line, else the first line (stripped)."""
    for pattern in (_ANSWER_LINE, _FIRST_LINE):
        match = pattern.search(output)
        if match:
            return re.sub(r"^Answer:", "", match[1].strip(), flags=re.IGNORECASE).strip()
    return ""


@lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], use_stemmer=True)


def answer_metrics(prediction: str, golds: tuple[str, ...]) -> dict[str, float]:
    """Upstream's ``calculate_metrics``: EM, F1, substring EM and ROUGE-L / -Lsum, best over golds."""
    if not golds:
        raise MetricError("a MemoryAgentBench question has no accepted answer")
    out = {
        "exact_match": max(float(normalize(prediction) == normalize(g)) for g in golds),
        "f1": max(f1(prediction, g) for g in golds),
        "substring_exact_match": max(float(normalize(g) in normalize(prediction)) for g in golds),
    }
    rouge = [_rouge().score(target=g, prediction=prediction) for g in golds]
    for kind in ("rougeL", "rougeLsum"):
        out[f"{kind}_f1"] = max(s[kind].fmeasure for s in rouge)
        out[f"{kind}_recall"] = max(s[kind].recall for s in rouge)
    return out


def _best_of_raw_and_parsed(output: str, golds: tuple[str, ...]) -> dict[str, float]:
    raw, parsed = answer_metrics(output, golds), answer_metrics(parse_answer(output), golds)
    return {k: max(v, parsed[k]) for k, v in raw.items()}


def _share_inside(output: str, golds: tuple[str, ...]) -> float:
    return sum(g.lower() in output.lower() for g in golds) / len(golds)


@lru_cache(maxsize=4096)
def official_scores(output: str, source: str, golds: tuple[str, ...]) -> dict[str, float]:
    """Every score upstream's ``post_process`` gives one answer of sub-dataset ``source``."""
    if "icl" in source:
        return answer_metrics(parse_answer(output), golds)
    if "eventqa" in source:
        scores = answer_metrics(parse_answer(output), golds)
        return {**scores, "recall": float(_share_inside(output, golds) == 1)}
    if "choice_eng" in source:
        scores = _best_of_raw_and_parsed(output, golds)
        hit = len(golds) > 1 and golds[1].lower() in output.lower()
        scores["substring_exact_match"] = float(hit)
        scores["exact_match"] = 1.0 if hit else scores["exact_match"]
        return scores
    if "ruler_niah" in source:
        return {"recall": _share_inside(output, golds)}
    if "recsys" in source:
        return {}
    return _best_of_raw_and_parsed(output, golds)


HEADLINE = (  # (source marker, the README's accuracy field); first match wins
    ("icl", "exact_match"),
    ("detective", "exact_match"),
    ("eventqa", "substring_exact_match"),
    ("ruler_qa", "substring_exact_match"),
    ("ruler_niah", "recall"),
    ("factconsolidation", "substring_exact_match"),
)


def headline_field(source: str) -> str | None:
    """The score upstream reports as the sub-dataset's accuracy (None: judged, or not scored)."""
    return next((field for marker, field in HEADLINE if marker in source), None)


def _score(field: str | None):
    def score(prediction: str, question: Question) -> float | None:
        source = question.categories.get(SOURCE_KEY)
        if not source:
            return None
        scores = official_scores(prediction, source, tuple(question.answers))
        key = headline_field(source) if field is None else field
        return scores.get(key) if key else None

    return score


mab_accuracy = _score(None)
mab_substring_exact_match = _score("substring_exact_match")
mab_exact_match = _score("exact_match")
mab_f1 = _score("f1")
mab_rouge_l_f1 = _score("rougeL_f1")
mab_rouge_lsum_f1 = _score("rougeLsum_f1")
mab_recall = _score("recall")
