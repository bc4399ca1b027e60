"""ReadAgent with a scripted LLM: page bounds, gist tags, look-up expansion, budget trimming and the
counted unparsed replies (Lee et al. 2024; conf/memory/readagent.yaml)."""

from __future__ import annotations

import re

import pytest
from memharness.memsys.readagent import ReadAgent
from memharness.memsys.readagent.lookup import parse_pages
from memharness.memsys.readagent.pagination import count_words, parse_label, pieces_of
from memharness.memsys.services.tokens import get_tokenizer
from memharness.memsys.testing.doubles import ScriptedLLM
from memharness.memsys.types import units_from_texts
from omegaconf import OmegaConf

from tests.paths import ROOT

YAML = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "memory" / "readagent.yaml"))
GROUPS = ("pagination", "gists", "lookup")  # the YAML's sections, prompts included


def paragraph(i: int, words: int) -> str:
    return " ".join(f"p{i}w{k}" for k in range(words))


def labels(prompt: str) -> list[int]:
    return [int(n) for n in re.findall(r"^<(\d+)>$", prompt, flags=re.M)]


def replier(pagination="first", gist=lambda page: "GIST " + page.split()[0], lookup="[1]"):
    """A scripted LLM: pagination picks the first / last offered label (or a fixed reply), gists
    keep the page's first word, look-up replies ``lookup`` (a string or a callable)."""

    def reply(prompt: str) -> str | None:
        if "Break point" in prompt:
            offered = labels(prompt)
            if pagination in ("first", "last"):
                return f"Break point: <{offered[0 if pagination == 'first' else -1]}>\nBecause."
            return pagination
        if prompt.startswith("Make the passage below shorter"):
            return gist(prompt.split("Passage:\n", 1)[1])
        return lookup(prompt) if callable(lookup) else lookup

    return ScriptedLLM(reply)


def memory(llm, **settings) -> ReadAgent:
    """The YAML's groups (prompts included) with small pages; ``settings`` merged over them."""
    values = {"min_words": 20, "max_words": 50, **settings}
    small = {"pagination": {"last_page_words": 25}, "gists": {"window_tokens": None}}
    for g in GROUPS:
        values[g] = {**YAML[g], **small.get(g, {}), **settings.get(g, {})}
    return ReadAgent(llm=llm, tokenizer=get_tokenizer(), **values)


def built(llm, sizes, **settings) -> ReadAgent:
    mem = memory(llm, **settings)
    mem.insert(units_from_texts([paragraph(i, n) for i, n in enumerate(sizes)], source_id="doc"))
    mem.ensure_built()
    return mem


SIZES = [8] * 30  # 240 words in 8-word paragraphs


@pytest.mark.parametrize("choice", ["first", "last"])
def test_every_page_but_the_last_holds_min_to_max_words(choice):
    llm = replier(pagination=choice)
    mem = built(llm, SIZES)
    words = [count_words(p.text) for p in mem.pages]
    assert all(20 <= w <= 50 for w in words[:-1]), words
    assert sum(words) == 240 and mem.pagination.unparsed == 0
    # the first offered label closes a 24-word page, the last a 48-word page
    assert words[0] == (24 if choice == "first" else 48)


def test_offered_labels_are_exactly_the_breaks_within_bounds():
    llm = replier(pagination="first")
    built(llm, SIZES)
    first = next(p for p in llm.prompts if "Break point" in p)
    # pieces of 8 words from piece 0: pages of 24, 32, 40, 48 words end before pieces 3, 4, 5, 6
    assert labels(first) == [3, 4, 5, 6]
    assert "..." not in first.split("Passage:")[1].split("<3>")[0]  # no previous page yet
    second = [p for p in llm.prompts if "Break point" in p][1]
    assert second.split("Passage:\n\n", 1)[1].startswith("...\n" + paragraph(0, 8))


