"""The fault-injecting server: deterministic faults, constrained answers, honest /stats."""

from __future__ import annotations

import httpx
import pytest
from memharness.memsys.testing.fault_server import FaultConfig, FaultServer, fault_for, prompt_key


def _chat(url: str, content: str, **extra) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": content}], **extra}
    return httpx.post(f"{url}/chat/completions", json=body, timeout=5)


def test_fault_choice_is_deterministic_and_matches_rates():
    cfg = FaultConfig(rate_429=0.2, rate_500=0.1, rate_malformed=0.1, seed=3)
    keys = [prompt_key([{"role": "user", "content": f"q{i}"}]) for i in range(2000)]
    faults = [fault_for(cfg, k) for k in keys]
    assert faults == [fault_for(cfg, k) for k in keys]
    assert abs(faults.count("429") / 2000 - 0.2) < 0.03
    assert abs(faults.count("500") / 2000 - 0.1) < 0.03
    assert faults.count("hang") == 0
    assert faults != [
        fault_for(FaultConfig(rate_429=0.2, rate_500=0.1, rate_malformed=0.1, seed=4), k)
        for k in keys
    ]


def test_rates_above_one_are_rejected():
    with pytest.raises(ValueError, match="sum"):
        FaultConfig(rate_429=0.7, rate_500=0.5)


def test_injected_faults_are_served_and_counted():
    cfg = FaultConfig(rate_429=0.25, rate_500=0.25, rate_malformed=0.25, retry_after_s=2, seed=1)
    with FaultServer(cfg) as srv:
        seen = {"429": 0, "500": 0, "malformed": 0, None: 0}
        for i in range(40):
            expected = fault_for(cfg, prompt_key([{"role": "user", "content": f"p{i}"}]))
            response = _chat(srv.url, f"p{i}")
            seen[expected] += 1
            if expected == "429":
                assert response.status_code == 429 and response.headers["Retry-After"] == "2"
            elif expected == "500":
                assert response.status_code == 500
            elif expected == "malformed":
                assert response.status_code == 200
                with pytest.raises(ValueError):
                    response.json()
            else:
                assert response.json()["choices"][0]["message"]["content"].startswith("reply ")
        stats = srv.stats()
    assert stats["chat_requests"] == 40 and stats["chat_ok"] == seen[None]
    assert stats["injected"] == {
        "429": seen["429"],
        "500": seen["500"],
        "hang": 0,
        "malformed": seen["malformed"],
    }
    assert stats["injected_total"] == 40 - seen[None]


def test_transient_faults_recover_after_n_attempts():
    with FaultServer(FaultConfig(rate_500=1.0, transient=2)) as srv:
        codes = [_chat(srv.url, "same").status_code for _ in range(3)]
        assert codes == [500, 500, 200]
        assert srv.stats(detail=True)["per_prompt"] == {
            prompt_key([{"role": "user", "content": "same"}]): 3
        }


def test_hang_stalls_then_drops_the_connection():
    with FaultServer(FaultConfig(rate_hang=1.0, hang_s=0.5)) as srv:
        with pytest.raises(httpx.HTTPError):
            _chat(srv.url, "x")
        assert srv.stats()["injected"]["hang"] == 1


def test_constrained_answers_pick_an_allowed_choice():
    with FaultServer(FaultConfig(seed=0)) as srv:
        picks = {
            _chat(srv.url, f"j{i}", guided_choice=["0", "1"]).json()["choices"][0]["message"][
                "content"
            ]
            for i in range(20)
        }
        assert picks == {"0", "1"}
        grammar = _chat(srv.url, "g", grammar='root ::= "A" | "B"').json()["choices"][0]["message"][
            "content"
        ]
        assert grammar in ("A", "B")
        usage = _chat(srv.url, "three word prompt").json()["usage"]
        assert usage["prompt_tokens"] == 3 and usage["completion_tokens"] == 2


def test_embeddings_are_deterministic_per_text():
    with FaultServer(FaultConfig(embed_dim=8)) as srv:
        first = httpx.post(
            f"{srv.url}/embeddings", json={"model": "e", "input": ["a", "b"]}
        ).json()["data"]
        again = httpx.post(f"{srv.url}/embeddings", json={"model": "e", "input": "a"}).json()[
            "data"
        ]
        assert len(first[0]["embedding"]) == 8
        assert first[0]["embedding"] == again[0]["embedding"] != first[1]["embedding"]
        assert srv.stats()["embed_texts"] == 3
