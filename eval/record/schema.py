"""The run record: what a run folder's ``samples.jsonl`` lines and ``metrics.json`` hold.

Every writer validates against these models before a byte is written, and every reader
(reports, browser, collect, paper tables, golden, figures) opens a run through
``eval.record.read``, which checks the folder's ``format`` first. A folder written in another
format is refused in one line naming both formats: re-run it (the call cache makes that cheap).
``docs/run-format.md`` is generated from these models and the metric registry
(``python -m memharness.eval.metrics.run_format``) and a test keeps it in step.

Sections that belong to one part of the harness (a judge audit, the call ledger, a memory's own
statistics) are typed here as JSON objects; the modules that write them document their fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from memharness.memsys.services.formats import markdown_cell
from pydantic import BaseModel, ConfigDict, Field, ValidationError

FORMAT = 2  # 1 = runs before the record had a version (no "format" key in metrics.json)

Status = Literal[
    "pending",
    "scored",
    "build_failed",
    "retrieve_failed",
    "answer_failed",
    "deadline_exceeded",
    "budget_exceeded",
]
JSON = dict[str, Any]


class ReportError(Exception):
    """No usable run folder, or a run folder missing a file or field a reader needs."""


class RunFormatError(ReportError):
    """A run folder written in a format this version does not read."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Sample(_Record):
    """One line of ``samples.jsonl``: one question, what was retrieved, the answer and its scores."""

    episode_id: str = Field(description="the episode (conversation, document, article set)")
    question_id: str = Field(description="the dataset's question id")
    question: str = Field(description="the question text")
    references: list[str] = Field(description="the reference answers")
    options: list[str] | None = Field(description="multiple-choice options, or null")
    gold_option: int | None = Field(description="index of the correct option, or null")
    categories: JSON = Field(description="the dataset's question categories (type, hops, ...)")
    position: int | None = Field(description="units of the episode inserted before the question")
    evidence_position: int | None = Field(description="position of the latest gold evidence")
    evidence_sources: list[str] = Field(description="source ids of the gold evidence")
    status: Status = Field(description="scored, or the stage that failed")
    metrics: dict[str, float | int | None] = Field(
        description="this question's metric values (null = the metric could not be computed)"
    )
    error: str | None = Field(None, description="why the question failed (type: message)")
    retrieved: list[JSON] | None = Field(
        None, description="retrieved items: text, score, level, node id, source_unit_ids"
    )
    context_tokens: int | None = Field(None, description="tokens of the retrieved context")
    answered_by: str | None = Field(None, description='"memory" when the memory answered itself')
    prompt: str | None = Field(None, description="the answer prompt sent")
    prediction: str | None = Field(None, description="the answer, stripped")
    answer_cached: bool | None = Field(None, description="the answer came from the call cache")
    answer_empty: bool | None = Field(None, description="the answer was empty (judged 0)")
    prompt_tokens_cut: int | None = Field(
        None, description="answer prompt tokens the backend cut to fit the model's context"
    )
    mode: Literal["generative", "multiple_choice", "claim_verification"] | None = Field(
        None, description="answer mode"
    )
    predicted_option: int | None = Field(None, description="the option letter chosen, as index")
    mc_status: str | None = Field(None, description="parsed | mc_unparsed")
    predicted_label: str | None = Field(
        None,
        description="claim verification: the verdict read from the answer (faithful | unfaithful)",
    )
    claim_status: str | None = Field(
        None, description="claim verification: parsed | claim_unparsed"
    )
    judge_reply: str | None = Field(None, description="the judge's raw reply")
    judge_status: str | None = Field(
        None, description="parsed | judge_unparsed | judge_failed | answer_empty"
    )
    judge_error: str | None = Field(None, description="why the judge call failed")
    judge_injection: list[str] | None = Field(
        None,
        description="verdict-like text in the prediction (instruction, verdict_arrow, field_label, "
        "bare_verdict); the judge saw it masked; counted in counts.judge_injection",
    )
    judge_lenient_status: str | None = Field(None, description="the lenient judge's status")
    judge2_status: str | None = Field(None, description="the second judge's status")
    official_judge_reply: str | None = Field(
        None,
        description="the benchmark's own judge's raw reply (judge.official); with per_reference "
        "the replies to each reference joined by ' | '",
    )
    official_judge_status: str | None = Field(
        None,
        description="parsed | unclear (exact_yes: neither yes nor no, scored 0) | judge_failed | "
        "answer_empty (judge.official)",
    )
    closed_book: JSON | None = Field(None, description="the same question answered with no memory")
    degraded: dict[str, int] | None = Field(
        None, description="LLM outputs the memory was built without, by kind (counted)"
    )
    partial: JSON | None = Field(
        None, description="a memory that answers itself: the parts that failed (GraphRAG global)"
    )
    agent_steps: list[JSON] | None = Field(
        None,
        description="a function-calling memory (MemGPT): each step's function and status (ok, "
        "failed, malformed:<kind>, call_failed), heartbeat, and forced: true on a send_message "
        "the loop's last step was restricted to (memory.final_send); a memory function's step "
        "also its arguments and the first line of its result (result_head: 'No results found.' "
        "or 'Showing 5 of 12 ...')",
    )


