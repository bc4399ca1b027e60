"""mem0's OpenAI clients wait for the harness endpoint as long as it takes and never retry (the SDK's
600 s timeout and 2 retries gave up on, then re-sent, calls the embedded model was still computing)."""

from __future__ import annotations

import json
import os
import subprocess

from memharness.memsys.products.adapter import WORKERS, venv_path
from processes import needs_product

PYTHON = venv_path("mem0")
PROBE = f"""
import json, sys
sys.path.insert(0, {str(WORKERS)!r})
import mem0_worker
worker = mem0_worker.Mem0Worker()
worker.reset({{}})
print(json.dumps([[p.client.timeout, p.client.max_retries]
                  for p in (worker.memory.llm, worker.memory.embedding_model)]))
"""


@needs_product("mem0")
def test_mem0_clients_have_no_timeout_and_no_retries(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        MEMHARNESS_STORE_DIR=str(tmp_path),
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",  # never called: nothing is added
        OPENAI_API_KEY="memharness-local",
        MEMHARNESS_EMBED_DIM="16",
        MEMHARNESS_LLM_MODEL="m",
        MEMHARNESS_EMBED_MODEL="e",
    )
    out = subprocess.run(
        [str(PYTHON), "-c", PROBE], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[None, 0], [None, 0]]
