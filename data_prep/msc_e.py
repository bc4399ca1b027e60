"""MSC-E (MemTree App. A.2.3-A.2.4): the loader and the generator that writes its file.

The generator extends each MSC-Self-Instruct dialogue (speakers renamed Alex
and Bob) to ``rounds`` rounds: a sliding window of the last 8 turns goes into
the continuation prompt, which asks for the next 2 rounds. Question/answer
pairs are then generated from consecutive windows of the history; each is asked
right after its window (the online protocol) and carries the window start as
its evidence position. Prompts and parameters live in conf/dataset/msc_e.yaml
under ``generator``. Output: ``msc_e.v1.jsonl`` (one episode per line) and
``CARD.md``. Malformed generations are counted, never patched up.

    memharness msc-e generate --input msc_self_instruct.jsonl \
        --out data/msc_e --rounds 200 --limit 70
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from memharness.data_prep import hub, msc
from memharness.data_prep.base import Dataset, DatasetError, sha256_file
from memharness.data_prep.msc_e_replies import pair_rounds, parse_qa, parse_turns
from memharness.memsys.settings import PathExists, Placeholders, Range
from memharness.memsys.types import Episode, Evidence, Question, content_id, units_from_texts

FORMAT = "msc_e/v1"
FILENAME = "msc_e.v1.jsonl"
NAMES = {"Speaker 1": "Alex", "Speaker 2": "Bob"}
CONFIG = Path(__file__).resolve().parent.parent / "conf" / "dataset" / "msc_e.yaml"
Count = Annotated[int, Range(1)]


class GeneratorSettings(TypedDict):
    """``dataset.generator`` of conf/dataset/msc_e.yaml (used by ``msc_e generate`` only)."""

    rounds: Count
    window_turns: Count
    rounds_per_step: Count
    qa_window_rounds: Count
    questions_per_window: Count
    temperature: Annotated[float, Range(0, 2)]
    seed: Annotated[int, Range(0)]
    max_tokens: Count
    qa_max_tokens: Count
    max_attempts: Count
    continue_prompt: Annotated[str, Placeholders("n_rounds", "recent_chat_hist")]
    qa_prompt: Annotated[str, Placeholders("n_q", "chat_hist")]


# ----------------------------------------------------------------------------- loader


def round_text(turns: list[dict[str, str]]) -> str:
    return "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)


def _rounds(record: dict[str, Any], where: str) -> list[str]:
    texts = []
    for i, rnd in enumerate(hub.need(record, "rounds", list, where)):
        turns = hub.need(rnd, "turns", list, f"{where}: rounds[{i}]")
        for j, t in enumerate(turns):
            hub.need(t, "speaker", str, f"{where}: rounds[{i}].turns[{j}]")
            hub.need(t, "text", str, f"{where}: rounds[{i}].turns[{j}]")
        texts.append(round_text(turns))
    return texts


def _question(raw: dict[str, Any], where: str, ep_id: str, n_rounds: int) -> Question:
    text = hub.need(raw, "question", str, where)
    answer = hub.need(raw, "answer", str, where)
    after = hub.need(raw, "asked_after_round", int, where)
    span = hub.need(raw, "evidence_rounds", list, where)
    if (
        len(span) != 2
        or not all(isinstance(x, int) for x in span)
        or not 0 <= span[0] < span[1] <= after
    ):
        raise DatasetError(
            f"{where}: field 'evidence_rounds' should be [start, end) with "
            f"0 <= start < end <= asked_after_round, got {span}"
        )
    if not 0 < after <= n_rounds:
        raise DatasetError(f"{where}: asked_after_round={after} outside 1..{n_rounds}")
    return Question(
        id=raw.get("id") or content_id(ep_id, text, after, prefix="msce-q-"),
        text=text,
        answers=(answer,),
        position=after,
        categories={"type": "msc_e"},
        evidence=(
            Evidence(
                source_id=ep_id, text=str(raw.get("evidence", "")), position=span[0], end=span[1]
            ),
        ),
    )


def record_episode(record: dict[str, Any], where: str) -> Episode:
    """One generator record as an online episode (each question right after its rounds)."""
    if record.get("format") != FORMAT:
        raise DatasetError(
            f"{where}: field 'format' should be {FORMAT!r}, got {record.get('format')!r}"
        )
    ep_id = hub.need(record, "id", str, where)
    texts = _rounds(record, where)
    units = units_from_texts(texts, source_id=ep_id)
    questions = [
        _question(q, f"{where}: questions[{i}]", ep_id, len(units))
        for i, q in enumerate(hub.need(record, "questions", list, where))
    ]
    return Episode(
        id=ep_id, units=units, questions=questions, metadata={"source": record.get("source")}
    )


def load(
    path: Annotated[str, PathExists()] | None = None,
    data_dir: str | None = None,
    integrity: hub.Integrity = "warn",
) -> Dataset:
    """Load a generated (or user-supplied) MSC-E file; ``path`` is the jsonl or its folder."""
    cache = hub.cache_dir(data_dir, "msc_e")
    file = hub.local_path(path) or cache / FILENAME
    if file.is_dir():
        file = file / FILENAME
    if not file.is_file():
        raise DatasetError(
            f"dataset 'msc_e' is not available: no {file}. MSC-E is not published; generate it "
            f"with `memharness msc-e generate --input msc_self_instruct.jsonl --out {cache}` "
            "or pass a file in the same format with `dataset.loader.path=<file>`."
        )
    episodes = [record_episode(rec, f"{file}:{n}") for n, rec in hub.read_jsonl(file)]
    if not episodes:
        raise DatasetError(f"{file}: no episodes (the file is empty)")
    ds = Dataset(
        name="msc_e",
        episodes=episodes,
        files=hub.file_hashes([file]),
        revision=FORMAT,
        metadata={"online": True},
    )
    return hub.finish(ds, integrity)


# ----------------------------------------------------------------------------- generation


@dataclass
class Tally:
    steps: int = 0
    malformed_steps: int = 0
    qa_windows: int = 0
    malformed_qa_windows: int = 0
    rejected_qa_items: int = 0
    truncated_episodes: list[str] = field(default_factory=list)


def seed_rounds(row: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The MSC dialogue as rounds with the speakers renamed Alex / Bob."""
    out = []
    for rnd in msc.group_rounds(msc.row_turns(row, where)):
        turns = [{"speaker": NAMES.get(t.speaker, t.speaker), "text": t.text} for t in rnd]
        out.append({"origin": "msc", "session": rnd[0].session, "turns": turns})
    return out


