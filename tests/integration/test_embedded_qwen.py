"""The default LLM for real: Qwen2.5-Coder-1.5B assembled from its PyPI parts, hash-checked, loaded, judging.

The verified file in the user's model cache (``make setup`` puts it there) is read, never written;
without it the parts are assembled under tmp_path.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memharness.memsys.services.backends import embedded_models as em
from paths import ROOT

pytestmark = pytest.mark.slow
QWEN = em.QWEN_CODER_1_5B
# Clear cases the judge must get right: paraphrase, number written out, shorter form, yes/no with a reason;
# another entity, another number, the flipped yes/no, a non-answer.
JUDGED = [
    "dialogue-01",
    "dialogue-12",
    "news-01",
    "news-05",
    "dialogue-02",
    "dialogue-13",
    "news-06",
    "dialogue-11",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    cached = em.default_model_dir()
    if (cached / QWEN.file_name).is_file() and em.sha256_file(
        cached / QWEN.file_name
    ) == QWEN.sha256:
        return cached
    return Path(em.verified_model_path(QWEN, tmp_path_factory.mktemp("models"))).parent


def test_assembled_model_loads_and_judges_labelled_items(model_dir):
    from memharness.eval.judge.labelled_set import judge_items, load_items, score
    from memharness.memsys.services.backends.local import LlamaCppBackend
    from memharness.memsys.services.llm import LLM
    from omegaconf import OmegaConf

    backend = LlamaCppBackend(embedded="qwen2.5-coder-1.5b", model_dir=str(model_dir), n_ctx=1024)
    assert backend.model_id == "llama.cpp:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf:ctx1024"
    llm = LLM(backend, max_in_flight=1, progress=False)
    items = {it.id: it for it in load_items()[0]}
    picked = [items[i] for i in JUDGED]
    judge_cfg = OmegaConf.load(ROOT / "conf" / "eval" / "default.yaml").judge
    results = judge_items(picked, llm, judge_cfg)
    llm.close()
    assert [r["status"] for r in results] == ["parsed"] * len(
        picked
    )  # the grammar allows one digit only
    assert (
        [r["verdict"] for r in results] == [it.label for it in picked] == [1, 1, 1, 1, 0, 0, 0, 0]
    )
    assert score(results)["accuracy"] == 1.0


def test_a_tampered_part_stops_run_py_with_the_hash_error(tmp_path):
    """The real parts, one of them changed by one byte: run.py stops with the hash error before loading."""
    parts = em.installed_parts(QWEN)
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, part in enumerate(parts, 1):
        if i == 11:
            data = bytearray(part.read_bytes())
            data[12345] ^= 0x01
            (folder / part.name).write_bytes(bytes(data))
        else:
            (folder / part.name).symlink_to(part)
    env = {
        **os.environ,
        "MEMHARNESS_CACHE": str(tmp_path / "cache.sqlite"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT / "tests"),
    }
    cmd = [
        sys.executable,
        "run.py",
        f"hydra.run.dir={tmp_path / 'run'}",
        "progress=false",
        "llm=local",
        f"llm.backend.parts_dir={folder}",
        f"llm.backend.model_dir={tmp_path / 'models'}",
        "dataset.limit=1",
        "embedder=fake",
        f"hydra.searchpath=[file://{ROOT / 'tests' / 'conf'}]",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    whole = hashlib.sha256()
    for i in range(1, QWEN.n_parts + 1):
        whole.update((folder / QWEN.part_name(i)).read_bytes())
    assert "sha256 mismatch" in proc.stderr and "Traceback" not in proc.stderr
    assert QWEN.sha256 in proc.stderr and whole.hexdigest() in proc.stderr  # both hashes
    assert str(tmp_path / "models" / QWEN.file_name) in proc.stderr and "part11.bin" in proc.stderr
    assert "part10.bin" not in proc.stderr  # the untouched parts are not blamed
    assert not (tmp_path / "models" / QWEN.file_name).exists()
    assert not (tmp_path / "run" / "metrics.json").exists()
