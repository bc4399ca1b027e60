"""``memharness rejudge RUNS... --judges harness,lenient,locomo``: recorded answers re-graded under
other judge prompts and / or judge models, and the judge-sensitivity table.

Each judge is ``PROMPT`` or ``PROMPT@MODEL``: PROMPT a file of conf/judge/prompts/ (harness, lenient,
longmemeval, locomo), MODEL a file of conf/judge/ (local_tiny, local, openai, ...); without MODEL the
run's own judge model grades. No answer is ever asked again (the predictions come from samples.jsonl):
the only calls are judge calls, each through the call cache (``--cache``, default the run's
cache.path) and the meter, whose ledger is written with the table. Overrides after the runs
(``eval.judge.repeats=3 eval.judge.temperature=0.7``) ask each answer k times and keep the majority.

    memharness rejudge results/sweeps/demo --judges harness,lenient,locomo --out results/tables
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memharness.eval.judge import variants
from memharness.eval.judge.rejudge import judges_majority, rejudge_run
from memharness.eval.record import outcome
from memharness.eval.record.read import find_runs, load_run
from memharness.eval.record.schema import ReportError
from memharness.eval.report import judge_sensitivity, tables
from memharness.eval.report.paired import label
from memharness.memsys.services.cache import CallCache
from memharness.memsys.services.factory import _instantiate_backend, _plain
from memharness.memsys.services.llm import LLM
from memharness.memsys.services.meter import Meter
from memharness.memsys.services.retry import RetryPolicy
from memharness.memsys.services.types import ConfigError
from omegaconf import DictConfig, OmegaConf


def judge_section(model: str | None, run_cfg: DictConfig) -> DictConfig:
    """The judge config that grades: the run's judge (its ``judge`` section, else its LLM), or
    conf/judge/<model>.yaml composed with the run's LLM (for ``judge=same``)."""
    if model is None:
        section = run_cfg.get("judge")
        return section if section is not None and section.get("backend") else run_cfg.llm
    from hydra import compose, initialize_config_module

    with initialize_config_module("memharness.conf", version_base=None):
        try:
            cfg = compose("config", overrides=[f"judge={model}"])
        except Exception as err:  # Hydra's MissingConfigException and kin: one line
            raise variants.VariantError(f"judge model {model!r}: {err}") from None
    return cfg.judge if model != "same" else run_cfg.llm


class JudgeModels:
    """One LLM per distinct judge backend, all behind one cache and one meter."""

    def __init__(self, cache: CallCache | None) -> None:
        self.cache, self.meter = cache, Meter()
        self._llms: dict[str, LLM] = {}

    def get(self, section: DictConfig) -> LLM:
        backend = OmegaConf.to_container(section.backend, resolve=True)
        key = json.dumps(backend, sort_keys=True)
        if key not in self._llms:
            self.meter.prices.update(_plain(section.get("prices")))
            self._llms[key] = LLM(
                _instantiate_backend(section, "judge"),  # errors name judge.backend.*, as in a run
                meter=self.meter,
                cache=self.cache,
                max_in_flight=int(section.get("max_in_flight", 8) or 8),  # judges._build's default
                retry=RetryPolicy(**_plain(section.get("retry"))),
                progress=False,
            )
        return self._llms[key]

    def close(self) -> None:
        for llm in self._llms.values():
            llm.close()


def load_runs(paths: Sequence[str], overrides: Sequence[str]) -> list[dict[str, Any]]:
    """The complete runs under ``paths``, each with its samples and config (``overrides`` applied)."""
    runs = [tables.attach(load_run(f)) for f in find_runs(paths)]
    tables.identify(runs)
    tables.assign_groups(runs)
    for run in runs:
        folder = Path(run["folder"])
        if not (folder / "config.yaml").is_file():
            raise ReportError(f"{folder} has no config.yaml: its judge cannot be rebuilt")
        cfg = OmegaConf.load(folder / "config.yaml")
        run["cfg"] = OmegaConf.merge(cfg, OmegaConf.from_dotlist(list(overrides)))
        run["samples"] = tables.read_samples(folder)
    return runs


