"""The run's settings, checked before anything loads: one schema per config group.

``validate_config(cfg)`` resolves the composed config and checks every group against its schema
(``RunSettings`` below). Sections with a ``_target_`` (``memory``, ``dataset.loader``,
``llm.backend``, ``embedder.backend``) are checked against the declarations of the class or
function they name (``memsys.settings``), so a new memory system, loader or backend is covered
without any code here. Every problem is one line naming the full key, the bad value and what is
allowed; all of them are raised together as one ``ConfigError``.

A new top-level config group is declared with ``register_group(name, schema)``; a group folder
under ``conf/`` without a schema is reported as not validated (a warning), never silently.
"""

import logging
import re
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from memharness.data_prep.msc_e import GeneratorSettings
from memharness.eval.metrics import registry
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import ConfigError
from memharness.memsys.settings import SERVICES, Check, Instantiated, NonEmpty, Placeholders, Range
from memharness.memsys.settings_check import check_mapping, schema_fields
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

log = logging.getLogger("memharness")

Target = Annotated[dict[str, Any], Instantiated()]
Positive = Annotated[int, Range(1)]
Seed = Annotated[int, Range(0)]


def _known_encoding(name: Any) -> bool:
    import tiktoken

    return isinstance(name, str) and name in tiktoken.list_encoding_names()


def _increasing(values: Any) -> bool:
    return bool(values) and all(a < b for a, b in zip(values, values[1:], strict=False))


class CacheSettings(TypedDict):
    enabled: bool
    path: Annotated[str, NonEmpty()]
    mode: NotRequired[
        Literal["shared", "per_job"]
    ]  # per_job: a cache per run folder, merged afterwards


class RunControlSettings(TypedDict):
    """``run.*``: how the episodes of a run are scheduled."""

    episodes_in_flight: Positive | None  # episodes evaluated at once (1 = sequential; null = auto)
    switch_interval_s: NotRequired[
        Annotated[float, Range(0, lo_open=True)] | None
    ]  # GIL switch interval
    cpu_workers: NotRequired[Positive | None]  # CPU-bound steps' process pool (null = every core)


class SnapshotSettings(TypedDict):
    """``snapshots.*``: built memories reused across runs with identical construction (eval/run/snapshots.py)."""

    enabled: bool
    path: Annotated[str, NonEmpty()] | None  # null = beside cache.path


class BudgetSettings(TypedDict):
    """``budget.*``: stop the run once it has spent this much (null = no limit)."""

    usd: Annotated[float, Range(0, lo_open=True)] | None
    calls: Positive | None


class EstimateSettings(TypedDict):
    """``estimate.*``: how ``dry_run=true`` estimates (eval/run/estimate.py)."""

    episodes: Positive | None  # a seeded pilot of this many episodes, extrapolated; null = all
    completion_fraction: Annotated[float, Range(0, 1, lo_open=True)]
    embedder: NotRequired[
        Literal["lexical", "configured"]
    ]  # stand-in vectors, or the run's own embedder


class PageWords(TypedDict):
    min: Positive
    max: Positive


class ForgetSuiteSettings(TypedDict, total=False):
    """``dataset.forget``: the generated forgetting suite (data_prep/forgetting.py)."""

    facts: Positive  # questions per episode made into a deletion or a correction
    mode: Literal["deletion", "correction", "mixed"]  # mixed alternates, deletion first
    position: Literal["after_evidence", "end"]  # where the request / correction goes
    seed: Seed
    method: Literal["own", "rebuild"]  # the memory's own forget, or the reference rebuild
    request_text: Annotated[str, NonEmpty()]
    correction_text: Annotated[str, Placeholders("question", "value")]
    abstain_answer: Annotated[str, NonEmpty()]
    replacements: list[Annotated[str, NonEmpty()]]


class DatasetSettings(TypedDict):
    name: Annotated[str, NonEmpty()]
    loader: Target
    limit: Positive | None
    stratify_by: str | None
    seed: Seed
    budget_tokens: Positive
    top_k: Positive
    insert_batch_size: NotRequired[
        Positive | None
    ]  # cut each insert event into batches of this many units
    generator: NotRequired[GeneratorSettings]  # msc_e: the generator's settings
    page_words: NotRequired[
        PageWords
    ]  # a long text's page bounds for paginating memories (ReadAgent)

    forget: NotRequired[ForgetSuiteSettings | None]  # the forgetting suite (docs/forgetting.md)


class PriceSettings(TypedDict, total=False):
    prompt: Annotated[float, Range(0)]
    completion: Annotated[float, Range(0)]


