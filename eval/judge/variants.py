"""Judge prompt variants (conf/judge/prompts/<name>.yaml) as requests and verdicts.

A variant is the harness judge (its prompt read from the run's config.yaml, so its requests are the
run's and the call cache answers them), the lenient audit prompt (likewise), a benchmark protocol of
conf/judge/official/ (LongMemEval's per-type prompts), or a prompt of its own (the LoCoMo-style
CORRECT / WRONG judge). ``memharness rejudge`` (eval/cli/rejudge.py) sends them.

Verdict rules: ``digit`` (the reply is 0 or 1, eval/judge/prompt.py), ``contains_yes`` /
``exact_yes`` (eval/judge/official.py), ``label`` (the reply's first word is one of ``labels``: the
first scores 1, the second 0). An unreadable reply is None (unparsed, counted), never a guess.
"""

from __future__ import annotations

from dataclasses import replace
from importlib.resources import files
from typing import Any

import yaml
from memharness.eval.judge import official
from memharness.eval.judge.prompt import judge_request, parse_judge, reference_text
from memharness.memsys.services.types import ChatRequest
from memharness.memsys.types import Question
from omegaconf import DictConfig, OmegaConf

RULES = ("digit", "contains_yes", "exact_yes", "label")


class VariantError(Exception):
    """An unknown variant, or one that cannot judge a question (one line, naming it)."""


def _conf_file(*parts: str) -> Any:
    return files("memharness.conf").joinpath("judge", *parts)


def known() -> list[str]:
    """The variant names shipped in conf/judge/prompts/."""
    folder = _conf_file("prompts")
    return sorted(f.name[:-5] for f in folder.iterdir() if f.name.endswith(".yaml"))


def load(name: str) -> dict[str, Any]:
    """Variant ``name`` as a plain dict; a protocol variant (``official:``) is merged over its
    protocol file. Unknown names are refused, listing the known ones."""
    path = _conf_file("prompts", f"{name}.yaml")
    if not path.is_file():
        raise VariantError(f"unknown judge prompt {name!r}: choose from {known()}")
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if spec.get("official"):
        proto = yaml.safe_load(
            _conf_file("official", f"{spec['official']}.yaml").read_text(encoding="utf-8")
        )
        spec = {"verdict": "contains_yes", **proto, **spec, "name": spec["name"]}
    if spec.get("verdict") not in RULES:
        raise VariantError(f"judge prompt {name}: verdict must be one of {RULES}")
    return spec


def resolve(spec: dict[str, Any], run_cfg: DictConfig) -> dict[str, Any]:
    """The variant for one run: ``from_run`` prompts, ``quote: run`` and ``max_tokens: null`` read
    from the run's config."""
    out = dict(spec)
    judge_cfg = run_cfg.eval.judge
    if spec.get("from_run"):
        prompt = OmegaConf.select(run_cfg, spec["from_run"])
        if prompt is None:
            raise VariantError(f"judge prompt {spec['name']}: the run has no {spec['from_run']}")
        out["prompts"] = {"default": str(prompt)}
    if out.get("quote") == "run":
        out["quote"] = bool(judge_cfg.get("quote", False))
    if out.get("max_tokens") is None:
        out["max_tokens"] = int(judge_cfg.max_tokens)
    return out


def template(question: Question, spec: dict[str, Any]) -> tuple[str, bool]:
    """The prompt template for ``question`` and whether it is the fallback one."""
    if spec.get("abstention_prompt") and official.is_abstention(question.id, spec):
        return spec["abstention_prompt"], False
    key = "default" if spec.get("category") is None else question.categories.get(spec["category"])
    if key in spec["prompts"]:
        return spec["prompts"][key], False
    if spec.get("fallback") in spec["prompts"]:
        return spec["prompts"][spec["fallback"]], True
    raise VariantError(
        f"judge prompt {spec['name']}: question {question.id} has {spec.get('category')}={key!r}, "
        f"which has no prompt and no fallback (known: {sorted(spec['prompts'])})"
    )


def request(question: Question, prediction: str, spec: dict[str, Any]) -> tuple[ChatRequest, bool]:
    """The request of one (question, answer) under a resolved variant, and whether it used the
    fallback prompt. Digit variants go through the harness's ``judge_request`` (the prediction
    neutralised, the reply constrained to 0 | 1), so they share its cache keys."""
    text, fallback = template(question, spec)
    ref = reference_text(question)
    if spec["verdict"] == "digit":
        cfg = {"prompt": text, "max_tokens": spec["max_tokens"], "quote": spec.get("quote", False)}
        return judge_request(question, ref, prediction, OmegaConf.create(cfg)), fallback
    constrained = spec.get("constrained")
    choices = None
    if constrained:
        choices = tuple(spec["labels"]) if spec["verdict"] == "label" else ("yes", "no")
    body = text.format(question=question.text, reference=ref, prediction=prediction)
    return ChatRequest.user(body, max_tokens=int(spec["max_tokens"]), choices=choices), fallback


def repeated(req: ChatRequest, repeats: int, temperature: float) -> list[ChatRequest]:
    """``repeats`` samples of one request: the request itself when 1, else seeds 0..k-1 at
    ``temperature`` (seeded, so each sample is cacheable and reproducible)."""
    if repeats == 1:
        return [req]
    return [replace(req, temperature=temperature, seed=i) for i in range(repeats)]


def read_verdict(reply: str, spec: dict[str, Any]) -> int | None:
    """The 0/1 verdict of a reply under the variant's rule; None when it does not read as one."""
    rule = spec["verdict"]
    if rule == "digit":
        return parse_judge(reply)
    if rule in ("contains_yes", "exact_yes"):
        return int(official.verdict(reply, rule))
    words = reply.strip().split()
    first = words[0].strip(".,:;!\"'`*").upper() if words else ""
    labels = [str(label).upper() for label in spec["labels"]]
    return (1 - labels.index(first)) if first in labels[:2] else None
