"""Which prompt a request carries, recognised from the prompt templates in conf/.

``FAMILIES`` is the table: one entry per prompt config key (``<file under conf/>:<dotted key>``) naming
the reply family the rehearsal backend answers it with. The templates themselves are read from the
config files, so a request is recognised by the template's own literal text (every fixed piece of
it, in order), and the placeholders' values (``{context}``, ``{question}``, ...) are read back out of
the prompt. A prompt no template matches is ``unrecognised`` (a generic summary-like reply, counted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from memharness.memsys.services.types import ConfigError

# <conf file>:<dotted key> -> reply family (memsys/testing/rehearsal_replies.py REPLIES)
FAMILIES: dict[str, str] = {
    # summaries and aggregations: a share of the input's sentences
    "memory/memtree.yaml:aggregate_prompt": "summary",
    "memory/raptor.yaml:summaries.prompt": "summary",
    "memory/cam.yaml:summaries.prompt": "summary",
    "memory/history_summary.yaml:incremental_prompt": "summary",
    "memory/history_summary.yaml:one_shot_prompt": "summary",
    "memory/graphrag.yaml:prompts.summarize_prompt": "summary",
    "memory/structmem.yaml:prompts.summaries": "summary",
    "memory/memgpt.yaml:prompts.summary_prompt": "summary",
    "memory/readagent.yaml:gists.prompt": "summary",
    # GraphRAG-lite extraction, reports and global search
    "memory/graphrag.yaml:prompts.extract_prompt": "graph_records",
    "memory/graphrag.yaml:prompts.extract_json_prompt": "graph_json",
    "memory/graphrag.yaml:prompts.continue_prompt": "graph_glean",
    "memory/graphrag.yaml:prompts.loop_prompt": "graph_loop",
    "memory/graphrag.yaml:prompts.report_prompt": "graph_report",
    "memory/graphrag.yaml:prompts.map_prompt": "graph_map",
    "memory/graphrag.yaml:prompts.reduce_prompt": "answer",
    "memory/graphrag.yaml:prompts.reduce_mc_prompt": "choice",
    # HippoRAG
    "memory/hipporag.yaml:prompts.ner_prompt": "ner",
    "memory/hipporag.yaml:prompts.query_ner_prompt": "ner",
    "memory/hipporag.yaml:prompts.triple_prompt": "openie",
    "memory/hipporag.yaml:prompts.filter_prompt": "fact_filter",
    # structural memory
    "memory/structmem.yaml:prompts.triples": "numbered_triples",
    "memory/structmem.yaml:prompts.atomic_facts": "atomic_facts",
    "memory/structmem.yaml:prompts.rerank": "rerank",
    "memory/structmem.yaml:prompts.thought": "thought",
    "memory/structmem.yaml:rerank.formats.json": "fragment",  # inserted into the rerank prompt
    "memory/structmem.yaml:rerank.formats.lines": "fragment",
    # MemoryStream, CAM, ReadAgent
    "memory/memorystream.yaml:importance_prompt": "rating",
    "memory/cam.yaml:selection.prompt": "selection",
    "memory/readagent.yaml:pagination.prompt": "page_break",
    "memory/readagent.yaml:lookup.prompt": "lookup",
    "memory/readagent.yaml:lookup.sequential_prompt": "lookup",
    # MemGPT-lite: the system prompt and every event message the loop queues
    "memory/memgpt.yaml:prompts.system_prompt": "agent_call",
    "memory/memgpt.yaml:prompts.warning_message": "agent_call",
    "memory/memgpt.yaml:prompts.heartbeat_message": "agent_call",
    "memory/memgpt.yaml:prompts.failed_heartbeat_message": "agent_call",
    "memory/memgpt.yaml:prompts.final_step_message": "agent_call",
    # answers
    "eval/default.yaml:answer.prompt": "answer",
    "eval/default.yaml:answer.mc_prompt": "choice",
    "eval/default.yaml:answer.claim_prompt": "claim",
    "eval/default.yaml:closed_book.prompt": "answer",
    "eval/default.yaml:closed_book.mc_prompt": "choice",
    "eval/structmem.yaml:answer.prompt": "answer",
    "eval/structmem.yaml:answer.mc_prompt": "choice",
    "eval/summary.yaml:answer.prompt": "answer",
    "answer_prompt/cot.yaml:prompt": "answer_cot",
    "answer_prompt/locomo.yaml:prompt": "answer",
    "answer_prompt/longmemeval.yaml:prompt": "answer",
    "per_memory/memtree_table1/history_summary.yaml:eval.answer.prompt": "answer",
    # judges
    "eval/default.yaml:judge.prompt": "verdict_digit",
    "eval/default.yaml:judge_audit.lenient_prompt": "verdict_digit",
    "eval/default.yaml:forget_judge.leak_prompt": "verdict_digit",
    "eval/default.yaml:forget_judge.abstain_prompt": "verdict_abstain",
    "eval/default.yaml:judge_audit.wrong_prompt": "wrong_answer",
    "judge/prompts/locomo.yaml:prompts.default": "verdict_label",
    "judge/official/longmemeval.yaml:prompts.single-session-user": "verdict_yes_no",
    "judge/official/longmemeval.yaml:prompts.single-session-assistant": "verdict_yes_no",
    "judge/official/longmemeval.yaml:prompts.multi-session": "verdict_yes_no",
    "judge/official/longmemeval.yaml:prompts.temporal-reasoning": "verdict_yes_no",
    "judge/official/longmemeval.yaml:prompts.knowledge-update": "verdict_yes_no",
    "judge/official/longmemeval.yaml:prompts.single-session-preference": "verdict_yes_no",
    "judge/official/longmemeval.yaml:abstention_prompt": "verdict_yes_no",
    "judge/official/cam_acc_l.yaml:prompts.default": "verdict_yes_no",
    "judge/official/beam.yaml:prompts.default": "nugget_score",
    "judge/official/beam.yaml:equivalence_prompt": "verdict_yes_no",
    # the MSC-E generator (data_prep/msc_e.py)
    "dataset/msc_e.yaml:generator.continue_prompt": "dialogue",
    "dataset/msc_e.yaml:generator.qa_prompt": "qa_pairs",
}
UNRECOGNISED = "unrecognised"
MIN_LITERAL_CHARS = 30  # a template recognised by less fixed text would match unrelated prompts
CONF = Path(__file__).resolve().parents[2] / "conf"
_PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_\-]*)\}(?!\})")


@dataclass(frozen=True)
class Template:
    """One prompt template: its config key, family, literal pieces and a regex reading its fields."""

    key: str
    family: str
    pieces: tuple[str, ...]
    pattern: re.Pattern[str]
    literal_chars: int

    def fields(self, text: str) -> dict[str, str] | None:
        """The placeholders' values in ``text`` if every literal piece is there in order, else None."""
        if any(p not in text for p in self.pieces):
            return None
        match = self.pattern.search(text)
        return None if match is None else {k: v or "" for k, v in match.groupdict().items()}


