"""`run.py memory=readagent` on the sample with the real embedded model (llm=local_tiny): the pipeline
runs end to end and memory_stats.json carries ReadAgent's own diagnostics."""

from __future__ import annotations

import json

import pytest
from processes import run_py


@pytest.mark.slow
def test_readagent_runs_on_the_sample_with_the_embedded_model(tmp_path):
    proc = run_py(
        tmp_path, "memory=readagent", "dataset=sample", "dataset.limit=2", "llm=local_tiny"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    stats = json.loads((out / "memory_stats.json").read_text())
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 and all(s["status"] == "scored" for s in samples)
    for s in samples:  # every retrieved page or gist points at its source units
        assert s["retrieved"] and all(i["source_unit_ids"] for i in s["retrieved"])
    for episode in stats.values():
        assert episode["pages"] == episode["gists"] >= 1
        assert episode["mean_words_per_page"] > 0 and episode["gist_compression_ratio"] is not None
        assert {"calls", "unparsed", "forced", "oversize"} <= set(episode["pagination"])
        assert episode["lookup"]["questions"] >= 1 and episode["lookup"]["calls"] >= 1
        assert {"unparsed", "pages_expanded", "expansions_dropped"} <= set(episode["lookup"])
        # issue 42: the final-query compression rate beside the gists' one, and the look-up's reach
        assert episode["compression_rate_percent_final_query"] is not None
        assert episode["lookup_reach"] == 1.0  # one page per sample episode: nothing to merge
        assert episode["merging"]["rounds"] == 0 and episode["merging"]["pages_before"] >= 1
    # the 571-word news episode is above the 350-word remainder: the model was asked for a break
    assert sum(e["pagination"]["calls"] for e in stats.values()) >= 1