class Metrics(_Record):
    """``metrics.json``: the run's identity, aggregates, judges, data, time, calls and outcome."""

    format: Literal[2] = Field(description="the run-record format; readers refuse any other")
    memory: str = Field(description="memory system config name")
    oracle: bool | None = Field(
        None,
        description="true: the memory is an oracle (it reads the gold evidence); reports label "
        "its rows and never rank them",
    )
    dataset: str = Field(description="dataset config name")
    seed: int = Field(description="the run's one seed")
    overrides: list[str] = Field(description="command-line overrides (secrets masked)")
    llm: str = Field(description="model id that built and answered")
    embedder: str = Field(description="embedding model id")
    product: JSON | None = Field(
        None,
        description="a memory product's worker: product, version, pinned packages, clock "
        '("data", or "wall": it reads the wall clock into its prompts), python',
    )
    counts: JSON = Field(
        description="questions, scored, each failure status, and judge_injection (answers "
        "flagged as verdict-like)"
    )
    metrics: dict[str, JSON] = Field(
        description="per metric: mean, ci_low, ci_high, n (registry in eval/metrics)"
    )
    breakdowns: JSON = Field(description="metrics by question category and position bucket")
    metrics_apart: dict[str, JSON] | None = Field(
        None,
        description="questions reported apart, by their 'apart' category (LoCoMo's adversarial "
        "category): n and per metric mean, ci_low, ci_high, n; never in metrics",
    )
    judge: str | None = Field(description="the judge's model id (null: no judge)")
    judge_config: str | None = Field(None, description="the judge's config name")
    judge2: str | None = Field(None, description="the second judge's model id, when configured")
    judge2_config: str | None = Field(None, description="the second judge's config name")
    judge_reliability: JSON | None = Field(None, description="the judge audit: canaries, kappa")
    snapshots: JSON | None = Field(None, description="memories loaded, built and saved")
    official_judge: JSON | None = Field(
        None,
        description="the benchmark's own judge (judge.official, eval/judge/official.py): protocol, "
        "metric (official_judge | acc_l), model, verdict rule, per-category, task-averaged, "
        "overall and abstention accuracy, unclear replies",
    )
    data: JSON = Field(description="dataset name, revision, files, checksum, subset")
    time: JSON = Field(
        description="wall and backend seconds; the episodes in flight (episodes_in_flight)"
    )
    calls: JSON = Field(
        description="the spend ledger: what was sent to a backend, per stage and total "
        "(memsys/services/meter.py StageCounts; prompt_cuts, prompt_tokens_cut: calls whose "
        "prompt the backend cut to fit its context; embed_invalid: embedding replies refused "
        "for NaN/inf values, a wrong dimension or count)"
    )
    intrinsic: JSON = Field(
        description="the method's cost, cached or not, per stage and total (IntrinsicCounts; "
        "prompt_cuts, prompt_tokens_cut: replies used whose prompt was cut, cached ones included)"
    )
    env: JSON = Field(description="package versions, git SHA, platform")
    outcome: JSON = Field(
        description="exit code, failed fraction, problems; nonfinite_nulled: NaN or infinite "
        "numbers written as null (samples.jsonl, memory_stats.json, metrics.json)"
    )


def check_format(doc: JSON, where: str | Path) -> None:
    """Refuse, in one line, a ``metrics.json`` of another format."""
    found = doc.get("format", 1)
    if found != FORMAT:
        raise RunFormatError(
            f"{where}: run format {found}; this memharness reads run format {FORMAT} only: "
            "re-run it (with the same call cache a re-run makes no new backend calls)"
        )


def validated(model: type[BaseModel], doc: JSON, where: str | Path) -> JSON:
    """``doc`` unchanged when it matches ``model``; otherwise a one-line ``RunFormatError``."""
    try:
        model.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(map(str, first["loc"]))
        raise RunFormatError(
            f"{where}: not a run-format-{FORMAT} {model.__name__.lower()}: {loc}: {first['msg']}"
            f" ({err.error_count()} problem(s))"
        ) from None
    return doc


def markdown() -> str:
    """Both records' fields, from the models (``docs/run-format.md`` adds the metric keys:
    ``eval/metrics/run_format.py``)."""
    out = [
        "# The run folder format",
        "",
        f"Format {FORMAT}. Generated from `eval/record/schema.py` and `eval/metrics/registry.py` by "
        "`python -m memharness.eval.metrics.run_format > docs/run-format.md`; a test keeps the two "
        "equal. Readers refuse a run folder of another format in one line.",
        "",
        "A run folder holds `config.yaml` (the resolved config), `samples.jsonl` (one `Sample` per "
        "line, in episode order), `metrics.json` (one `Metrics`), `memory_stats.json` (each "
        "episode's memory statistics, written by its memory system), `memory/<episode>/` "
        "(saved memories, when snapshots are on) and, until the run ends, `INCOMPLETE.json`.",
    ]
    for model, file in ((Sample, "samples.jsonl (one per line)"), (Metrics, "metrics.json")):
        out += ["", f"## `{model.__name__}`: {file}", "", (model.__doc__ or "").strip(), ""]
        out += ["| field | type | required | meaning |", "|---|---|---|---|"]
        for name, f in model.model_fields.items():
            kind = markdown_cell(_type_name(f.annotation))
            out.append(
                f"| `{name}` | `{kind}` | {'yes' if f.is_required() else 'no'} | {f.description} |"
            )
    return "\n".join(out) + "\n"


def _type_name(annotation: Any) -> str:
    return (
        annotation.__name__
        if isinstance(annotation, type)
        else str(annotation).replace("typing.", "")
    )
