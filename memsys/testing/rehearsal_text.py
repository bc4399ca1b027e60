"""Text pieces of the rehearsal backend: content words, sentences, extractive summaries, entities,
and ``Ask``, what a reply builder sees of a request.

Everything here is a pure function of its input (no model, no randomness), so a rehearsal reply is
a function of the request alone and the call cache serves repeats.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each even ever few for
    from further get got had has have having he her here hers herself him himself his how i if in into
    is it its itself just like me more most much my myself no nor not now of off on once only or other
    our ours ourselves out over own really said same say says she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up upon us
    very was we well were what when where which while who whom why will with would yeah yes you your
    yours yourself yourselves oh ok okay speaker one two three many lot lots thing things something
    anything everything still back going go goes went make made know think thought want let us since
    though whether every another may might must shall dont im ive youre thats doesnt didnt
    hi hello great thanks thank sure session really""".split()
)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CAPITAL = re.compile(r"\b([A-Z][A-Za-z0-9'\-]+(?:\s+[A-Z][A-Za-z0-9'\-]+)*)")
_OPENER = re.compile(r"(?:^|[.!?:\]\n]\s*|\n)$")  # what comes before a sentence's first word


def stem(word: str) -> str:
    """A crude suffix stripper, so "hikes", "hiking" and "hiked" share a dimension."""
    w = word.lower().strip("'-")
    w = w[:-2] if w.endswith("'s") else w
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


@lru_cache(maxsize=1 << 18)
def _content(raw: str) -> str:
    """A word's content form: its stem, the number itself, or "" for a stopword or a letter."""
    low = raw.lower().strip("'-")
    if low.isdigit():
        return low
    if len(low) > 1 and low.replace("'", "") not in STOPWORDS:
        return stem(low)
    return ""


def content_words(text: str) -> list[str]:
    """The text's words that carry content: lower-cased, stemmed, stopwords and 1-letter words out."""
    return [c for c in map(_content, _WORD.findall(text)) if c]


def sentences(text: str) -> list[str]:
    """The text cut at sentence ends and line breaks, empty pieces dropped."""
    return [s.strip() for s in _SENTENCE.split(text or "") if s and s.strip()]


def overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Token F1 of two word lists (0 when either is empty)."""
    ca, cb = Counter(a), Counter(b)
    common = sum((ca & cb).values())
    if not common:
        return 0.0
    precision, recall = common / sum(ca.values()), common / sum(cb.values())
    return 2 * precision * recall / (precision + recall)


def extractive_summary(text: str, share: float, max_words: int, min_sentences: int = 1) -> str:
    """A share of the text's sentences, those whose content words are most frequent in the whole
    text, kept in their order and cut to ``max_words`` words: a summary of realistic length that
    shares the input's topic words."""
    sents = sentences(text)
    if not sents:
        return ""
    per_sentence = [content_words(s) for s in sents]
    freq = Counter(w for words in per_sentence for w in words)
    keep = max(min_sentences, round(len(sents) * share))

    def score(i: int) -> float:
        words = per_sentence[i]
        return sum(freq[w] for w in set(words)) / (1 + len(words)) ** 0.5

    best = sorted(sorted(range(len(sents)), key=score, reverse=True)[:keep])
    words = " ".join(sents[i] for i in best).split()
    return " ".join(words[: max(1, max_words)])


def entities(text: str, limit: int) -> list[str]:
    """Names in the text: runs of capitalised words, stopwords out, seen at least once inside a
    sentence or of two words or more (a capital at a sentence's start alone is no name), most
    frequent first, ties in order of appearance; topped up with the most frequent content words."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    inside: set[str] = set()
    for match in _CAPITAL.finditer(text):
        words = [w for w in match.group(1).split() if w.lower().replace("'", "") not in STOPWORDS]
        name = " ".join(words)
        if len(name) > 1:
            counts[name] += 1
            first.setdefault(name, match.start())
            opener = _OPENER.search(text[max(0, match.start() - 3) : match.start()])
            if len(words) > 1 or not opener:
                inside.add(name)
    names = sorted((n for n in counts if n in inside), key=lambda n: (-counts[n], first[n]))
    if len(names) < limit:
        seen = {n.lower() for n in names}
        frequent = Counter(
            w.lower() for w in _WORD.findall(text) if w.lower().replace("'", "") not in STOPWORDS
        )
        for word, _ in frequent.most_common():
            if len(names) >= limit:
                break
            if len(word) > 3 and word not in seen and not word.isdigit():
                names.append(word)
                seen.add(word)
    return names[:limit]


def best_sentence(context: str, question: str) -> str:
    """The context's sentence sharing the most content words with the question ("" without context)."""
    q = set(content_words(question))
    sents = sentences(context)
    if not sents:
        return ""
    return max(sents, key=lambda s: (len(q & set(content_words(s))), -len(s)))


def answer_words(context: str, question: str, max_words: int = 6) -> str:
    """A short answer: the content words of the context sentence nearest the question that the
    question does not already say; "unknown" when the context has nothing."""
    sentence = best_sentence(context, question)
    q = set(content_words(question))
    words = [
        w
        for w in _WORD.findall(sentence)
        if stem(w) not in q and content_words(w) and not (w.isdigit() and len(w) == 1)
    ]
    return " ".join(words[:max_words]) or "unknown"


def pairs(names: Sequence[str]) -> list[tuple[str, str]]:
    """Consecutive pairs of names (the chain a relation extraction links)."""
    return list(zip(names, names[1:], strict=False))


@dataclass(frozen=True)
class Ask:
    """What a builder sees: the prompt's fields, the request's messages and its output settings."""

    fields: dict[str, str]
    messages: tuple[tuple[str, str], ...]
    max_tokens: int
    choices: tuple[str, ...] | None = None
    summary_share: float = 0.4
    extras: dict[str, Any] = field(default_factory=dict)

    def get(self, *names: str) -> str:
        """The first of ``names`` the prompt has, else ""."""
        return next((self.fields[n] for n in names if self.fields.get(n)), "")

    @property
    def words(self) -> int:
        """Words a free-text reply may have: three quarters of its token cap."""
        return max(1, int(self.max_tokens * 0.75))

    def question(self) -> str:
        """The question: a field of the prompt, else the last user message (a system-held prompt)."""
        return self.get("question", "query") or self.messages[-1][1]
