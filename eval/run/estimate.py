"""``dry_run=true``: the bill before paying it, without calling a backend.

A dry run runs the whole evaluation (build, retrieve, answer, judge, the evaluation passes) with
stand-in backends in a temporary folder, with the call cache and memory snapshots off, and writes
what the method *would* have asked for into ``estimate.json`` in the run folder: LLM calls, prompt
and completion tokens, embedding requests and texts, and estimated dollars (``llm.prices`` /
``judge.prices``), per stage. No other file of a run is written, so reports never mistake it for one.

The stand-ins: a chat reply is the last ``estimate.completion_fraction`` × ``max_tokens`` words of
its prompt (an upper bound on length by default; words of the prompt, so a summary embeds near its
inputs), the first option when the request constrains its output (``choices``), ``{}`` for JSON;
embeddings are hashed bags of words, or with ``estimate.embedder=configured`` the run's own embedder
(free when it runs in this process; an HTTP embedder is then *called*, for embeddings only, which
makes the tree/graph shapes and so the LLM call counts much closer to the real run's). Prompt
tokens are counted with the run's tokenizer. The call *counts* follow each memory's own
algorithm; where the algorithm branches on reply content (a parsed rating, a tree's shape, an
extracted graph) the estimate is a simulation, not a measurement: ``make bench`` compares it with a real run.

``estimate.episodes=N`` simulates a seeded pilot of N episodes and extrapolates (build by the
share of units, every other stage by the share of questions); ``estimate.json`` says so
(``method: pilot``). ``memharness estimate <sweep folder>`` adds up the estimates of
every job of a ``-m`` sweep.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from memharness.memsys.services import files as fileio
from memharness.memsys.services.factory import _instantiate_backend
from memharness.memsys.services.files import json_text
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.services.types import ChatRequest, Completion
from omegaconf import DictConfig, OmegaConf

FIELDS = (
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "embed_requests",
    "embed_texts",
)


class StandInChat:
    """Replies without a model: words of the prompt, sized as a share of ``max_tokens``."""

    max_concurrency = None

    def __init__(self, model_id: str, tokenizer: Any, completion_fraction: float) -> None:
        self.model_id, self.tokenizer, self.fraction = model_id, tokenizer, completion_fraction

    def chat(self, request: ChatRequest) -> Completion:
        prompt = "\n".join(content for _, content in request.messages)
        if request.choices:
            text = request.choices[0]
        elif request.json_output:
            text = "{}"
        else:
            words = prompt.split()
            text = " ".join(words[-max(1, int(round(request.max_tokens * self.fraction * 0.75))) :])
            text = self.tokenizer.truncate(
                text, max(1, int(round(request.max_tokens * self.fraction)))
            )
        return Completion(
            text=text,
            prompt_tokens=self.tokenizer.count(prompt),
            completion_tokens=self.tokenizer.count(text),
        )


class StandInEmbed:
    """Hashed bag-of-words vectors, unit norm (shared words give a positive cosine)."""

    model_id = "standin-lexical"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self.dim] += 1.0
            out[i, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def stand_in_model_id(section: Any) -> str:
    """The id the real backend would report (so ``prices`` apply): ``model_id``, else ``openai:<model>``."""
    backend = section.get("backend") or {}
    if backend.get("model_id"):
        return str(backend["model_id"])
    if backend.get("model"):
        return f"openai:{backend['model']}"
    return str(backend.get("_target_", "model")).rsplit(".", 1)[-1]


def stand_ins(cfg: DictConfig):
    """A ``make_backend(section, group)`` for ``build_services`` that never builds a real backend."""
    tokenizer = get_tokenizer(cfg.get("tokenizer", "cl100k_base"))
    fraction = float((cfg.get("estimate") or {}).get("completion_fraction", 1.0))

    configured = (cfg.get("estimate") or {}).get("embedder", "lexical") == "configured"

    def make(section: Any, group: str) -> Any:
        if group == "embedder":
            return _instantiate_backend(section, group) if configured else StandInEmbed()
        return StandInChat(stand_in_model_id(section), tokenizer, fraction)

    return make


def _size(episodes: list) -> dict[str, int]:
    return {
        "episodes": len(episodes),
        "questions": sum(len(e.questions) for e in episodes),
        "units": sum(len(e.units) for e in episodes),
    }


def pilot(n: int | None, seed: int):
    """Keep a seeded sample of ``n`` episodes (in their order; None = all); record both sizes."""

    def pick(dataset: Any) -> Any:
        keep = dataset.episodes
        if n is not None and n < len(keep):
            keep = [keep[i] for i in sorted(random.Random(seed).sample(range(len(keep)), n))]
        sizes = {"full": _size(dataset.episodes), "simulated": _size(keep)}
        return replace(
            dataset, episodes=keep, metadata={**dataset.metadata, "estimate_sizes": sizes}
        )

    return pick


def dry_run(
    cfg: DictConfig, out_dir: Path, overrides: list[str] | None = None, checked: bool = False
) -> dict[str, Any]:
    """Simulate the run with stand-in backends; write and return ``estimate.json``. ``checked``:
    the command line validated ``cfg`` already (the stand-ins' changes to it are valid)."""
    from memharness.eval.run.runner import run

    section = cfg.get("estimate") or {}
    sim = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    OmegaConf.set_struct(sim, False)
    sim.cache.enabled, sim.dry_run, sim.progress = False, False, False
    sim.snapshots = {"enabled": False, "path": None}
    sim.budget = {"usd": None, "calls": None}
    with tempfile.TemporaryDirectory(prefix="memharness-dry-run-") as tmp:
        metrics = run(
            sim,
            Path(tmp) / "run",
            overrides=overrides,
            make_backend=stand_ins(cfg),
            pick=pilot(section.get("episodes"), int(cfg.seed)),
            checked=checked,
        )
    estimate = extrapolate(metrics)
    estimate.update(
        memory=cfg.memory.name, dataset=cfg.dataset.name, overrides=list(overrides or [])
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    fileio.write_text((out_dir / "estimate.json"), json_text(estimate, indent=1) + "\n")
    return estimate


def extrapolate(metrics: dict[str, Any]) -> dict[str, Any]:
    """Per-stage counts of the simulated run, scaled from the pilot to the whole dataset."""
    sizes = metrics["data"]["metadata"]["estimate_sizes"]
    full, sim = sizes["full"], sizes["simulated"]
    scale_u = full["units"] / max(1, sim["units"])
    scale_q = full["questions"] / max(1, sim["questions"])
    stages: dict[str, dict[str, float]] = {}
    for stage, used in metrics["intrinsic"].items():
        if stage == "total":
            continue
        scale = scale_u if stage == "build" else scale_q
        stages[stage] = {k: used.get(k, 0) * scale for k in FIELDS}
    total = {k: sum(s[k] for s in stages.values()) for k in FIELDS}
    pilot_run = sim["episodes"] < full["episodes"]
    return {
        "method": "pilot" if pilot_run else "simulated",
        "label": (
            f"extrapolated from a pilot of {sim['episodes']} of {full['episodes']} episodes"
            if pilot_run
            else f"simulated over all {full['episodes']} episodes"
        ),
        "sizes": sizes,
        "stages": stages,
        "total": total,
    }


def sum_estimates(folder: Path) -> dict[str, Any]:
    """Add up every ``estimate.json`` under ``folder`` (the jobs of a sweep)."""
    files = sorted(folder.rglob("estimate.json"))
    total = {k: 0.0 for k in FIELDS}
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        for k in FIELDS:
            total[k] += doc["total"].get(k, 0)
    return {"runs": len(files), "total": total}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Add up the dry-run estimates of a sweep folder.")
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    result = sum_estimates(args.folder)
    if not result["runs"]:
        print(
            f"error: no estimate.json under {args.folder} (run the sweep with dry_run=true)",
            file=sys.stderr,
        )
        return 2
    t = result["total"]
    print(
        f"{result['runs']} runs: {t['calls']:.0f} LLM calls, {t['prompt_tokens']:.0f} prompt + "
        f"{t['completion_tokens']:.0f} completion tokens, {t['embed_requests']:.0f} embedding requests, "
        f"${t['cost_usd']:.4f} estimated"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