def test_an_unparsed_or_unoffered_reply_falls_back_to_max_words_and_is_counted():
    mem = built(replier(pagination="I would stop at the end of the scene."), SIZES)
    assert count_words(mem.pages[0].text) == 48  # the last offered break: at most max_words
    assert mem.pagination.unparsed == mem.pagination.calls > 0
    stats = mem.stats()["pagination"]
    assert stats["unparsed"] == mem.pagination.calls
    out = built(replier(pagination="Break point: <1>"), SIZES)
    assert out.pagination.out_of_range == out.pagination.calls > 0
    assert count_words(out.pages[0].text) == 48


def test_a_paragraph_longer_than_max_words_is_its_own_page_and_counted():
    mem = built(replier(), [10, 120, 10, 10, 10])
    words = [count_words(p.text) for p in mem.pages]
    assert words[0] == 130 and mem.pagination.oversize == 1


def test_paragraphs_inside_units_are_breaks_and_cut_units_rejoin():
    units = units_from_texts(["alpha beta\n\ngamma del", "ta epsilon"], source_id="d", cut=True)
    pieces = pieces_of(units, "paragraphs")
    assert [p.text for p in pieces] == ["alpha beta", "gamma delta epsilon"]
    assert pieces[1].unit_ids == [units[0].id, units[1].id]
    assert len(pieces_of(units, "units")) == 2


def test_one_gist_per_page_tagged_in_the_lookup_prompt_with_provenance():
    llm = replier()
    mem = built(llm, SIZES)
    assert len(mem.pages) >= 3 and all(p.gist.startswith("GIST p") for p in mem.pages)
    mem.retrieve("What happens?", 10_000)
    prompt = llm.prompts[-1]
    assert prompt.startswith("The text below is what you remember")
    for i, page in enumerate(mem.pages):
        assert f"<Page {i}>\n{page.gist}" in prompt
    covered = [u for p in mem.pages for u in p.unit_ids]
    assert covered == [u.id for u in mem.units]  # every unit in exactly one page, in order


def test_lookup_replaces_the_picked_gists_with_their_pages():
    mem = built(replier(lookup="I want to look up Page [2, 0] to check."), SIZES)
    items = mem.retrieve("Who?", 10_000)
    assert [it.text for it in items] == [
        mem.pages[0].text,
        mem.pages[1].gist,
        mem.pages[2].text,
        *[p.gist for p in mem.pages[3:]],
    ]
    assert items[2].source_unit_ids == mem.pages[2].unit_ids and items[2].level == 0
    assert mem.stats()["lookup"]["pages_expanded"] == 2


def test_parallel_lookup_caps_pages_and_drops_invalid_numbers():
    assert parse_pages("Page [3, 99, 3, 1] because", 5) == ([3, 1], 1)
    assert parse_pages("no list here", 5) == (None, 0)
    assert parse_label("Break point: <57>\nBecause") == 57 and parse_label("none") is None
    mem = built(replier(lookup="Page [0, 1, 2]"), SIZES, lookup={"max_pages": 2})
    items = mem.retrieve("q", 10_000)
    assert sum(it.level == 0 for it in items) == 2


def test_sequential_lookup_reads_one_page_per_call_until_stop():
    replies = iter(["Page [1]", "Page [3]", "STOP"])
    llm = replier(lookup=lambda prompt: next(replies))
    mem = built(llm, SIZES, lookup={"mode": "sequential", "max_pages": 5})
    items = mem.retrieve("q", 10_000)
    assert [i for i, it in enumerate(items) if it.level == 0] == [1, 3]
    assert "Pages already reread: 1, 3." in llm.prompts[-1]
    assert mem.pages[1].text in llm.prompts[-1]  # the reread page shown in full
    assert mem.counts.calls == 3 and mem.counts.unparsed == 0


def test_unparsed_lookup_replies_are_counted_and_expand_nothing():
    mem = built(replier(lookup="I think the answer is B."), SIZES)
    items = mem.retrieve("q", 10_000)
    assert all(it.level == 1 for it in items) and mem.stats()["lookup"]["unparsed"] == 1
    seq = built(replier(lookup="hmm"), SIZES, lookup={"mode": "sequential"})
    seq.retrieve("q", 10_000)
    assert seq.counts.unparsed == 1 and seq.counts.calls == 1


