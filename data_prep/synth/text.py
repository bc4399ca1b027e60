"""Seeded, topic-structured text shared by the generated shapes: topics, sentences, planted facts.

Every topic has its own content words, people and places, so a session, article or chapter written
on one topic reads as being about it (and a bag-of-words embedding puts it near the others on that
topic). Sentences are filled from templates written for this generator; a ``Filler`` adds them
until a token budget is met, counting each sentence once with the harness tokenizer (cl100k_base;
its pre-tokenizer never merges across the space between two sentences, so the sum is the count of
the joined text). Planted facts are entity-attribute-value statements whose values come from pools
no filler sentence draws from, so a question about one has exactly one answer in the text.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from datetime import datetime, timedelta

from memharness.data_prep.synth.vocabulary import (
    HELPER_NAMES,
    TOPICS,
    VALUE_WORDS_A,
    VALUE_WORDS_B,
    VALUE_WORDS_C,
    Topic,
)
from memharness.memsys.services.tokens import get_tokenizer


class SynthError(ValueError):
    """A malformed generation request; the message is one line."""


TIMES = (
    "last weekend",
    "on Tuesday morning",
    "this spring",
    "after lunch",
    "over the holidays",
    "yesterday evening",
    "early on Saturday",
    "last month",
    "at the end of the week",
    "before work",
)
NUMBERS = ("two", "three", "four", "five", "ten", "twenty", "forty", "a hundred")

USER_TEMPLATES = (
    "I {past} the {adj} {noun} near {place} {time}.",
    "{person} thinks the {noun} works better with a {adj} {noun2}.",
    "We spent most of the time {time} on the {noun}, and it turned out {adj}.",
    "The {noun} at {place} was more {adj} than I expected.",
    "A friend suggested pairing the {noun} with the {noun2}.",
    "My notes say the {noun} needs about {num} minutes before the {noun2} is ready.",
    "{person} asked whether the {noun} from {place} was worth it.",
    "Honestly, the {adj} {noun} is the part I enjoy most.",
    "There was a short talk at {place} about the {noun} and the {noun2}.",
    "Next time I want to {base} the {noun} before the {noun2}.",
    "I am still not sure if the {noun} should be this {adj}.",
    "Do you think I should {base} the {noun} again {time}?",
)
ASSISTANT_TEMPLATES = (
    "A good rule is to {base} the {noun} before you touch the {noun2}.",
    "Many people find that a {adj} {noun} lasts longer than expected.",
    "You could also check whether the {noun2} at {place} fits your plan.",
    "Keep an eye on the {noun}, since small changes add up over {num} days.",
    "One option is to compare the {noun} with a {adj} {noun2} side by side.",
    "In general, the {noun} and the {noun2} work well together when both are {adj}.",
    "If the {noun} feels too {adj}, try to {base} the {noun2} first and wait a little.",
    "It is worth writing down how you {past} the {noun}, so you can repeat it.",
    "{person} often recommends starting with the {noun} and leaving the {noun2} for later.",
    "That sounds like a sensible plan for the {noun}.",
)
NARRATIVE_TEMPLATES = (
    "{person} {past} the {adj} {noun} at {place} {time}.",
    "At {place}, the {noun} looked {adj} in the grey light.",
    "Nobody at {place} had expected the {noun} to be so {adj}.",
    "{person} said little, but kept an eye on the {noun2}.",
    "The talk turned to the {noun} and then, slowly, to the {noun2}.",
    "By evening the {noun} was {adj}, and {person} was pleased.",
    "{num} people gathered at {place} to see the {noun}.",
    "It was {time} when {person} first mentioned the {noun2}.",
    "Some said the {noun} was the reason things at {place} had changed.",
    "{person} wanted to {base} the {noun} before anyone noticed.",
)


class Filler:
    """Sentences on one topic until a token budget is met; counts as it goes (cl100k_base)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._count = get_tokenizer("cl100k_base").count

    def sentence(self, topic: Topic, templates: tuple[str, ...]) -> str:
        u = self.rng.random  # indexing by u() is ~3x faster than rng.choice, which dominated

        def pick(seq):
            return seq[int(u() * len(seq))]

        nouns = topic.nouns
        i = int(u() * len(nouns))
        j = (i + 1 + int(u() * (len(nouns) - 1))) % len(nouns)  # a second, different noun
        base, past = pick(topic.verbs)
        text = pick(templates).format(
            noun=nouns[i],
            noun2=nouns[j],
            base=base,
            past=past,
            adj=pick(topic.adjectives),
            person=pick(topic.people),
            place=pick(topic.places),
            time=pick(TIMES),
            num=pick(NUMBERS),
        )
        return text[0].upper() + text[1:]

    def count(self, text: str) -> int:
        return self._count(text)

    def fill(
        self, topic: Topic, budget: int, templates: tuple[str, ...], lead: str = ""
    ) -> tuple[str, int]:
        """``lead`` (if any) then sentences until ``budget`` tokens; the text and its count."""
        parts = [lead] if lead else []
        used = self._count(lead) if lead else 0
        while used < budget or not parts:
            s = self.sentence(topic, templates)
            n = self._count(" " + s if parts else s)
            if parts and used + n - budget > budget - used:  # closer to the budget without it
                break
            used += n
            parts.append(s)
        return " ".join(parts), used