def _ask(llm: Any, prompt: str, gen: dict[str, Any], max_tokens: int, attempt: int) -> str:
    from memharness.memsys.services.types import ChatRequest

    req = ChatRequest.user(
        prompt,
        max_tokens=max_tokens,
        temperature=float(gen["temperature"]),
        seed=int(gen["seed"]) + attempt,
    )
    done = llm.complete_one(req)
    return done.text if done.ok else ""


def extend(
    rounds: list[dict[str, Any]], target: int, llm: Any, gen: dict[str, Any], tally: Tally
) -> bool:
    """Grow ``rounds`` to ``target`` in steps of ``rounds_per_step``; False if a step kept failing."""
    per_step, window = int(gen["rounds_per_step"]), int(gen["window_turns"])
    while len(rounds) < target:
        recent = [t for r in rounds for t in r["turns"]][-window:]
        prompt = gen["continue_prompt"].format(
            n_rounds=per_step, recent_chat_hist=round_text(recent)
        )
        new: list[list[dict[str, str]]] = []
        for attempt in range(int(gen["max_attempts"])):
            tally.steps += 1
            new = pair_rounds(parse_turns(_ask(llm, prompt, gen, int(gen["max_tokens"]), attempt)))[
                :per_step
            ]
            if new:
                break
            tally.malformed_steps += 1
        if not new:
            return False
        rounds += [{"origin": "generated", "turns": t} for t in new[: target - len(rounds)]]
    return True


def make_questions(
    ep_id: str, rounds: list[dict[str, Any]], llm: Any, gen: dict[str, Any], tally: Tally
) -> list[dict[str, Any]]:
    """QA pairs from consecutive windows of ``qa_window_rounds`` rounds, asked right after each window."""
    size, out = int(gen["qa_window_rounds"]), []
    for start in range(0, len(rounds) - size + 1, size):
        hist = "\n".join(round_text(r["turns"]) for r in rounds[start : start + size])
        prompt = gen["qa_prompt"].format(n_q=int(gen["questions_per_window"]), chat_hist=hist)
        tally.qa_windows += 1
        pairs, rejected = parse_qa(_ask(llm, prompt, gen, int(gen["qa_max_tokens"]), 0))
        tally.rejected_qa_items += rejected
        tally.malformed_qa_windows += 0 if pairs else 1
        for qa in pairs[: int(gen["questions_per_window"])]:
            out.append(
                {
                    "id": content_id(ep_id, start, qa["question"], prefix="msce-q-"),
                    **qa,
                    "asked_after_round": start + size,
                    "evidence_rounds": [start, start + size],
                    "evidence": hist,
                }
            )
    return out