class LLMSettings(TypedDict):
    backend: Target
    max_in_flight: Positive
    retry: NotRequired[RetryPolicy]
    prices: NotRequired[dict[str, PriceSettings] | None]


class EmbedderSettings(TypedDict):
    backend: Target
    batch_size: Positive


class AnswerSettings(TypedDict):
    max_tokens: Positive
    mode: Literal["auto", "generative", "multiple_choice", "claim_verification"]
    prompt: Annotated[str, Placeholders("context", "question")]
    mc_prompt: Annotated[str, Placeholders("context", "question", "options")]
    mc_constrained: NotRequired[bool]
    mc_max_tokens: NotRequired[Positive]
    claim_prompt: NotRequired[Annotated[str, Placeholders("context", "claim")]]
    claim_max_tokens: NotRequired[Positive]
    claim_unparsed: NotRequired[
        Literal["other_label", "neither"]
    ]  # F1_P / F1_N count of a non-verdict
    now_line: NotRequired[
        Annotated[str, Placeholders("now")] | None
    ]  # the data's date of a question
    question_hints: NotRequired[
        dict[str, dict[str, str]] | None
    ]  # category name -> value -> instruction appended to the question
    name: NotRequired[str]  # an answer-prompt variant's name (conf/answer_prompt/)
    final_marker: NotRequired[str | None]  # a chain-of-thought reply's answer line starts with this


class JudgeSettings(TypedDict):
    enabled: bool
    max_tokens: Positive
    calibration_max: Annotated[int, Range(0)]
    quote: NotRequired[bool]  # wrap predictions in double quotes too (eval/judge/injection.py)
    prompt: Annotated[str, Placeholders("question", "reference", "prediction")]


class EvidenceSettings(TypedDict):
    k: Annotated[list[Positive], NonEmpty()]
    source_k: NotRequired[
        list[Positive]
    ]  # source-level recall_all / ndcg_any at these k ([] = off)


class ClosedBookSettings(TypedDict):
    enabled: bool
    max_tokens: Positive
    prompt: Annotated[str, Placeholders("question")]
    mc_prompt: Annotated[str, Placeholders("question", "options")]


class JudgeAuditSettings(TypedDict):
    lenient: bool
    canaries: Annotated[int, Range(0)]
    wrong_answers: bool
    wrong_max_tokens: Positive
    wrong_max_f1: Annotated[float, Range(0, 1)]
    lenient_prompt: Annotated[str, Placeholders("question", "reference", "prediction")]
    wrong_prompt: Annotated[str, Placeholders("question", "reference")]


class ForgetJudgeSettings(TypedDict):
    """``eval.forget_judge``: the judged readings of the forgetting metrics (eval/judge/forgetting.py)."""

    max_tokens: Positive
    quote: NotRequired[bool]  # wrap predictions in double quotes too (eval/judge/injection.py)
    leak_prompt: Annotated[str, Placeholders("question", "reference", "prediction")]
    abstain_prompt: Annotated[str, Placeholders("question", "prediction")]


class BootstrapSettings(TypedDict):
    resamples: Positive
    confidence: Annotated[float, Range(0, 1, lo_open=True, hi_open=True)]


Metric = Literal[registry.names(selectable=True)]  # the metrics eval.metrics may list


class EvalSettings(TypedDict):
    answer: AnswerSettings
    judge: JudgeSettings
    metrics: Annotated[list[Metric], NonEmpty()]
    bootstrap: BootstrapSettings
    position_buckets: Annotated[
        list[Annotated[int, Range(0)]], Check(_increasing, "a list of increasing integers")
    ]
    max_failed_fraction: NotRequired[Annotated[float, Range(0, 1)]]
    deadline_s: NotRequired[Annotated[float, Range(0, lo_open=True)] | None]
    evidence: NotRequired[EvidenceSettings]
    closed_book: NotRequired[ClosedBookSettings]
    judge_audit: NotRequired[JudgeAuditSettings]
    forget_judge: NotRequired[ForgetJudgeSettings]