def test_over_budget_the_last_picked_expansion_goes_back_to_its_gist_first():
    mem = built(replier(lookup="Page [0, 2]"), SIZES)
    tok = mem.tokenizer
    gists = sum(tok.count(p.gist) for p in mem.pages)
    room_for_first = gists + tok.count(mem.pages[0].text) - tok.count(mem.pages[0].gist)
    items = mem.retrieve("q", room_for_first)
    assert [i for i, it in enumerate(items) if it.level == 0] == [0]
    assert sum(it.tokens for it in items) <= room_for_first
    assert mem.stats()["lookup"]["expansions_dropped"] == 1
    assert mem.retrieve("q", gists) and mem.counts.expansions_dropped == 3


def test_gists_beyond_the_budget_are_left_out_and_counted():
    mem = built(replier(lookup="Page [0]"), SIZES)
    one = mem.tokenizer.count(mem.pages[0].gist)
    items = mem.retrieve("q", one)
    assert [it.text for it in items] == [mem.pages[0].gist]
    assert mem.counts.gists_dropped == len(mem.pages) - 1


def test_failed_gist_keeps_the_page_and_degrades():
    mem = built(replier(gist=lambda page: None if page.startswith("p3") else "G"), SIZES)
    assert mem.gist_failed == 1 and mem.degraded == {"gist_failed": 1}
    assert any(p.gist == p.text for p in mem.pages)


def test_stats_report_pages_gists_compression_and_lookups():
    mem = built(replier(), SIZES)
    mem.retrieve("q", 10_000)
    stats = mem.stats()
    assert stats["pages"] == stats["gists"] == len(mem.pages)
    assert stats["mean_words_per_page"] == pytest.approx(240 / len(mem.pages))
    assert stats["gist_compression_ratio"] == pytest.approx(2 * len(mem.pages) / 240)
    assert stats["lookup"]["calls"] == 1 and stats["lookup"]["pages_expanded"] == 1


def test_snapshot_state_round_trips():
    mem = built(replier(), SIZES)
    other = memory(replier())
    other.load_state(mem.state())
    assert other.pages == mem.pages and other.stats()["pagination"] == mem.stats()["pagination"]


def test_min_words_above_max_words_is_refused():
    with pytest.raises(ValueError, match="memory.min_words"):
        memory(replier(), min_words=100, max_words=50)
    assert list(ReadAgent.check_settings({"min_words": 9, "max_words": 8}))


def test_bad_grouped_settings_name_their_key_path():
    """The groups' declarations are checked before a run starts, each error naming its key path."""
    from memharness.memsys.settings_check import check_target

    def problems(**settings):
        target = "memharness.memsys.readagent.ReadAgent"
        return check_target({"_target_": target, **settings}, "memory")

    assert problems() == [] and problems(lookup={"mode": "sequential", "max_pages": 2}) == []
    for kw, key in [
        ({"lookup": {"mode": "beam"}}, "memory.lookup.mode"),
        ({"lookup": {"max_pages": 0}}, "memory.lookup.max_pages"),
        ({"pagination": {"prompt": "no placeholder"}}, "memory.pagination.prompt"),
        ({"gists": {"max_tokens": 0}}, "memory.gists.max_tokens"),
        ({"min_words": 9, "max_words": 8}, "memory.min_words"),
    ]:
        found = problems(**kw)
        assert len(found) == 1 and found[0].startswith(key), found


def _register(page: str) -> str:
    """Gists keep the page's first word; a re-gist of joined gists keeps the first gist's word."""
    words = page.split()
    return "GIST " + (words[1] if words[0] == "GIST" else words[0])