def generate(
    rows: list[tuple[str, dict[str, Any]]], llm: Any, gen: dict[str, Any], target: int, tally: Tally
) -> list[dict[str, Any]]:
    """One MSC-E record per MSC row."""
    records = []
    for index, (where, row) in enumerate(rows):
        data_id = (row.get("metadata") or {}).get("initial_data_id")
        ep_id = f"msce-{index:04d}" + (f"-{data_id}" if data_id else "")
        rounds = seed_rounds(row, where)[:target]
        if not extend(rounds, target, llm, gen, tally):
            tally.truncated_episodes.append(ep_id)
        for i, r in enumerate(rounds):
            r["round"] = i
        records.append(
            {
                "format": FORMAT,
                "id": ep_id,
                "source": {"dataset": msc.HUB_ID, "where": where, "initial_data_id": data_id},
                "speakers": ["Alex", "Bob"],
                "rounds": rounds,
                "questions": make_questions(ep_id, rounds, llm, gen, tally),
            }
        )
    return records


def write_card(
    out: Path,
    records: list[dict[str, Any]],
    gen: dict[str, Any],
    model_id: str,
    source: Path,
    tally: Tally,
) -> None:
    """A short dataset card: model, prompts, parameters, counts and malformed generations."""
    params = {k: v for k, v in gen.items() if not k.endswith("prompt")}
    counts = {
        "episodes": len(records),
        "rounds": sum(len(r["rounds"]) for r in records),
        "questions": sum(len(r["questions"]) for r in records),
        **tally.__dict__,
    }
    lines = [
        f"# MSC-E ({FORMAT})",
        "",
        "Generated by `memharness msc-e generate` following MemTree "
        "App. A.2.3-A.2.4 (prompts in our own words).",
        "",
        f"- generating model: `{model_id}`",
        f"- input: `{source}` (sha256 {sha256_file(source)})",
        f"- output: `{FILENAME}` (sha256 {sha256_file(out / FILENAME)})",
        "",
        "## Parameters",
        "```json",
        json.dumps(params, indent=2, default=str),
        "```",
        "",
        "## Counts (malformed generations are counted and dropped, never repaired)",
        "```json",
        json.dumps(counts, indent=2),
        "```",
        "",
    ]
    for key in ("continue_prompt", "qa_prompt"):
        lines += [f"## {key}", "```", gen[key], "```", ""]
    (out / "CARD.md").write_text("\n".join(lines), encoding="utf-8")


def generator_config(overrides: list[str]) -> Any:
    """The composed run config (llm, embedder, cache) with this dataset's ``generator`` section."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIG.parent.parent), version_base=None):
        return compose(
            "config",
            overrides=[
                "dataset=msc_e",
                f"data_dir={Path.cwd() / 'data'}",
                f"cache.path={Path.cwd() / '.cache' / 'calls.sqlite'}",
                *overrides,
            ],
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memharness msc-e", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="extend MSC dialogues and write msc_e.v1.jsonl + CARD.md")
    g.add_argument("--input", required=True, type=Path, help="msc_self_instruct.jsonl")
    g.add_argument("--out", required=True, type=Path, help="output folder")
    g.add_argument(
        "--rounds", type=int, default=None, help="rounds per dialogue (default: generator.rounds)"
    )
    g.add_argument("--limit", type=int, default=None, help="use the first N MSC rows")
    g.add_argument(
        "overrides", nargs="*", help="Hydra overrides, e.g. llm.backend.n_ctx=2048 seed=1"
    )
    args = parser.parse_args(argv)
    from memharness.memsys.services.factory import build_services
    from omegaconf import OmegaConf

    cfg = generator_config(args.overrides)
    gen = OmegaConf.to_container(cfg.dataset.generator, resolve=True)
    target = args.rounds or int(gen["rounds"])
    rows = [(f"{args.input}:{n}", row) for n, row in hub.read_jsonl(args.input)][: args.limit]
    services = build_services(cfg)
    tally = Tally()
    try:
        records = generate(rows, services.llm, gen, target, tally)
    finally:
        services.close()
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / FILENAME, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    write_card(args.out, records, gen, services.llm.model_id, args.input, tally)
    print(
        f"wrote {args.out / FILENAME}: {len(records)} episodes, "
        f"{sum(len(r['questions']) for r in records)} questions; see {args.out / 'CARD.md'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
