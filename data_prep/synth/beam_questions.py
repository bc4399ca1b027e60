"""BEAM's probing questions, one planner per ability, with the fields each ability has upstream.

A planned probe is the question object as the release writes it plus ``_ability`` and
``_statements``: the user messages to plant, in order, each with a callback that records the
message id it lands on into ``source_chat_ids`` (and ``conversation_references``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date, timedelta

from memharness.data_prep.synth.text import FACT_KINDS, HELPER, Values, say_fact
from memharness.data_prep.synth.vocabulary import TOPICS, Topic

Statement = tuple[str, Callable[[int], None]]


def _ids(probe: dict, key: str | None = None) -> Callable[[int], None]:
    """A callback appending a message id to source_chat_ids (or its ``key`` list)."""

    def record(mid: int) -> None:
        target = probe["source_chat_ids"] if key is None else probe["source_chat_ids"][key]
        target.append(mid)
        if isinstance(probe.get("conversation_references"), list):
            probe["conversation_references"].append(f"chat_id: {mid}")

    return record


def plan_probe(ability: str, topic: Topic, rng: random.Random, values: Values) -> dict:
    """One question of ``ability`` about ``topic`` and the statements that answer it."""
    kind = rng.choice(FACT_KINDS[:3])
    what = kind.name if ability in ("information_extraction", "knowledge_update") else ability
    noun, noun2, noun3 = (values.subject(what, topic.nouns) for _ in range(3))  # none asked twice
    p: dict = {"_ability": ability, "_statements": []}
    say: list[str] = []
    if ability == "abstention":
        other = rng.choice([n for t in TOPICS if t is not topic for n in t.nouns])
        p.update(
            question=kind.ask_you.format(noun=other),
            ideal_response=f"Based on the provided chat, there is no information about a {other}.",
            difficulty="easy",
            abstention_type="missing_detail",
            why_unanswerable=f"the {other} is never mentioned",
            plan_reference="Batch 1",
            rubric=[f"Based on the provided chat, there is no information about a {other}"],
        )
        return p
    if ability == "contradiction_resolution":
        past = rng.choice(topic.verbs)[1]
        say = [f"I have never {past} the {noun} myself.", f"Last week I {past} the {noun} again."]
        p.update(
            question=f"Have I ever {past} the {noun}?",
            ideal_answer=(
                f"You said you have never {past} the {noun}, but you also said you "
                f"{past} it again last week. Which is correct?"
            ),
            difficulty="clear",
            contradiction_type="never_statement_violation",
            topic_questioned=f"{past} the {noun}",
            conversation_references=[],
            tests_for="LLM should notice the contradiction and ask which statement holds",
            source_chat_ids={"first_statement": [], "second_statement": []},
            rubric=[
                "LLM response should state: there is contradictory information",
                f"LLM response should mention: never {past} the {noun}",
                f"LLM response should mention: {past} the {noun} again last week",
            ],
        )
        keys = ["first_statement", "second_statement"]
    elif ability == "event_ordering":
        items = [noun, noun2, noun3]
        say = [f"Today I started working on the {n}." for n in items]
        p.update(
            question=(
                f"In what order did I start on the {', the '.join(sorted(items)[:2])} and the "
                f"{sorted(items)[2]}? Mention ONLY three items."
            ),
            answer=" ".join(f"{i + 1}) the {n}" for i, n in enumerate(items)),
            difficulty="medium",
            ordering_type="mention_sequence",
            total_mentions=3,
            conversation_references=[],
            ordering_tested=[
                f"{o}: the {n}" for o, n in zip(("1st", "2nd", "3rd"), items, strict=True)
            ],
            source_chat_ids=[],
            rubric=[f"the {n}" for n in items],
        )
    elif ability in ("information_extraction", "knowledge_update"):
        value = values.draw(kind)
        say = [say_fact(kind, "I", noun, value, rng)]
        if ability == "information_extraction":
            p.update(
                question=kind.ask_you.format(noun=noun),
                answer=value,
                difficulty="easy",
                question_type="context_detail",
                conversation_reference=say[0],
                key_facts_tested=[f"{kind.name} of the {noun}"],
                source_chat_ids=[],
                rubric=[f"LLM response should state: {value}"],
            )
        else:
            new = values.draw(kind)
            say.append(f"{kind.update.format(noun=noun)} " + say_fact(kind, "I", noun, new, rng))
            p.update(
                question=kind.ask_you.format(noun=noun),
                answer=new,
                difficulty="easy",
                update_type=f"{kind.name}_change",
                tests_retention_of=f"the updated {kind.name}",
                conversation_references=[],
                potential_confusion=f"the earlier {value}",
                source_chat_ids={"original_info": [], "updated_info": []},
                rubric=[f"LLM response should state: {new}"],
            )
            keys = ["original_info", "updated_info"]
    elif ability in ("instruction_following", "preference_following"):
        if ability == "instruction_following":
            rule = f"Always give a numbered list when I ask about the {noun}."
            p.update(
                question=f"How should I look after the {noun}?",
                instruction_being_tested=rule,
                expected_compliance="Response should be a numbered list.",
                compliance_indicators=["numbered list"],
                non_compliance_signs=["plain paragraph"],
                difficulty="medium",
                instruction_type="format_instruction",
                source_chat_ids=[],
                rubric=["LLM response should contain: numbered list"],
            )
        else:
            pref = f"{rng.choice(topic.adjectives)} {noun2}"
            rule = f"For the {noun}, I prefer options with a {pref}."
            p.update(
                question=f"What should I try next for the {noun}?",
                preference_being_tested=rule,
                expected_compliance=f"Response should favour a {pref}.",
                compliance_indicators=[f"suggests a {pref}"],
                non_compliance_signs=[f"ignores the {pref}"],
                difficulty="medium",
                preference_type="decision_criteria",
                source_chat_ids=[],
                rubric=[f"LLM response should contain: suggests a {pref}"],
            )
        say = [rule]
    elif ability == "multi_session_reasoning":
        names = [values.draw(HELPER), values.draw(HELPER)]
        say = [say_fact(HELPER, "I", n, v, rng) for n, v in zip((noun, noun2), names, strict=True)]
        p.update(
            question=f"Who helped me with the {noun} and the {noun2}?",
            answer=f"{names[0]} and {names[1]}",
            difficulty="easy",
            reasoning_type="simple_cross_session_facts",
            sessions_required=2,
            conversation_references=[],
            reasoning_steps=[
                f"Find who helped with the {noun}.",
                f"Find who helped with the {noun2}.",
            ],
            source_chat_ids=[],
            rubric=[f"LLM response should state: {n}" for n in names],
        )
    elif ability == "summarization":
        steps = [f"set up the {noun}", f"fixed the {noun2}", f"finished the {noun3}"]
        say = [f"Progress note: I {s}." for s in steps]
        p.update(
            question=f"Can you summarise my progress on the {noun}, the {noun2} and the {noun3}?",
            ideal_summary=f"You {steps[0]}, then {steps[1]}, and finally {steps[2]}.",
            difficulty="medium",
            summarization_type="chronological_development",
            bullet_points_covered=3,
            conversation_sessions=[],
            key_elements_tested=steps,
            synthesis_required="the steps in order",
            source_chat_ids=[],
            rubric=[f"LLM response should contain: {s}" for s in steps],
        )
    else:  # temporal_reasoning
        first = date(2024, 1, 1) + timedelta(days=rng.randrange(200))
        gap = rng.randrange(3, 60)
        second = first + timedelta(days=gap)
        say = [
            f"The {noun} is due on {first:%B} {first.day}, {first.year}.",
            f"The {noun2} is due on {second:%B} {second.day}, {second.year}.",
        ]
        p.update(
            question=f"How many days are there between the {noun} and the {noun2} due dates?",
            answer=f"{gap} days",
            difficulty="easy",
            temporal_type="duration_calculation",
            time_points=[s.removesuffix(".") for s in say],
            conversation_references=[],
            calculation_required=f"{second.isoformat()} - {first.isoformat()} = {gap} days",
            source_chat_ids={"first_event": [], "second_event": []},
            rubric=[f"LLM response should state: {gap} days"],
        )
        keys = ["first_event", "second_event"]
    if isinstance(p.get("source_chat_ids"), dict):
        p["_statements"] = [(s, _ids(p, k)) for s, k in zip(say, keys, strict=True)]
    else:
        p["_statements"] = [(s, _ids(p)) for s in say]
    if "conversation_sessions" in p:
        p["_statements"] = [(s, _both(p, cb)) for s, cb in p["_statements"]]
    return p


def _both(probe: dict, record: Callable[[int], None]) -> Callable[[int], None]:
    def both(mid: int) -> None:
        record(mid)
        probe["conversation_sessions"].append(mid)

    return both