class OfficialJudgeSettings(TypedDict):
    """``judge.official``: a benchmark's own judge protocol (eval/judge/official.py)."""

    name: Annotated[str, NonEmpty()]
    category: Annotated[str, NonEmpty()] | None  # the category that picks the prompt; null: default
    abstention_id_contains: str | None  # question ids containing this get the abstention prompt
    max_tokens: Positive
    constrained: bool
    metric: NotRequired[
        Literal["official_judge", "acc_l", "beam_nugget"]
    ]  # the metric the verdicts are written under
    verdict: NotRequired[
        Literal["contains_yes", "exact_yes", "rubric_score"]
    ]  # the benchmark's verdict rule
    per_reference: NotRequired[bool]  # judge each reference apart and keep the best verdict
    per_nugget: NotRequired[bool]  # BEAM: judge each rubric item apart (eval/judge/nuggets.py)
    audit: NotRequired[bool]  # BEAM: nugget canaries per episode, and judge2 on every nugget
    equivalence_prompt: NotRequired[
        Annotated[str, Placeholders("first", "second")]
    ]  # BEAM event ordering: are two snippets the same event
    prompts: Annotated[
        dict[str, Annotated[str, Placeholders("question", "reference", "prediction")]], NonEmpty()
    ]
    abstention_prompt: Annotated[str, Placeholders("question", "reference", "prediction")] | None


class JudgeModelSettings(TypedDict):
    """A judge= / judge2= section (conf/judge/): an llm/ config plus its name; judge2=none has no backend."""

    name: Annotated[str, NonEmpty()]
    backend: Annotated[dict[str, Any] | None, Instantiated()]
    max_in_flight: NotRequired[Positive]
    retry: NotRequired[RetryPolicy]
    prices: NotRequired[dict[str, PriceSettings] | None]
    official: NotRequired[OfficialJudgeSettings]  # a benchmark's own judge (judge=longmemeval)


# judge2=<name> sets a plain value instead of choosing a file of conf/judge/: say how to choose one
SecondJudge = (
    JudgeModelSettings
    | Annotated[
        str,
        Check(lambda _: False, "a judge chosen with judge@judge2=<name> (a file in conf/judge/)"),
    ]
)


class LoggerSettings(TypedDict):
    name: Literal["none", "csv", "mlflow", "wandb"]
    path: NotRequired[Annotated[str, NonEmpty()]]  # csv
    tracking_uri: NotRequired[Annotated[str, NonEmpty()]]  # mlflow
    experiment: NotRequired[Annotated[str, NonEmpty()]]  # mlflow
    project: NotRequired[Annotated[str, NonEmpty()]]  # wandb
    entity: NotRequired[str | None]  # wandb
    mode: NotRequired[Literal["online", "offline"]]  # wandb


class RunSettings(TypedDict):
    memory: Annotated[
        dict[str, Any],
        Instantiated(services=SERVICES, extra=(("name", Annotated[str, NonEmpty()], True),)),
    ]
    dataset: DatasetSettings
    llm: LLMSettings
    embedder: EmbedderSettings
    eval: EvalSettings
    seed: Seed
    tokenizer: Annotated[
        str, Check(_known_encoding, "a tiktoken encoding name such as cl100k_base")
    ]
    progress: bool
    progress_interval_s: Annotated[float, Range(0)]
    skip_done: bool
    sweep_only: bool
    data_dir: Annotated[str, NonEmpty()]
    cache: CacheSettings
    run: NotRequired[RunControlSettings]
    snapshots: NotRequired[SnapshotSettings]
    budget: NotRequired[BudgetSettings]
    dry_run: NotRequired[bool]
    estimate: NotRequired[EstimateSettings]
    logger: LoggerSettings
    judge: NotRequired[JudgeModelSettings]
    judge2: NotRequired[SecondJudge]
    # An experiment's rows that are not a cross product of settings (experiment=cam_table3): the row
    # run now (swept with -m) and the named settings each row stands for, interpolated into the config
    # (memory.traversal: ${variants.${variant}.traversal}). Recorded in config.yaml like any setting.
    variant: NotRequired[Annotated[str, NonEmpty()] | None]
    variants: NotRequired[dict[str, dict[str, Any]]]


_EXTRA_GROUPS: dict[str, tuple[Any, bool]] = {}


def register_group(name: str, schema: Any, required: bool = False) -> None:
    """Declare the schema of a new top-level config group (a TypedDict, a dataclass or a hint)."""
    _EXTRA_GROUPS[name] = (schema, required)


def run_schema() -> dict[str, tuple[Any, bool]]:
    """Top-level key -> (hint, required): RunSettings plus registered groups."""
    return {**schema_fields(RunSettings), **_EXTRA_GROUPS}


def config_groups() -> set[str]:
    """The config group folders shipped in ``memharness.conf``."""
    import memharness.conf

    return {
        p.name
        for p in Path(memharness.conf.__file__).parent.iterdir()
        if p.is_dir() and any(p.glob("*.yaml"))
    }