@dataclass(frozen=True)
class FactKind:
    """One attribute a fact can state: how it is said (first / third person) and asked."""

    name: str
    say: str  # {who} {poss} {noun} {value}
    ask_you: str  # second person, {noun}
    ask_3rd: str  # third person, {who} {poss} {noun}
    update: str  # the knowledge update's lead-in, before the new statement


FACT_KINDS: tuple[FactKind, ...] = (
    FactKind(
        "name",
        "{who} named {poss} new {noun} {value}.",
        "What did I name my new {noun}?",
        "What did {who} name {poss} new {noun}?",
        "Small change of plan:",
    ),
    FactKind(
        "shop",
        "{who} bought the {noun} at a small shop called {value}.",
        "Where did I buy the {noun}?",
        "Where did {who} buy the {noun}?",
        "Correction about the {noun}:",
    ),
    FactKind(
        "brand",
        "The {noun} {who} settled on is made by {value}.",
        "Which maker's {noun} did I settle on?",
        "Which maker's {noun} did {who} settle on?",
        "Update on the {noun}:",
    ),
    FactKind(
        "helper",
        "{value} helped {who_obj} with the {noun} {time}.",
        "Who helped me with the {noun}?",
        "Who helped {who} with the {noun}?",
        "Actually, the help changed:",
    ),
)
HELPER = FACT_KINDS[3]
# A year: the releases' integer golds (LoCoMo's 2022, LongMemEval's numbers); first person or a name.
YEAR = FactKind(
    "year",
    "{who} got the {noun} back in {value}.",
    "In what year did I get the {noun}?",
    "In what year did {who} get the {noun}?",
    "Correction about the {noun}:",
)
YEARS = range(1985, 2023)
EVENT = FactKind(
    "event", "", "", "", ""
)  # a dated visit ("the <noun> meetup at <place>"): a subject key


