"""The embedded llama.cpp backend itself: context fitting and its cache identity."""

from __future__ import annotations

import pytest
from memharness.memsys.services.types import ChatRequest


@pytest.mark.slow
def test_long_prompt_is_cut_to_fit_and_the_cut_is_reported():
    from memharness.memsys.services.backends.local import LlamaCppBackend, usable_cores

    backend = LlamaCppBackend(embedded="smollm2", n_ctx=512)
    assert backend._loaded is None and backend.load_s == 0  # no weights until the first call
    assert backend.model_id.endswith(
        ":ctx512"
    )  # a different context is a different cache namespace
    long_prompt = (
        "Remember this fact: the tram opens in March. " * 200 + "\nWhen does the tram open?"
    )
    out = backend.chat(ChatRequest.user(long_prompt, max_tokens=16))
    assert backend.load_s > 0
    params = backend._llm.context_params  # the prompt pass gets the same threads, not every core
    assert params.n_threads == params.n_threads_batch == usable_cores()
    assert out.text.strip() and out.prompt_tokens <= 512 - 16
    assert out.extra["prompt_tokens_cut"] > 1000
    short = backend.chat(ChatRequest.user("Say hello.", max_tokens=8))
    assert "prompt_tokens_cut" not in short.extra
    judged = backend.chat(
        ChatRequest.user(
            "Is 2 + 2 = 4? Reply 1 for yes, 0 for no.", max_tokens=2, choices=("0", "1")
        )
    )
    assert judged.text in ("0", "1")  # the grammar allows nothing else


@pytest.mark.slow
def test_prompt_logprobs_reward_a_relevant_representative_and_feed_ss_theta(tmp_path):
    """The real model scores a group's text higher after a summary of it than after an unrelated one."""
    import numpy as np
    from memharness.memsys.hierarchy.ss_theta import ss_theta
    from memharness.memsys.hierarchy.store import HierarchyStore
    from memharness.memsys.services.backends.local import LlamaCppBackend
    from memharness.memsys.services.llm import LLM
    from memharness.memsys.services.types import LogprobRequest
    from memharness.memsys.testing.doubles import WordTokenizer

    backend = LlamaCppBackend()
    text = "The tram line opens in March. It will connect the harbour to the university."
    related = backend.logprob(
        LogprobRequest("Summary: a tram line to the university opens in March.\n\n", text)
    )
    unrelated = backend.logprob(
        LogprobRequest("Summary: the bakery on Elm Street sells rye bread.\n\n", text)
    )
    assert related[1] == unrelated[1] > 10 and related[0] < 0 and unrelated[0] < 0
    assert related[0] > unrelated[0] + 5  # nats
    store = HierarchyStore()
    vec = np.ones(2, np.float32) / np.sqrt(2)
    kids = [store.add_node(f"k{i}", t, vec, 0) for i, t in enumerate(text.split(". "))]
    good = store.add_node(
        "good",
        "A tram line between the harbour and the university opens in March.",
        vec,
        1,
        children=kids,
    )
    out = ss_theta(store, LLM(backend, progress=False), WordTokenizer(), groups=4)
    assert (
        out["status"] == "ok"
        and out["groups"] == 1
        and out["samples"][0]["node"] == store.ids[good]
    )
    assert 0.1 < out["mean"] < 1.0


@pytest.mark.slow
def test_prefix_reuse_gives_the_same_replies_and_skips_the_shared_prefix():
    """Two prompt kinds alternate (answer, judge), as in a run: with the prefix cache each judge
    prompt resumes after the worked examples; the greedy replies are identical to no cache."""
    from memharness.memsys.services.backends.local import LlamaCppBackend

    examples = "".join(
        f"Query: What is item {i}? | Reference: thing {i} | Predicted: thing {i} -> 1\n"
        for i in range(40)
    )
    requests = []
    for q, ctx in [("Where does Ana live?", "Ana moved to Porto."), ("Who coaches?", "Kim does.")]:
        requests.append(ChatRequest.user(f"Notes: {ctx}\nAnswer briefly: {q}", max_tokens=8))
        requests.append(
            ChatRequest.user(
                f"Grade the answer.\n{examples}Query: {q} | Reference: x | Predicted: y ->",
                max_tokens=2,
                choices=("0", "1"),
            )
        )
    replies, evaluated = {}, {}
    for mb in (0, 256):
        backend = LlamaCppBackend(embedded="smollm2", n_ctx=2048, prefix_cache_mb=mb)
        model = backend._llm
        counted: list[int] = []
        real_eval = model.eval
        model.eval = lambda tokens, real_eval=real_eval, counted=counted: (
            counted.append(len(tokens)) or real_eval(tokens)
        )
        replies[mb] = [backend.chat(r).text for r in requests]
        evaluated[mb] = sum(counted)
        if mb:  # every byte the kept states hold (KV state and logits copy) stays within the cap
            kept = model.cache.cache_state.values()
            assert sum(len(st.llama_state) + st.scores.nbytes for st in kept) <= mb << 20
    assert replies[256] == replies[0]
    # the second judge prompt's ~800 tokens of examples are not processed again
    assert evaluated[256] < evaluated[0] - 500


@pytest.mark.slow
def test_the_thread_count_does_not_change_the_logits():
    """make test runs the models on one core per pytest worker and a user's run on all of them; the
    replies are the same only if llama.cpp's results do not depend on its thread count."""
    import numpy as np
    from memharness.memsys.services.backends.local import LlamaCppBackend

    prompt = " ".join(f"On day {i} Ana ran {i % 5 + 3} km by the harbour." for i in range(20))

    def last_logits(threads: int, text: str) -> np.ndarray:
        model = LlamaCppBackend(embedded="smollm2", n_ctx=1024, n_threads=threads)._llm
        model.eval(model.tokenize(text.encode()))
        # the context's logits for the last position (Llama.scores is only kept with logits_all)
        return np.ctypeslib.as_array(model._ctx.get_logits(), shape=(model.n_vocab(),)).copy()

    one, two = last_logits(1, prompt), last_logits(2, prompt)
    assert np.abs(one).max() > 1  # real logits, not an empty buffer
    assert np.array_equal(one, two)
    assert not np.array_equal(last_logits(2, prompt + " Then"), two)  # the check tells logits apart