def resolve(cfg: DictConfig | dict) -> dict[str, Any]:
    """The config as plain data with interpolations resolved; a broken interpolation names its key."""
    if not isinstance(cfg, DictConfig):
        return dict(cfg)
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", None) or "config"
        reason = str(err).splitlines()[0]
        raise ConfigError(f"{key}: cannot resolve the value ({reason})") from None
    plain.pop("hydra", None)
    return plain


def config_problems(cfg: DictConfig | dict) -> list[str]:
    """Every problem of the config, one line each (empty when it is valid).

    A key that only repeats another by interpolation (``memory.top_k: ${dataset.top_k}``) is not
    reported again when its source is; otherwise its line says where the value came from."""
    values = resolve(cfg)
    schema = run_schema()
    unvalidated = sorted(k for k in values if k not in schema and k in config_groups())
    for name in unvalidated:
        log.warning(
            "config group %s has no settings schema (eval.validate.register_group); not validated",
            name,
        )
    problems = check_mapping({k: v for k, v in values.items() if k not in unvalidated}, schema, "")
    links = interpolations(cfg) if isinstance(cfg, DictConfig) else {}
    out = []
    for line in problems:
        target = next((t for t in links if line.startswith((t + "=", t + ":"))), None)
        source = links.get(target)
        if source is not None and any(p.startswith((source + "=", source + ":")) for p in problems):
            continue
        out.append(f"{line} (the value comes from {source})" if source else line)
    return out or path_problems(values) or context_problems(values)


def path_problems(values: dict[str, Any]) -> list[str]:
    """Folders the run writes into that name an existing file (each save would fail, one warning at a
    time, and every later run would rebuild)."""
    snapshots = values.get("snapshots") or {}
    path = snapshots.get("path")
    if snapshots.get("enabled", True) and path and Path(str(path)).is_file():
        return [f"snapshots.path={path}: is a file; name a folder (or null: beside cache.path)"]
    return []


CONTEXT_SPARE = 64  # tokens the llama.cpp backend keeps free besides the output (backends/local.py)


def context_problems(values: dict[str, Any]) -> list[str]:
    """A memory's prompts that cannot fit a backend with a fixed context (``llm.backend.n_ctx``),
    one line each naming the settings to change. A memory declares its longest prompts with a
    classmethod ``prompt_needs(memory settings, dataset settings, count)`` yielding (call kind, the
    settings that size it, prompt tokens, output tokens); a backend without ``n_ctx`` is not checked."""
    from memharness.memsys.services.tokens import get_tokenizer
    from memharness.memsys.settings_check import locate

    n_ctx = ((values.get("llm") or {}).get("backend") or {}).get("n_ctx")
    memory = values.get("memory") or {}
    if not isinstance(n_ctx, int) or not isinstance(memory.get("_target_"), str):
        return []
    needs = getattr(locate(memory["_target_"]), "prompt_needs", None)
    if not callable(needs):
        return []
    count = get_tokenizer(values.get("tokenizer", "cl100k_base")).count
    out = []
    for what, keys, prompt, output in needs(memory, values.get("dataset") or {}, count):
        need = prompt + output + CONTEXT_SPARE
        if need > n_ctx:
            out.append(
                f"llm.backend.n_ctx={n_ctx}: {memory.get('name', 'the memory')}'s {what} need about "
                f"{need} tokens ({prompt} prompt + {output} output + {CONTEXT_SPARE} spare) and would "
                f"be cut in the middle: raise llm.backend.n_ctx to at least {need} (llm=local_16k) "
                f"or lower {keys}"
            )
    return out


def interpolations(cfg: DictConfig, prefix: str = "") -> dict[str, str]:
    """key -> the key it copies, for every plain ``${other.key}`` value."""
    out: dict[str, str] = {}
    for key in cfg.keys() if isinstance(cfg, DictConfig) else []:
        full = f"{prefix}.{key}" if prefix else str(key)
        if OmegaConf.is_interpolation(cfg, key):
            match = re.fullmatch(r"\$\{([A-Za-z0-9_.]+)\}", str(cfg._get_node(key)._value()))
            if match:
                out[full] = match.group(1)
        else:
            child = cfg._get_node(key)
            if isinstance(child, DictConfig):
                out.update(interpolations(child, full))
    return out


def validate_config(cfg: DictConfig | dict) -> None:
    """Raise a ConfigError listing every problem (one line each), before any model or file is loaded."""
    problems = config_problems(cfg)
    if problems:
        raise ConfigError("\n".join(problems))
