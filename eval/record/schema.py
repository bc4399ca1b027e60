"""The run record: what a run folder's ``samples.jsonl`` lines and ``metrics.json`` hold.

Every writer validates against these models before a byte is written, and every reader
(reports, browser, collect, paper tables, golden, figures) opens a run through
``eval.record.read``, which checks the folder's ``format`` first. A folder written in another
format is refused in one line naming both formats: ``memharness rescore OLD NEW`` converts a
format-2 folder; older ones are re-run (the call cache makes that cheap).
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

FORMAT = 3  # 1: no "format" key in metrics.json; 2: flat per-sample scores (``memharness rescore``)

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


class Score(_Record):
    """One metric's value on one question, as its scorer wrote it (``eval/metrics/scorers.py``)."""

    value: float | int | None = Field(
        description="the metric's value (null = the scorer ran but could not give one: a judge "
        "reply that did not parse, a failed call)"
    )
    kind: str = Field(
        description="the scorer that filled it: lexical | choice | claim | judge | official_judge "
        "| judge_audit | evidence | closed_book | latency | forgetting | forget_judge (the registry "
        "names each metric's scorer)"
    )
    details: JSON = Field(
        default_factory=dict,
        description="the scorer's own fields: judge: reply, status (parsed | judge_unparsed | "
        "judge_failed | answer_empty), error, injection (verdict-like text the judge saw masked); "
        "choice: predicted_option, status (parsed | mc_unparsed); claim: predicted_label, status "
        "(parsed | claim_unparsed); official_judge: reply (per_reference: ' | '-joined), status "
        "(parsed | unclear | judge_failed | answer_empty); judge_audit: status; closed_book: "
        "prediction, status, criterion, judge_status, error; evidence (on evidence_recall): "
        "gold_items (indices of the retrieved items covering gold evidence), gold_units (the gold "
        "unit ids they cover); forget_judge: reply, status, error",
    )


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
    asked_at: str | None = Field(
        None, description="the date the data says the question is asked (absent: none given)"
    )
    status: Status = Field(description="scored, or the stage that failed")
    scores: dict[str, Score] = Field(
        description="this question's scores by metric key (registry in eval/metrics); a metric "
        "its scorer did not apply to the question is absent"
    )
    memory: JSON = Field(
        default_factory=dict,
        description='what the memory system flags about this question: answered_by ("memory" '
        "when it answered itself), degraded (LLM outputs it was built without, by kind; counted), "
        "partial (a memory that answers itself: the parts that failed, GraphRAG global), "
        "agent_steps (a function-calling memory, MemGPT: each step's function and status, "
        "heartbeat, forced, arguments, result_head)",
    )
    error: str | None = Field(None, description="why the question failed (type: message)")
    retrieved: list[JSON] | None = Field(
        None, description="retrieved items: text, score, level, node id, source_unit_ids"
    )
    context_tokens: int | None = Field(None, description="tokens of the retrieved context")
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


class Metrics(_Record):
    """``metrics.json``: the run's identity, aggregates, judges, data, time, calls and outcome."""

    format: Literal[3] = Field(description="the run-record format; readers refuse any other")
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
        description="per metric: mean, ci_low, ci_high, n (registry in eval/metrics); latency "
        "metrics add p50 and p95; ingestion metrics are per episode (n = episodes)"
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
    rescored_from: JSON | None = Field(
        None,
        description="``memharness rescore``: the format-2 folder this one was rebuilt from, its "
        "format, the call cache read and the backend calls made (0)",
    )
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
            + (
                "convert it with `memharness rescore OLD NEW` (through the call cache, no backend "
                "call)"
                if found == 2
                else "re-run it (with the same call cache a re-run makes no new backend calls)"
            )
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
    for model, file in (
        (Sample, "samples.jsonl (one per line)"),
        (Score, "each value of `Sample.scores`"),
        (Metrics, "metrics.json"),
    ):
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
