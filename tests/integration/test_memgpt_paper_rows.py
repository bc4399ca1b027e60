"""The published MemGPT rows take memgpt runs of the variant each paper used: CAM Table 2 the flat
variant (App. D's description), MemTree Table 1 the function-calling agent; never the other one."""

from __future__ import annotations

from test_paper_report import MINILM, SMOL, _header, report, s, table_rows, write_run


def test_cam_takes_the_flat_variant_and_memtree_the_agent(tmp_path):
    runs = tmp_path / "runs"
    write_run(
        runs,
        "memgpt",
        "multihop",
        memory_cfg={"variant": "flat"},
        llm=SMOL,
        embedder=MINILM,
        metrics={"em": s(0.5, 2255), "f1": s(0.6, 2255)},
    )
    write_run(
        runs,
        "memgpt",
        "msc",
        "2026-01-02_00-00-00",
        memory_cfg={"variant": "agent"},
        llm=SMOL,
        embedder=MINILM,
        metrics={"judge": s(0.4, 500), "rouge_l_recall": s(0.3, 500)},
    )
    cam_md = report(runs, tmp_path / "cam", "cam_2025", "2")[0]
    mh_f1 = _header(cam_md).index("MH-RAG F1")
    cam = table_rows(cam_md)
    assert cam["MemGPT"][mh_f1].startswith("67.1 / 60.0")  # MultiHop-RAG F1, published / reproduced
    memtree = table_rows(report(runs, tmp_path / "memtree", "memtree_2024", "1")[0])
    assert memtree["Query + MemGPT"][0].startswith("70.4 / 40.0")
    assert (
        "no run: memgpt with GPT-4 Turbo on msc"
        in memtree["GPT-4 Turbo: Query + Full history summary + MemGPT (Packer et al.)"][0]
    )
    # the agent run is not taken for CAM's flat row, nor the flat run for MemTree's agent row
    write_run(
        runs,
        "memgpt",
        "multihop",
        "2026-01-03_00-00-00",
        memory_cfg={"variant": "agent"},
        llm=SMOL,
        embedder=MINILM,
        metrics={"em": s(0.1, 2255), "f1": s(0.1, 2255)},
    )
    cam = table_rows(report(runs, tmp_path / "cam2", "cam_2025", "2")[0])
    assert cam["MemGPT"][mh_f1].startswith("67.1 / 60.0")
