"""``memharness synth SHAPE --out DIR [--questions N] [--tokens T] [--seed S]``.

Writes one shape's files in its upstream schema into DIR, then DIR/synth.json (and stdout) with the
Hydra overrides that load them, the tokens written (cl100k_base) and each file's sha256. --tokens
sizes one episode (see ``SHAPES``); the defaults are the released files' sizes. The same seed
writes byte-identical files. For load, scale and cost rehearsals: never report a score on them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from memharness.data_prep.base import sha256_file
from memharness.data_prep.synth import SHAPES
from memharness.data_prep.synth.text import SynthError

PROG = "memharness synth"


def check_request(shape: str, questions: int | None, tokens: int | None) -> tuple[int, int]:
    """The questions and tokens to write; a one-line ``SynthError`` for a request that cannot be."""
    if shape not in SHAPES:
        raise SynthError(f"unknown shape {shape!r}; choose one of {', '.join(SHAPES)}")
    spec = SHAPES[shape]
    n = spec.questions if questions is None else questions
    t = spec.tokens if tokens is None else tokens
    if n < 1:
        raise SynthError(f"--questions must be at least 1, got {n}")
    floor = spec.min_tokens(n)
    if t < floor:
        raise SynthError(
            f"--tokens {t:,} is too small for {n:,} {shape} questions: their evidence needs at "
            f"least {floor:,} tokens per {spec.episode}"
        )
    return n, t


def synthesize(
    shape: str, out: Path, questions: int | None = None, tokens: int | None = None, seed: int = 0
) -> dict:
    """Write the files and DIR/synth.json; returns what synth.json holds."""
    n, t = check_request(shape, questions, tokens)
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    written = SHAPES[shape].write(out, n, t, seed)
    summary = {
        "shape": shape,
        "seed": seed,
        "questions": written["questions"],
        "episodes": written["episodes"],
        "tokens_target_per_episode": t,
        "tokens": written["tokens"],
        "tokens_per_episode": written["tokens_per_episode"],
        "tokenizer": "cl100k_base",
        "strata": written["strata"],
        "overrides": written["overrides"],
        "files": {
            str(f.relative_to(out)): {"sha256": sha256_file(f), "bytes": f.stat().st_size}
            for f in written["files"]
        },
        "purpose": "load, scale and cost rehearsals; generated text, never a score",
    }
    (out / "synth.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    shapes = "\n".join(
        f"  {name:14s} {spec.questions:>5,} questions, {spec.tokens:>9,} tokens per {spec.episode}"
        for name, spec in SHAPES.items()
    )
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Seeded files in the upstream schemas at real sizes, for load, scale and cost "
        "rehearsals (never scores). docs/datasets.md, 'Generated data at real sizes'.",
        epilog=f"shapes and their released sizes (the defaults):\n{shapes}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("shape", help=f"one of: {', '.join(SHAPES)}")
    parser.add_argument("--out", required=True, type=Path, help="folder to write into")
    parser.add_argument("--questions", type=int, default=None, help="questions in all")
    parser.add_argument("--tokens", type=int, default=None, help="tokens per episode")
    parser.add_argument("--seed", type=int, default=0, help="the one seed (default 0)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        s = synthesize(args.shape, args.out, args.questions, args.tokens, args.seed)
    except SynthError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    took = time.perf_counter() - start  # a measured latency, reported, never written
    lines = [
        f"{PROG} {s['shape']}: {s['questions']:,} questions, {s['episodes']:,} episodes, "
        f"{s['tokens']:,} tokens in {took:.1f} s ({took / max(s['tokens'], 1) * 1e6:.2f} s per "
        "million tokens)",
        *(
            f"  {name}  sha256 {f['sha256']}  {f['bytes']:,} bytes"
            for name, f in s["files"].items()
        ),
        "overrides: " + " ".join(s["overrides"]),
        f"written: {args.out.resolve() / 'synth.json'}",
    ]
    try:
        print("\n".join(lines), flush=True)
    except (
        BrokenPipeError
    ):  # piped into a reader that stopped early (| head): the files are written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
