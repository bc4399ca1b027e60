"""Hierarchical Leiden (igraph + leidenalg) and community reports with hand-written replies."""

from __future__ import annotations

import json
import random

import pytest
from graphrag_fakes import StepLLM, report_json
from memharness.memsys.extraction.parsing import FailureLog
from memharness.memsys.extraction.prompts import default_prompts
from memharness.memsys.graphrag.communities import Community, hierarchical_leiden
from memharness.memsys.graphrag.merge import Entity, Graph, Relation
from memharness.memsys.graphrag.reports import (
    ContextBuilder,
    ReportSettings,
    generate_reports,
    parse_report,
)
from memharness.memsys.testing.doubles import WordTokenizer


def planted(n_groups: int = 6, size: int = 30, seed: int = 0) -> list[tuple[int, int, float]]:
    """Dense groups of ``size`` nodes (each with looser sub-groups of 6), sparsely linked."""
    rng = random.Random(seed)
    edges = set()
    n = n_groups * size
    for u in range(n):
        for v in range(u + 1, n):
            same_group, same_sub = u // size == v // size, u // 6 == v // 6
            p = 0.9 if same_sub else 0.15 if same_group else 0.003
            if rng.random() < p:
                edges.add((u, v))
    return [(u, v, 1.0 + rng.random()) for u, v in sorted(edges)]


@pytest.mark.parametrize("backend", ["igraph", "leidenalg"])
def test_hierarchy_respects_the_size_cap_and_nests(backend):
    edges = planted()
    communities, info = hierarchical_leiden(
        180, edges, max_cluster_size=10, seed=3, backend=backend
    )
    by_key = {c.key: c for c in communities}
    assert (
        info["levels"] >= 2
        and info["clustered_nodes"] == 180
        and info["seed"] == 3
        and info["backend"] == backend
    )
    for c in communities:
        if c.children:  # split: the children partition the parent, one level deeper
            kids = [by_key[k] for k in c.children]
            assert sorted(m for k in kids for m in k.members) == c.members
            assert {k.level for k in kids} == {c.level + 1} and all(k.parent == c.key for k in kids)
        else:  # final: within the cap unless Leiden could not split it (recorded)
            assert len(c.members) < 10 or c.key in info["unsplittable"]
        if len(c.members) >= 10:
            assert c.children or c.key in info["unsplittable"]
    top = [c for c in communities if c.level == 0]
    assert sorted(m for c in top for m in c.members) == list(range(180))
    assert info["max_final_size"] < 10 or info["unsplittable"]


def ring_of_groups(groups: int = 40) -> list[tuple[int, int, float]]:
    """Ten-node groups in a ring (one edge between neighbours); each group is two 5-cliques
    joined by two edges."""
    edges = []
    for g in range(groups):
        base = g * 10
        for half in (0, 5):
            edges += [
                (base + half + i, base + half + j, 1.0) for i in range(5) for j in range(i + 1, 5)
            ]
        edges += [(base, base + 5, 1.0), (base + 1, base + 6, 1.0)]
        edges.append((base + 9, ((g + 1) % groups) * 10, 1.0))
    return edges


def test_a_community_of_exactly_the_cap_is_split_as_graspologic_does():
    """graspologic re-splits at >= max_cluster_size: 40 groups of 10 at level 0, then 80 of 5."""
    communities, info = hierarchical_leiden(400, ring_of_groups(), max_cluster_size=10)
    level0 = [c for c in communities if c.level == 0]
    level1 = [c for c in communities if c.level == 1]
    assert len(level0) == 40 and {len(c.members) for c in level0} == {10}
    assert len(level1) == 80 and {len(c.members) for c in level1} == {5}
    assert all(len(c.children) == 2 for c in level0) and info["per_level"] == {"0": 40, "1": 80}


@pytest.mark.parametrize("backend", ["igraph", "leidenalg"])
def test_same_seed_same_hierarchy_and_the_seed_matters(backend):
    edges = planted(seed=1)

    def shape(seed):
        cs, _ = hierarchical_leiden(180, edges, 10, seed=seed, backend=backend)
        return [(c.level, c.parent, c.members) for c in cs]

    assert shape(11) == shape(11)
    assert any(shape(11) != shape(s) for s in (12, 13, 14))