def _literal(piece: str, dated: bool = False) -> str:
    """A regex for a literal piece, as str.format writes it ({{ -> {) or as given. ``dated``: the
    piece ends on the question's line, before which one whole line may be inserted (the answer
    prompt's ``now_line``, eval/run/answer.py with_now)."""

    def escape(text: str) -> str:
        return re.escape(text).replace(r"\{\{", r"\{\{?").replace(r"\}\}", r"\}\}?")

    if dated and "\n" in piece:
        head, tail = piece.rsplit("\n", 1)
        return escape(head) + r"(?:\n[^\n]*)?\n" + escape(tail)
    return escape(piece)


def compile_template(key: str, family: str, template: str) -> Template:
    """The literal pieces of ``template`` and a regex with one named group per placeholder (a
    placeholder used twice is read at its first place)."""
    parts = _PLACEHOLDER.split(template)
    literals, names = parts[0::2], parts[1::2]
    regex, seen = "", set()
    for i, literal in enumerate(literals):
        regex += _literal(literal, dated=i < len(names) and names[i] == "question")
        if i < len(names):
            name = re.sub(r"\W", "_", names[i])
            last = i == len(names) - 1 and not literals[-1].strip()
            group = ".*" if last else ".*?"  # a trailing placeholder runs to the end
            regex += f"(?P<{name}>{group})" if name not in seen else group
            seen.add(name)
    pieces = tuple(
        line.replace("{{", "{").replace("}}", "}").strip()
        for lit in literals
        for line in lit.split("\n")
        if len(line.strip()) >= 8
    )
    literal_chars = sum(len(p) for p in pieces)
    return Template(key, family, pieces, re.compile(regex, re.DOTALL), literal_chars)


def _lookup(node: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


@lru_cache(maxsize=4)
def load_templates(conf_dir: str = str(CONF)) -> tuple[Template, ...]:
    """Every template of ``FAMILIES``, read from ``conf_dir``, most literal text first (a template
    that contains another one's text wins over it). A missing file or key, or a template with too
    little fixed text to be recognised by, is a ConfigError naming it."""
    out, files = [], {}
    for key, family in FAMILIES.items():
        path, dotted = key.split(":", 1)
        if path not in files:
            file = Path(conf_dir) / path
            if not file.is_file():
                raise ConfigError(
                    f"llm.backend.conf_dir: {conf_dir} has no {path} (rehearsal: {key})"
                )
            files[path] = yaml.safe_load(file.read_text(encoding="utf-8"))
        text = _lookup(files[path], dotted)
        if not isinstance(text, str):
            raise ConfigError(f"llm.backend.conf_dir: {key} is not a prompt in {conf_dir}")
        template = compile_template(key, family, text)
        if template.literal_chars < MIN_LITERAL_CHARS:
            raise ConfigError(f"rehearsal: {key} has too little fixed text to be recognised by")
        out.append(template)
    return tuple(sorted(out, key=lambda t: -t.literal_chars))


def recognise(
    messages: tuple[tuple[str, str], ...], templates: tuple[Template, ...]
) -> tuple[Template | None, dict[str, str]]:
    """The template a request was written from: the last message's first, then any earlier one's
    (GraphRAG's gleaning turns, MemGPT's system prompt); ``(None, {})`` when none matches."""
    order = [messages[-1][1]] + [c for _, c in reversed(messages[:-1])] if messages else []
    for text in order:
        for template in templates:
            if template.family == "fragment":
                continue  # a piece of another prompt, not a prompt of its own
            fields = template.fields(text)
            if fields is not None:
                return template, fields
    return None, {}
