"""MemBench's official per-question scores (``benchmark/MembenchAgent.py`` and
``benchmark/env/Membenenv.py`` of import-myself/Membench @0495679), re-implemented to give the same
numbers.

- Accuracy: the reply is read as upstream reads it and compared with ``QA.ground_truth`` by
  equality. Upstream asks for a JSON object ``{"choice": "A".."D"}`` (``response``) or for the bare
  letter with spaces and newlines removed (``response_cap``, ``remove_space_and_ent``); here a
  reply is the letter when, with spaces and newlines removed, it is one of the question's letters
  or such a JSON object. Anything else (``B. Hiking``, two letters, prose) is unparsable: it
  scores 0, as upstream's equality would, and ``membench_unparsed`` counts it. The lenient reading
  of the same reply is the harness's ``mc_accuracy``.
- Recall: ``get_recall`` is the share of the distinct target steps among the retrieved step ids;
  the loader makes every target step one gold evidence unit, so ``evidence_recall_at_10`` (the
  top 10, RetrievalMemory's cap) and ``evidence_recall`` (everything retrieved: FullMemory,
  RecentMemory) are that number for any memory (eval/run/evidence.py).
- Capacity: with ``dataset.loader.capacity_bucket`` the loader asks each question as ``step_cap``
  does, labelled with the tokens seen; ``membench_accuracy`` per ``membench_tokens`` bucket (the
  run's category breakdowns) is the curve. Temporal efficiency: the measured ``ingest_s`` and
  ``search_latency_s`` (upstream's write and read times).

Questions of other datasets carry no ``membench_level`` category and get no value.
"""

from __future__ import annotations

import json

from memharness.memsys.types import Question

LEVEL_KEY = "membench_level"  # set by data_prep/membench.py on every question
LETTERS = "ABCD"


def read_letter(reply: str, letters: str = LETTERS) -> str | None:
    """The option letter of a reply as upstream reads it; None when it is not one."""
    bare = reply.replace(" ", "").replace("\n", "")
    if bare in letters and len(bare) == 1:
        return bare
    try:
        obj = json.loads(bare)
    except ValueError:
        return None
    choice = obj.get("choice") if isinstance(obj, dict) else None
    return choice if isinstance(choice, str) and len(choice) == 1 and choice in letters else None


def _applies(question: Question) -> bool:
    return LEVEL_KEY in question.categories and question.gold_option is not None


def membench_accuracy(prediction: str, question: Question) -> float | None:
    """1 when the reply is the gold letter (read as upstream reads it), else 0."""
    if not _applies(question):
        return None
    letters = LETTERS[: len(question.options or ())]
    return float(read_letter(prediction, letters) == letters[question.gold_option])


def membench_unparsed(prediction: str, question: Question) -> float | None:
    """1 when the reply names no option as upstream reads it (scored 0 by membench_accuracy)."""
    if not _applies(question):
        return None
    return float(read_letter(prediction, LETTERS[: len(question.options or ())]) is None)