def test_largest_connected_component_option():
    edges = [(0, 1, 1.0), (1, 2, 1.0), (2, 0, 1.0), (3, 4, 1.0)]
    with_lcc, info = hierarchical_leiden(6, edges, 10, seed=0, use_lcc=True)
    assert sorted(m for c in with_lcc if c.level == 0 for m in c.members) == [0, 1, 2]
    assert info["graph_nodes"] == 5 and info["clustered_nodes"] == 3
    without, _ = hierarchical_leiden(6, edges, 10, seed=0, use_lcc=False)
    assert sorted(m for c in without if c.level == 0 for m in c.members) == [
        0,
        1,
        2,
        3,
        4,
    ]  # 5 has no edge
    assert hierarchical_leiden(3, [], 10)[0] == []
    with pytest.raises(ValueError, match="memory.communities.backend"):
        hierarchical_leiden(3, edges, 10, backend="louvain")


def a_graph() -> tuple[Graph, list[list[int]]]:
    """Five entities in a path with a hub: relation ranks differ so the ordering is visible."""
    names = ["ALPHA", "BETA", "GAMMA", "DELTA", "EPSILON"]
    g = Graph(
        entities=[
            Entity(
                name=n,
                type="PERSON",
                descriptions=[],
                chunks=[f"t{i}"],
                frequency=1,
                description=f"{n.lower()} does things",
            )
            for i, n in enumerate(names)
        ]
    )
    pairs = [(0, 1), (0, 2), (0, 3), (3, 4)]
    for a, b in pairs:
        g.relations.append(
            Relation(
                source=a,
                target=b,
                descriptions=[],
                chunks=[],
                weight=1.0,
                description=f"{names[a]} knows {names[b]}",
            )
        )
    for r in g.relations:
        g.entities[r.source].degree += 1
        g.entities[r.target].degree += 1
    for r in g.relations:
        r.rank = g.entities[r.source].degree + g.entities[r.target].degree
    incident = [
        [i for i, r in enumerate(g.relations) if e in (r.source, r.target)] for e in range(5)
    ]
    return g, incident


def test_report_context_ranks_relationships_by_degree_within_the_budget():
    g, incident = a_graph()
    builder = ContextBuilder(g, incident, WordTokenizer())
    full, used_full = builder.local_context([0, 1, 2, 3, 4])
    rows = full.split("-----Relationships-----\n")[1].splitlines()[1:]
    assert [r.split(",")[0] for r in rows] == [
        "2",
        "0",
        "1",
        "3",
    ]  # ALPHA-DELTA has the highest combined degree
    assert used_full == builder.local_tokens([0, 1, 2, 3, 4])
    trimmed, used = builder.local_context([0, 1, 2, 3, 4], max_tokens=used_full - 1)
    assert used <= used_full - 1 and "DELTA,EPSILON" not in trimmed and "ALPHA,DELTA" in trimmed


def test_sub_community_reports_replace_a_context_that_is_too_large():
    g, incident = a_graph()
    builder = ContextBuilder(g, incident, WordTokenizer())
    parent = Community(key=0, level=0, members=[0, 1, 2, 3, 4], children=[1, 2])
    subs = [
        Community(key=1, level=1, members=[0, 1, 2], parent=0),
        Community(key=2, level=1, members=[3, 4], parent=0),
    ]
    by_key = {c.key: c for c in [parent, *subs]}
    from memharness.memsys.graphrag.reports import Report

    reports = {
        1: Report(key=1, status="parsed", title="Alpha group", summary="short"),
        2: Report(key=2, status="parsed", title="Delta pair", summary="short"),
    }
    small = builder.local_tokens([0, 1, 2, 3, 4]) - 1
    text, used = builder.community_context(parent, by_key, reports, small)
    assert (
        "-----Reports-----" in text and "Alpha group" in text
    )  # the larger sub-community is replaced first
    assert "Delta pair" not in text and "DELTA,EPSILON" in text and used <= small
    fits, _ = builder.community_context(parent, by_key, reports, 10_000)
    assert "-----Reports-----" not in fits  # under the budget: its own local context


