"""CAM w/ FM: chunks sharing an LLM-extracted entity are linked in the foundational network."""

from __future__ import annotations

import numpy as np
from cam_fakes import SELECT, SUMMARY, FakeLLM, four_groups, units
from memharness.memsys.cam.fine_grained import CAMFineGrained
from memharness.memsys.cam.network import link_shared_entities
from memharness.memsys.services.types import ChatRequest, Completion
from memharness.memsys.testing.doubles import WordTokenizer
from memtree_fakes import WordEmbedder


def test_links_go_to_the_chunks_sharing_most_entities_first():
    ids = ["a", "b", "c", "d"]
    adj = {v: {} for v in ids}
    adj["a"]["d"] = adj["d"]["a"] = 0.9  # already linked: skipped, does not use a place
    entities = {"a": ["X", "Y", "Z"], "b": ["X"], "c": ["X", "Y"], "d": ["Z"]}
    sims = np.array([[1.0, 0.7, 0.2, 0.9]])
    added = link_shared_entities(adj, ["a"], ids, sims, entities, theta=0.5, k=1)
    assert added == [("a", "c", 0.5)]  # c shares two entities; weight max(s=0.2, θ=0.5)
    added = link_shared_entities(adj, ["a"], ids, sims, entities, theta=0.5, k=5)
    assert added == [("a", "b", 0.7)] and adj["b"]["a"] == 0.7


class ExtractingLLM(FakeLLM):
    """Extraction prompts get GraphRAG records naming ALICE for chunks holding a1 or c1; a chunk
    holding ``garbled`` gets an unreadable reply."""

    def __init__(self, garbled: str | None = None) -> None:
        super().__init__()
        self.garbled, self.extractions = garbled, 0

    def complete(self, requests: list[ChatRequest], desc: str | None = None) -> list[Completion]:
        out = []
        for r in requests:
            prompt = r.messages[-1][1]
            if prompt.startswith(("SUMMARISE", "SELECT")):
                out.extend(super().complete([r], desc))
                continue
            self.extractions += 1
            text = prompt.rsplit("Text:", 1)[-1]
            if self.garbled and self.garbled in text:
                # cut at its output cap as well: counted apart from the unreadable reply
                out.append(
                    Completion(text="I cannot help with that.", extra={"finish_reason": "length"})
                )
            elif "a1" in text or "c1" in text:
                out.append(Completion(text='("entity"<|>ALICE<|>PERSON<|>a person)<|COMPLETE|>'))
            else:
                out.append(Completion(text='("entity"<|>BOB<|>PERSON<|>someone)<|COMPLETE|>'))
        return out


def make(llm: FakeLLM, **kw) -> CAMFineGrained:
    table = {w: list(map(float, v)) for w, v in four_groups().items()}
    return CAMFineGrained(
        llm=llm,
        embedder=WordEmbedder(table),
        tokenizer=WordTokenizer(),
        summaries={"prompt": SUMMARY},
        selection={"prompt": SELECT},
        network={"alpha": 1.0, "theta": 0.95},
        **{"fine_grained": {"max_gleanings": 0, **kw.pop("fine_grained", {})}, **kw},
    )


def level0(cam: CAMFineGrained) -> dict[str, set[str]]:
    dev = cam.development
    return {
        dev.nodes[v].text: {dev.nodes[u].text for u in dev.levels[0].adj[v]}
        for v in dev.levels[0].order
    }


def test_cam_fm_links_chunks_that_share_an_entity_across_groups():
    llm = ExtractingLLM()
    cam = make(llm, hierarchy=False)
    cam.insert(units(["a1", "a2", "c1", "d4"]))
    edges = level0(cam)
    assert "c1" in edges["a1"] and "a1" in edges["c1"]  # cos 0 apart: only the entity links them
    assert "d4" in edges["a2"]  # BOB
    assert llm.extractions == 4
    fm = cam.stats()["fine_grained"]
    assert (
        fm["chunks"] == 4 and fm["chunks_without_entities"] == 0 and fm["entity_edges_added"] == 2
    )
    assert not cam.degraded


def test_cam_fm_counts_an_unreadable_extraction_and_marks_the_memory_degraded():
    cam = make(ExtractingLLM(garbled="d4"), hierarchy=False)
    cam.insert(units(["a1", "c1", "d4"]))
    fm = cam.stats()["fine_grained"]
    assert fm["chunks_without_entities"] == 1 and sum(fm["failures"]["counts"].values()) >= 1
    assert cam.degraded.get("entity_extraction_failed", 0) >= 1
    assert fm["replies_at_cap"] == {"extract": 1, "glean": 0}
    assert level0(cam)["d4"] == set()


def test_state_round_trip_keeps_the_counters():
    cam = make(ExtractingLLM(), hierarchy=False, fine_grained={"entity_k": 1})
    cam.insert(units(["a1", "c1"]))
    other = make(ExtractingLLM(), hierarchy=False, fine_grained={"entity_k": 1})
    other.load_state(cam.state())
    assert other.fm_chunks == 2 and other.fm_calls == cam.fm_calls
    assert other.fm_at_cap == cam.fm_at_cap


def test_save_and_load_keep_the_fine_grained_settings(tmp_path):
    """The ``fine_grained`` group is saved as its YAML section and rebuilt on load."""
    from memharness.memsys.hierarchy import load_memory

    fm = {"entity_k": 1, "entity_types": ["person"], "max_tokens": 96}
    cam = make(ExtractingLLM(), hierarchy=False, fine_grained=fm)
    cam.insert(units(["a1", "c1"]))
    cam.save(tmp_path / "m", view=False)
    loaded = load_memory(
        tmp_path / "m", llm=ExtractingLLM(), embedder=cam.embedder, tokenizer=WordTokenizer()
    )
    assert isinstance(loaded, CAMFineGrained) and loaded.fine_grained == cam.fine_grained
    assert loaded.fm_settings.entity_types == ("person",) and loaded.fm_settings.max_tokens == 96
    assert loaded.development.settings.entity_k == 1 and loaded.network == cam.network