def test_over_the_window_pages_merge_and_regist_until_every_gist_reaches_the_lookup():
    llm = replier(gist=_register, lookup="Page [0]")
    before = built(llm, SIZES)  # no merge (window_tokens null): the look-up sees what fits
    pages = len(before.pages)
    one = before.tokenizer.count(before.pages[0].gist)
    window = 2 * one  # room for about two gists
    before.retrieve("q", window)
    old = before.stats()
    assert old["lookup"]["gists_dropped"] == pages - 2 and old["lookup_reach"] < 0.5
    llm = replier(gist=_register, lookup="Page [0]")
    after = built(llm, SIZES, gists={"window_tokens": window})
    # rounds of pairwise merges: pages -> ceil(pages / 2) -> ... until the gists fit the window
    assert len(after.pages) <= 2 and after.merging.pages_before == pages
    tok = after.tokenizer
    assert sum(tok.count(p.gist) for p in after.pages) <= window * 0.5  # window_share: 0.5
    assert after.merging.rounds >= 2 and after.merging.regist_calls == after.merging.merged
    regists = [p for p in llm.prompts if p.startswith("Make the passage") and "\nGIST " in p]
    assert len(regists) == after.merging.regist_calls  # re-gisted from the two gists joined
    assert [u for p in after.pages for u in p.unit_ids] == [u.id for u in after.units]
    assert after.pages[0].gist == "GIST p0w0" and "p0w0" in after.pages[0].text
    items = after.retrieve("q", window)
    stats = after.stats()
    assert stats["lookup"]["gists_dropped"] == 0 and stats["lookup_reach"] == 1.0
    lookup = llm.prompts[-1]
    assert all(f"<Page {i}>\n{p.gist}" in lookup for i, p in enumerate(after.pages))
    assert stats["merging"]["rounds"] == after.merging.rounds
    # the looked-up merged page does not fit the window and goes back to its gist (counted)
    assert all(it.level == 1 for it in items) and stats["lookup"]["expansions_dropped"] == 1
    again = memory(replier())
    again.load_state(after.state())
    assert again.pages == after.pages and again.merging == after.merging


def test_a_failed_regist_keeps_the_two_gists_joined_and_is_counted():
    def gist(page):
        return None if page.startswith("GIST") else _register(page)

    mem = built(replier(gist=gist), SIZES, gists={"window_tokens": 10})
    assert mem.merging.regist_failed == mem.merging.regist_calls > 0
    assert "\n" in mem.pages[0].gist and mem.gist_failed == 0


def test_the_compression_rate_at_the_final_query_counts_gists_and_looked_up_pages():
    mem = built(replier(lookup="Page [1]"), SIZES)
    items = mem.retrieve("q", 10_000)
    words = sum(count_words(it.text) for it in items)
    assert words == count_words(mem.pages[1].text) + 2 * (len(mem.pages) - 1)  # "GIST pXwY"
    stats = mem.stats()
    assert stats["compression_rate_percent_final_query"] == pytest.approx(100 * (1 - words / 240))
    assert stats["compression_rate_percent"] == pytest.approx(100 * (1 - 2 * len(mem.pages) / 240))


def test_the_lookup_sees_the_answer_options_where_the_question_has_them():
    from memharness.memsys.types import Question

    llm = replier()
    mem = built(llm, SIZES)
    mc = Question("m", "Who wins?", (), 0, options=("the fox", "the hare"), gold_option=1)
    mem.retrieve_question(mc, 10_000)
    assert "Question:\nWho wins?\nAnswer options:\n(A) the fox\n(B) the hare\n" in llm.prompts[-1]
    mem.retrieve_question(Question("f", "Who wins?", ("the hare",), 0), 10_000)
    assert "Question:\nWho wins?\n\nWhich page" in llm.prompts[-1]


@pytest.mark.parametrize(
    "dataset, bounds", [("novelqa", (500, 3000)), ("fables", (500, 3000)), ("multihop", (280, 600))]
)
def test_cam_table2_gives_novels_the_long_text_page_sizes(make_cfg, dataset, bounds):
    from memharness.eval.run.validate import config_problems

    cfg = make_cfg("experiment=cam_table2", "memory=readagent", f"dataset={dataset}")
    assert (cfg.memory.min_words, cfg.memory.max_words) == bounds
    assert cfg.memory.gists.window_tokens == cfg.dataset.budget_tokens == 8192
    assert config_problems(cfg) == []