class Values:
    """Distinct fact values for one episode: helper names, else pairs of value words; once the
    pairs of a kind grow scarce, a third word (helpers: a middle initial) widens the space. Also
    the subjects already asked about, so no two questions of an episode share one."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.used, self.asked = rng, set(), set()

    def subject(self, what: str, nouns: tuple[str, ...], *scope: str, spill: bool = True) -> str:
        """A noun of ``nouns`` (else, with ``spill``, of any topic) no question of this episode
        has asked ``what`` about within ``scope``; "" when ``spill`` is off and none is left."""
        pools = [list(nouns)] + ([[n for t in TOPICS for n in t.nouns]] if spill else [])
        for pool in pools:
            free = [n for n in pool if (what, n, *scope) not in self.asked]
            if free:
                noun = self.rng.choice(free)
                self.asked.add((what, noun, *scope))
                return noun
        if spill:
            raise SynthError(f"every subject is taken for {what!r}; ask for fewer questions")
        return ""

    def years_left(self) -> int:
        return sum(str(y) not in self.used for y in YEARS)

    def draw(self, kind: FactKind) -> str:
        r = self.rng
        if kind is YEAR:
            left = [str(y) for y in YEARS if str(y) not in self.used]
            if not left:
                raise SynthError("ran out of distinct years; ask for fewer questions per episode")
            self.used.add(value := r.choice(left))
            return value
        for attempt in range(1_000):
            wide = attempt >= 20  # twenty collisions in a row: the narrow space is nearly used up
            if kind.name == "helper":
                first, last = r.choice(HELPER_NAMES).split()[0], r.choice(HELPER_NAMES).split()[1]
                value = (
                    f"{first} {r.choice(string.ascii_uppercase)}. {last}"
                    if wide
                    else f"{first} {last}"
                )
            else:
                a, b = r.choice(VALUE_WORDS_A).title(), r.choice(VALUE_WORDS_B)
                value = {"name": f"{a} {b.title()}", "shop": f"The {a} {b.title()}"}.get(
                    kind.name, f"{a}{b}"
                )
                if wide:
                    value += f" {r.choice(VALUE_WORDS_C)}"
            if value not in self.used:
                self.used.add(value)
                return value
        raise SynthError("ran out of distinct fact values; ask for fewer questions per episode")


def fact_kind(rng: random.Random, values: Values) -> FactKind:
    """A kind for a single-fact question: a year one time in ten while two years are left (the
    integer golds), else a name, a shop or a maker."""
    if rng.random() < 0.1 and values.years_left() >= 2:
        return YEAR
    return rng.choice(FACT_KINDS[:3])


def gold(kind: FactKind, value: str) -> str | int:
    """The gold as the release writes it: a year as an integer."""
    return int(value) if kind is YEAR else value


def say_fact(kind: FactKind, who: str, noun: str, value: str, rng: random.Random) -> str:
    """The sentence stating a fact; ``who`` is "I" or a name."""
    first = who == "I"
    text = kind.say.format(
        who=who,
        who_obj="me" if first else who,
        poss="my" if first else "their",
        noun=noun,
        value=value,
        time=rng.choice(TIMES),
    )
    return text[0].upper() + text[1:]


def allocate(n: int, weights: dict[str, int]) -> dict[str, int]:
    """``n`` split over the keys in proportion to ``weights`` (largest remainder, ties by order)."""
    total = sum(weights.values())
    exact = {k: n * w / total for k, w in weights.items()}
    out = {k: int(v) for k, v in exact.items()}
    order = sorted(weights, key=lambda k: (out[k] - exact[k], list(weights).index(k)))
    for k in order[: n - sum(out.values())]:
        out[k] += 1
    return out


def spread(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal integers (the first ones one larger)."""
    q, r = divmod(total, parts)
    return [q + (i < r) for i in range(parts)]


def start_date(rng: random.Random, year: int = 2023) -> datetime:
    """A seeded start in the first half of ``year`` (never the wall clock)."""
    return datetime(year, 1, 2, 8, 0) + timedelta(
        days=rng.randrange(150), minutes=rng.randrange(600)
    )


def hex_id(rng: random.Random, n: int = 8) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def written(
    files: list, overrides: list[str], per_episode: list[int], questions: int, strata: dict
) -> dict:
    """What a shape's writer returns to ``memharness synth``: its files, the Hydra overrides that
    load them, the tokens written (in all and per episode) and the questions per stratum."""
    return {
        "files": files,
        "overrides": overrides,
        "tokens": sum(per_episode),
        "tokens_per_episode": {"min": min(per_episode), "max": max(per_episode)},
        "questions": questions,
        "episodes": len(per_episode),
        "strata": dict(sorted(strata.items())),
    }
