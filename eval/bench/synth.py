"""Generated data at real sizes (``memharness synth``): speed and memory of the writer.

    memharness bench synth        (or `make bench BENCH=synth`)

Each shape writes one episode at its real size (LongMemEval-M's 1.5M-token haystack, a 200k-token
NovelQA book, the 1.46M-token MultiHop-RAG corpus, a BEAM 1M conversation, then a 10M one) in a
child process, so each peak RSS is its own. Figures: seconds per million tokens written (target:
a few seconds) and the 10M conversation's peak RSS over the 1M one's (the writer streams, so
memory must not grow with the conversation; target <= 1.25).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Any

from memharness.eval.bench import print_figures

RUNS = {  # name -> (shape, questions, tokens per episode)
    "longmemeval_m": ("longmemeval_m", 1, 1_500_000),
    "novelqa": ("novelqa", 26, 200_000),
    "multihop": ("multihop", 2_556, 1_460_000),
    "beam_1m": ("beam", 20, 1_000_000),
    "beam_10m": ("beam", 20, 10_000_000),
}
CHILD = """
import json, resource, sys, time
from pathlib import Path
from memharness.data_prep.synth import cli
from memharness.memsys.services.tokens import get_tokenizer
get_tokenizer().count("loaded before timing")
shape, n, t, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
start = time.perf_counter()
s = cli.synthesize(shape, out, n, t, seed=0)
took = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(json.dumps({"tokens": s["tokens"], "seconds": took, "peak_rss_mb": rss / 1024}))
"""


def run_one(shape: str, questions: int, tokens: int) -> dict[str, Any]:
    """One shape written in a child process; its tokens, wall seconds and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="synth-bench-") as tmp:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, shape, str(questions), str(tokens), tmp],
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    targets: dict[str, str] = {}
    for name, (shape, questions, tokens) in RUNS.items():
        got = run_one(shape, questions, tokens)
        figures[f"{name}_s_per_million_tokens"] = got["seconds"] / got["tokens"] * 1e6
        figures[f"{name}_peak_rss_mb"] = got["peak_rss_mb"]
        targets[f"{name}_s_per_million_tokens"] = "<= 5"
    figures["beam_rss_10m_over_1m"] = (
        figures["beam_10m_peak_rss_mb"] / figures["beam_1m_peak_rss_mb"]
    )
    targets["beam_rss_10m_over_1m"] = "<= 1.25"
    print_figures(figures, targets)
    return figures


if __name__ == "__main__":
    main()
