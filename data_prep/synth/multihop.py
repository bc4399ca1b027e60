"""MultiHop-RAG-shaped ``corpus.json`` (news articles) and ``MultiHopRAG.json`` (queries).

Articles have the corpus fields (title, author, source, published_at, category, url, body), one
topic each, dated September to December 2023; queries have query, answer, question_type and an
``evidence_list`` of {title, author, url, source, category, published_at, fact}, every fact a
sentence of its article's body (the official retrieval metric looks for it there). Types in the
released counts (inference 816, comparison 856, temporal 583, null 301 of 2,556); a null query has
the answer "Insufficient information." and no evidence. Articles are planned first (metadata and
the facts they carry), then written one at a time; the queries, small, come last.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

from memharness.data_prep.synth.text import (
    FACT_KINDS,
    NARRATIVE_TEMPLATES,
    Filler,
    Values,
    allocate,
    hex_id,
    spread,
)
from memharness.data_prep.synth.vocabulary import TOPICS

TYPES = {"inference_query": 816, "comparison_query": 856, "temporal_query": 583, "null_query": 301}
REAL_TOKENS = (
    1_460_000  # corpus.json 6.79 MB over 609 articles: ~10.8k body characters, ~2.4k tokens each
)
ARTICLE_TOKENS = REAL_TOKENS // 609  # 609 articles at the default size
PARAGRAPH_TOKENS = 150
SOURCES = (
    "The Cedar Ledger",
    "Harbor Wire",
    "Northgate Times",
    "Pixel Dispatch",
    "Field & Court",
    "The Morning Quill",
    "Civic Review",
    "Signal Daily",
    "Lakeside Post",
    "Market Watchtower",
    "The Science Desk",
    "Wellness Weekly",
)
NULL_ANSWER = "Insufficient information."
BRAND = FACT_KINDS[2]


def plan_articles(n: int, rng: random.Random) -> list[dict]:
    """Article metadata (no body yet) with an empty list of facts to carry."""
    start, arts, titles = datetime(2023, 9, 1, 6, 0), [], set()
    for i in range(n):
        topic = rng.choice(TOPICS)
        when = start + timedelta(minutes=rng.randrange(122 * 24 * 60))
        adj, noun = rng.choice(topic.adjectives).title(), rng.choice(topic.nouns)
        title = f"{adj} {noun} news from {rng.choice(topic.places).removeprefix('the ')}"
        while title in titles:  # titles are unique upstream
            title += f" ({hex_id(rng, 4)})"
        titles.add(title)
        slug = "-".join(title.lower().replace("(", "").replace(")", "").split())
        arts.append(
            {
                "title": title,
                "author": rng.choice([None, *topic.people]),
                "source": rng.choice(SOURCES),
                "published_at": when.strftime("%Y-%m-%dT%H:%M:%S+00:00"),
                "category": topic.category,
                "url": f"https://news.example.invalid/{when:%Y/%m/%d}/{i}-{slug}",
                "_topic": topic,
                "_facts": [],
            }
        )
    return arts


def plan_queries(n: int, arts: list[dict], rng: random.Random) -> list[dict]:
    """Queries with evidence facts placed into the articles (``_facts``)."""
    values, out = Values(rng), []
    types = [t for t, c in allocate(n, TYPES).items() for _ in range(c)]
    rng.shuffle(types)

    by_topic: dict[str, list[dict]] = {}
    for art in arts:
        by_topic.setdefault(art["_topic"].name, []).append(art)

    def pick() -> list[dict]:
        """Two articles, on one topic and from two sources where the corpus has such a pair."""
        a = rng.choice(arts)
        same = [x for x in by_topic[a["_topic"].name] if x["source"] != a["source"]]
        b = rng.choice(same or [x for x in arts if x is not a])
        return sorted((a, b), key=lambda art: art["published_at"])

    def fact(art: dict, text: str) -> dict:
        art["_facts"].append(text)
        keys = ("title", "author", "url", "source", "category", "published_at")
        return {**{k: art[k] for k in keys}, "fact": text}

    for qtype in types:
        if qtype == "null_query":
            noun = rng.choice(rng.choice(TOPICS).nouns)
            q = f"Which company did the reports credit for the {values.draw(BRAND)} {noun} recall?"
            out.append(
                {"query": q, "answer": NULL_ANSWER, "question_type": qtype, "evidence_list": []}
            )
            continue
        a, b = pick()
        noun = rng.choice(a["_topic"].nouns)  # the articles' facts are on the first one's topic
        if qtype == "inference_query":  # asked by sources and noun: no two may share them
            noun = values.subject(qtype, a["_topic"].nouns, *sorted((a["source"], b["source"])))
            firm = values.draw(BRAND)
            ev = [
                fact(a, f"{firm} announced a new {noun} line this week."),
                fact(b, f"Analysts said {firm} expects the {noun} line to sell out."),
            ]
            q = (
                f"Which company, covered by both {a['source']} and {b['source']}, announced a new "
                f"{noun} line that analysts expect to sell out?"
            )
            answer = firm
        elif qtype == "comparison_query":
            firm_a, firm_b = values.draw(BRAND), values.draw(BRAND)
            same = rng.random() < 0.5
            ev = [
                fact(a, f"{firm_a} raised prices for its {noun} products."),
                fact(b, f"{firm_b} {'raised' if same else 'cut'} prices for its {noun} products."),
            ]
            q = (
                f"Do {a['source']}'s report on {firm_a} and {b['source']}'s report on "
                f"{firm_b} both say that the company raised prices for its {noun} products?"
            )
            answer = "Yes" if same else "No"
        else:  # temporal: asked in either order, answered from the dates
            firm_a, firm_b = values.draw(BRAND), values.draw(BRAND)
            ev = [
                fact(a, f"{firm_a} opened a {noun} workshop downtown."),
                fact(b, f"{firm_b} opened a {noun} workshop by the river."),
            ]
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            name = {id(a): firm_a, id(b): firm_b}
            q = (
                f"Was {first['source']}'s report about {name[id(first)]} opening a {noun} "
                f"workshop published before {second['source']}'s report about {name[id(second)]}?"
            )
            answer = "Yes" if first is a and a["published_at"] < b["published_at"] else "No"
        out.append({"query": q, "answer": answer, "question_type": qtype, "evidence_list": ev})
    return out


def write_corpus(file: Path, arts: list[dict], tokens: int, rng: random.Random) -> list[int]:
    """corpus.json one article at a time; each article's tokens (its body)."""
    filler, per = Filler(rng), []
    sep = filler.count("\n\n")
    budget = spread(tokens, len(arts))
    with open(file, "w", encoding="utf-8") as f:
        f.write("[")
        for i, art in enumerate(arts):
            n_par = max(len(art["_facts"]), 1, round(budget[i] / PARAGRAPH_TOKENS))
            slots = dict(
                zip(
                    sorted(rng.sample(range(n_par), len(art["_facts"]))), art["_facts"], strict=True
                )
            )
            paragraphs, used = [], 0
            for p in range(n_par):
                text, n = filler.fill(
                    art["_topic"], budget[i] // n_par, NARRATIVE_TEMPLATES, slots.get(p, "")
                )
                paragraphs.append(text)
                used += n + (sep if p else 0)
            row = {k: v for k, v in art.items() if not k.startswith("_")}
            row["body"] = "\n\n".join(paragraphs)
            f.write((",\n" if i else "\n") + json.dumps(row))
            per.append(used)
        f.write("\n]\n")
    return per


def write(out: Path, questions: int, tokens: int, seed: int) -> dict:
    """One corpus of ``tokens`` tokens and ``questions`` queries over it."""
    rng = random.Random(f"{seed}:multihop")
    root = out
    root.mkdir(parents=True, exist_ok=True)
    arts = plan_articles(max(4, round(tokens / ARTICLE_TOKENS)), rng)
    queries = plan_queries(questions, arts, rng)
    per = write_corpus(root / "corpus.json", arts, tokens, rng)
    (root / "MultiHopRAG.json").write_text(json.dumps(queries, indent=1) + "\n", encoding="utf-8")
    types = {}
    for q in queries:
        types[q["question_type"]] = types.get(q["question_type"], 0) + 1
    return {
        "files": [root / "corpus.json", root / "MultiHopRAG.json"],
        "overrides": ["dataset=multihop", f"dataset.loader.path={root}"],
        "tokens": sum(per),
        "tokens_per_episode": {"min": sum(per), "max": sum(per), "articles": len(arts)},
        "questions": questions,
        "episodes": 1,
        "strata": dict(sorted(types.items())),
    }


def min_tokens(questions: int) -> int:
    """Two ~15-token facts per answerable query, plus four articles' headroom."""
    return 40 * questions + 800