def rejudge(
    paths: Sequence[str],
    judges: Sequence[str],
    overrides: Sequence[str] = (),
    cache_path: str | None = None,
) -> dict[str, Any]:
    """Re-judge every run under ``paths`` with each judge; the sensitivity sections and the ledger."""
    if not judges:
        raise variants.VariantError("--judges names no judge")
    runs = load_runs(paths, overrides)
    first = runs[0]["cfg"]
    path = cache_path or (str(first.cache.path) if first.cache.enabled else None)
    models = JudgeModels(CallCache(path) if path else None)
    sets = []
    try:
        for group in sorted({r["set_key"] for r in _keyed(runs)}):
            members = sorted((r for r in runs if r["set_key"] == group), key=label)
            sets.append(_one_set(members, judges, models))
    finally:
        models.close()
    calls = {"spend": models.meter.to_json(), "intrinsic": models.meter.intrinsic_json()}
    return {"judges": list(judges), "sets": sets, "calls": calls, "cache": path}


def _keyed(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for r in runs:  # comparable: same dataset and question set (the judge is what changes here)
        r["set_key"] = (r["dataset"], r["qset"])
    return runs


def distinct_labels(members: list[dict[str, Any]]) -> list[str]:
    """Each run's label; runs sharing one (repeats of one setting) are told apart by folder name."""
    plain = [label(r) for r in members]
    return [
        f"{name} @{Path(r['folder']).name}" if plain.count(name) > 1 else name
        for name, r in zip(plain, members, strict=True)
    ]


def _one_set(members: list[dict[str, Any]], judges: Sequence[str], models: JudgeModels) -> dict:
    systems = distinct_labels(members)
    results: dict[str, dict[str, Any]] = {}
    for judge in judges:
        name, _, model = judge.partition("@")
        spec = variants.load(name)
        results[judge] = {}
        for run, system in zip(members, systems, strict=True):
            llm = models.get(judge_section(model or None, run["cfg"]))
            resolved = variants.resolve(spec, run["cfg"])
            res = rejudge_run(run["samples"], resolved, llm, run["cfg"], f"{judge}: {system}")
            results[judge][system] = {**res, "model": llm.model_id}
    acc = {j: {s: results[j][s]["accuracy"] for s in systems} for j in judges}
    majority = None
    if len(judges) >= 2:
        majority = {
            s: judges_majority([results[j][s]["verdicts"] for j in judges]) for s in systems
        }
    return {
        "set": members[0]["group"],
        "dataset": members[0]["dataset"],
        "title": f"{members[0]['dataset']}, question set {members[0]['qset']} "
        f"({members[0]['counts']['questions']} questions)",
        "systems": systems,
        "results": results,
        "majority": majority,
        "summary": judge_sensitivity.summarize_set(systems, judges, acc),
    }


def write(doc: dict[str, Any], out: Path, name: str) -> list[Path]:
    """``<name>.md`` (the table), ``<name>.csv`` (long) and ``<name>.json`` (everything)."""
    out.mkdir(parents=True, exist_ok=True)
    md = judge_sensitivity.markdown(doc["sets"], doc["judges"], doc["calls"])
    paths = [out / f"{name}.md", out / f"{name}.csv", out / f"{name}.json"]
    paths[0].write_text(md, encoding="utf-8")
    judge_sensitivity.long_frame(doc["sets"], doc["judges"]).to_csv(paths[1], index=False)
    paths[2].write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memharness rejudge", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "runs", nargs="+", help="run or sweep folders; KEY=VALUE items are overrides"
    )
    parser.add_argument("--judges", required=True, help="PROMPT[@MODEL],... (conf/judge/prompts/)")
    parser.add_argument("--out", type=Path, default=Path("results/tables"), help="output folder")
    parser.add_argument("--name", default="rejudge", help="file stem of the outputs")
    parser.add_argument("--cache", help="the call cache (default: the first run's cache.path)")
    args = parser.parse_intermixed_args(argv)
    paths = [r for r in args.runs if "=" not in r]
    overrides = [r for r in args.runs if "=" in r]
    judges = [j.strip() for j in args.judges.split(",") if j.strip()]
    try:
        doc = rejudge(paths, judges, overrides, args.cache)
    except (variants.VariantError, ReportError, ConfigError) as err:
        sys.stderr.write(f"memharness rejudge: {err}\n")
        return outcome.EXIT_USER_ERROR
    written = write(doc, args.out, args.name)
    sys.stdout.write(written[0].read_text(encoding="utf-8"))
    sys.stdout.write("wrote " + ", ".join(map(str, written)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