def test_reports_deepest_level_first_one_batch_per_level_and_failures_counted():
    g, incident = a_graph()
    communities = [
        Community(key=0, level=0, members=[0, 1, 2, 3, 4], children=[1, 2]),
        Community(key=1, level=1, members=[0, 1, 2], parent=0),
        Community(key=2, level=1, members=[3, 4], parent=0),
    ]
    replies = {"ALPHA": report_json("Alpha group", 7), "DELTA": "not json at all"}

    def respond(step, request):
        data = request.messages[-1][1].split("Data:\n", 1)[1]
        assert request.json_output
        if "1,BETA," in data and "4,EPSILON," in data:
            return None  # the top community (all five entity rows) fails
        return replies["ALPHA" if "1,BETA," in data else "DELTA"]

    llm, log = StepLLM(respond), FailureLog()
    reports, record = generate_reports(
        llm,
        ContextBuilder(g, incident, WordTokenizer()),
        communities,
        ReportSettings(prompt=default_prompts()["report_prompt"]),
        log,
    )
    assert [len(b) for b in llm.batches] == [2, 1] and llm.steps() == ["report", "report"]
    assert reports[1].ok and reports[1].title == "Alpha group" and reports[1].rating == 7
    assert reports[1].text.startswith(
        "# Alpha group\n\nAbout Alpha group.\n\n## Alpha group finding"
    )
    assert reports[2].status == "unparsed" and reports[0].status == "failed"
    assert log.counts == {"report_unparsed": 1, "report_failed": 1}
    assert record == {
        "calls": 3,
        "failed": 1,
        "unparsed": 1,
        "batches": [{"level": 1, "calls": 2}, {"level": 0, "calls": 1}],
    }


def test_report_parsing_counts_missing_ratings_and_bad_findings():
    log = FailureLog()
    r = parse_report(
        3,
        json.dumps(
            {
                "title": "T",
                "summary": "S",
                "rating": "high",
                "findings": [{"summary": "a", "explanation": "b"}, "oops"],
            }
        ),
        log,
    )
    assert r.ok and r.rating == 0.0 and len(r.findings) == 1
    assert log.counts == {"rating_missing": 1, "finding_malformed": 1}
    assert parse_report(4, '{"rating": 5}', log).status == "unparsed"


def test_report_context_per_entity_keeps_one_relationship_per_member_as_graphrags_code():
    """GraphRAG's context builder gives each member entity one edge (its first as source, else its
    first as target), so ALPHA-DELTA, the highest-ranked relationship, never reaches the context:
    every member already brought another."""
    g, incident = a_graph()
    every = ContextBuilder(g, incident, WordTokenizer())
    one = ContextBuilder(g, incident, WordTokenizer(), relationships="per_entity")

    def edge_ids(builder):
        text, _ = builder.local_context([0, 1, 2, 3, 4])
        return [
            r.split(",")[0] for r in text.split("-----Relationships-----\n")[1].splitlines()[1:]
        ]

    assert edge_ids(every) == ["2", "0", "1", "3"]
    assert edge_ids(one) == ["0", "1", "3"]
    assert one.local_tokens([0, 1, 2, 3, 4]) < every.local_tokens([0, 1, 2, 3, 4])


def test_without_substitution_an_over_budget_context_is_trimmed_as_graphrags_code_does():
    from memharness.memsys.graphrag.reports import Report

    g, incident = a_graph()
    parent = Community(key=0, level=0, members=[0, 1, 2, 3, 4], children=[1, 2])
    subs = [
        Community(key=1, level=1, members=[0, 1, 2], parent=0),
        Community(key=2, level=1, members=[3, 4], parent=0),
    ]
    by_key = {c.key: c for c in [parent, *subs]}
    reports = {k: Report(key=k, status="parsed", title=f"Group {k}", summary="s") for k in (1, 2)}
    builder = ContextBuilder(g, incident, WordTokenizer(), substitution=False)
    small = builder.local_tokens([0, 1, 2, 3, 4]) - 1
    text, used = builder.community_context(parent, by_key, reports, small)
    assert "-----Reports-----" not in text and "Group 1" not in text and used <= small
    assert text == builder.local_context([0, 1, 2, 3, 4], max_tokens=small)[0]
    paper = ContextBuilder(g, incident, WordTokenizer())  # the default substitutes (the paper)
    assert "-----Reports-----" in paper.community_context(parent, by_key, reports, small)[0]
