"""Representatives ρ: one JSON community report per community, deepest level first.

Context of a community (GraphRAG ``graph_context/sort_context.py``, ``build_mixed_context.py``):

- its local context is two CSV tables, Entities (id, entity, description, degree) and
  Relationships (id, source, target, description, combined_degree), over its member entities and
  the relationships touching them. Relationships are taken in descending combined degree (ties:
  id), each with its member endpoints, until ``max_input_tokens`` would be passed (token counts
  are summed per table row);
- ``relationships``: ``all`` (ours) lists every relationship touching a member; ``per_entity`` (GraphRAG's
  code, ``graph_context/context_builder.py``: one edge per node, the first where it is the source,
  else the first where it is the target) lists at most one per member;
- a community whose whole local context is too large and that has sub-communities gets a mixed
  context instead: the sub-communities' reports replace their local context, the sub-community
  with the largest context first, until the rest fits; if even that does not fit, reports alone
  fill the budget. A sub-community without a report keeps its local context. This is why reports
  are generated deepest level first: one concurrent batch per level. This is the GraphRAG paper's
  design; GraphRAG's code never substitutes (it builds every level's context before any report
  exists and sets the over-limit flag after trimming), which ``substitution=False`` reproduces: the
  local context trimmed to the budget.

The reply is JSON (``json_output=True``): ``{title, summary, rating (0-10), rating_explanation,
findings: [{summary, explanation}]}``. A reply without a JSON object or with neither title nor
summary is ``unparsed``; a failed call is ``failed``; both are counted with their raw text, and
such a community has no report (GraphRAG keeps no row for it either): search skips it, and its
node in the store shows its member names, marked ``report_status`` in its metadata. A missing or
non-numeric rating becomes 0 and is counted. The report text (``full_content``) is
``# title\\n\\nsummary\\n\\n## finding summary\\n\\nexplanation`` for each finding.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memharness.memsys.extraction.parsing import FailureLog, clean_str, fill, parse_json_object
from memharness.memsys.graphrag.communities import Community
from memharness.memsys.graphrag.merge import Graph
from memharness.memsys.services.types import ChatRequest


@dataclass
class ReportSettings:
    prompt: str
    max_input_tokens: int = 8000
    max_words: int = 2000
    max_tokens: int = 1500


@dataclass
class Report:
    key: int
    status: str  # parsed | unparsed | failed
    title: str = ""
    summary: str = ""
    rating: float = 0.0
    rating_explanation: str = ""
    findings: list[dict[str, str]] = field(default_factory=list)
    context_tokens: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "parsed"

    @property
    def text(self) -> str:
        """GraphRAG's ``full_content``: title, summary, then each finding."""
        parts = [f"# {self.title}", self.summary]
        for f in self.findings:
            parts += [f"## {f['summary']}", f["explanation"]]
        return "\n\n".join(p for p in parts if p.strip())


def _csv_row(values: Sequence[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


ENTITY_HEADER = "-----Entities-----\n" + _csv_row(["id", "entity", "description", "degree"])
EDGE_HEADER = "-----Relationships-----\n" + _csv_row(
    ["id", "source", "target", "description", "combined_degree"]
)
REPORT_HEADER = "-----Reports-----\n" + _csv_row(["community", "full_content"])


class ContextBuilder:
    """Builds report contexts over one graph; caches row texts and their token counts."""

    def __init__(
        self,
        graph: Graph,
        incident: list[list[int]],
        tokenizer: Any,
        relationships: str = "all",
        substitution: bool = True,
    ) -> None:
        self.graph, self.incident, self.tokenizer = graph, incident, tokenizer
        self.relationships, self.substitution = relationships, substitution
        self._entity_rows: dict[int, tuple[str, int]] = {}
        self._edge_rows: dict[int, tuple[str, int]] = {}
        self.header_tokens = {
            h: tokenizer.count(h) for h in (ENTITY_HEADER, EDGE_HEADER, REPORT_HEADER)
        }

    def entity_row(self, i: int) -> tuple[str, int]:
        if i not in self._entity_rows:
            e = self.graph.entities[i]
            row = _csv_row([i, e.name, e.description, e.degree])
            self._entity_rows[i] = (row, self.tokenizer.count(row))
        return self._entity_rows[i]

    def edge_row(self, r: int) -> tuple[str, int]:
        if r not in self._edge_rows:
            rel, names = self.graph.relations[r], self.graph.entities
            row = _csv_row(
                [r, names[rel.source].name, names[rel.target].name, rel.description, rel.rank]
            )
            self._edge_rows[r] = (row, self.tokenizer.count(row))
        return self._edge_rows[r]

    def edges_of(self, members: Sequence[int]) -> list[int]:
        """Relationships touching ``members``, in descending combined degree, then id. With
        ``relationships="per_entity"`` (GraphRAG's code) each member brings one: its first as the
        source, else its first as the target (relationship order; the stored orientation)."""
        if self.relationships == "per_entity":
            edges = set()
            for m in members:
                rels = self.incident[m]
                first = [r for r in rels if self.graph.relations[r].source == m] or rels
                edges.update(first[:1])
        else:
            edges = {r for m in members for r in self.incident[m]}
        return sorted(edges, key=lambda r: (-self.graph.relations[r].rank, r))

    def local_tokens(self, members: Sequence[int]) -> int:
        """Tokens of the whole (untrimmed) local context of ``members``."""
        return (
            self.header_tokens[ENTITY_HEADER]
            + self.header_tokens[EDGE_HEADER]
            + sum(self.entity_row(m)[1] for m in members)
            + sum(self.edge_row(r)[1] for r in self.edges_of(members))
        )

    def local_context(
        self,
        members: Sequence[int],
        reports: Sequence[tuple[int, str]] = (),
        max_tokens: int | None = None,
    ) -> tuple[str, int]:
        """The Entities / Relationships tables (after any Reports table), trimmed to ``max_tokens``."""
        member_set = set(members)
        used = self.header_tokens[ENTITY_HEADER] + self.header_tokens[EDGE_HEADER]
        report_rows = [_csv_row([k, text]) for k, text in reports]
        if report_rows:
            used += self.header_tokens[REPORT_HEADER] + sum(
                self.tokenizer.count(r) for r in report_rows
            )
        nodes: list[int] = []
        edges: list[int] = []
        seen: set[int] = set()
        for r in self.edges_of(members):
            rel = self.graph.relations[r]
            new_nodes = [n for n in (rel.source, rel.target) if n in member_set and n not in seen]
            cost = self.edge_row(r)[1] + sum(self.entity_row(n)[1] for n in new_nodes)
            if max_tokens is not None and used + cost > max_tokens and edges:
                break
            nodes += new_nodes
            seen.update(new_nodes)
            edges.append(r)
            used += cost
        for m in members:  # members without any relationship (none after Leiden, kept for safety)
            if m not in seen and (max_tokens is None or used + self.entity_row(m)[1] <= max_tokens):
                nodes.append(m)
                seen.add(m)
                used += self.entity_row(m)[1]
        parts = []
        if report_rows:
            parts.append(REPORT_HEADER + "".join(report_rows))
        if nodes:
            parts.append(ENTITY_HEADER + "".join(self.entity_row(n)[0] for n in nodes))
        if edges:
            parts.append(EDGE_HEADER + "".join(self.edge_row(r)[0] for r in edges))
        return "\n".join(parts), used

    def community_context(
        self,
        c: Community,
        by_key: dict[int, Community],
        reports: dict[int, Report],
        max_tokens: int,
    ) -> tuple[str, int]:
        """A community's report context: its local context, or the mixed context when that is too large."""
        if not self.substitution or not c.children or self.local_tokens(c.members) <= max_tokens:
            return self.local_context(c.members, max_tokens=max_tokens)
        subs = sorted(
            (by_key[k] for k in c.children), key=lambda s: (-self.local_tokens(s.members), s.key)
        )
        substitutes: list[tuple[int, str]] = []
        kept_local: list[int] = []
        for i, sub in enumerate(subs):
            report = reports.get(sub.key)
            if report is None or not report.ok:
                kept_local += sub.members
                continue
            substitutes.append((sub.key, report.text))
            rest = [m for s in subs[i + 1 :] for m in s.members] + kept_local
            text, used = self.local_context(rest, substitutes)
            if used <= max_tokens:
                return text, used
        rows, used = [], self.header_tokens[REPORT_HEADER]
        for sub in subs:
            report = reports.get(sub.key)
            if report is None or not report.ok:
                continue
            row = _csv_row([sub.key, report.text])
            n = self.tokenizer.count(row)
            if used + n > max_tokens and rows:
                break
            rows.append(row)
            used += n
        return REPORT_HEADER + "".join(rows), used


def parse_report(key: int, reply: str, log: FailureLog) -> Report:
    """A report from the model's JSON reply; unparsed replies are counted with their raw text."""
    data = parse_json_object(reply)
    if data is None or not (clean_str(data.get("title")) or clean_str(data.get("summary"))):
        log.add("report_unparsed", reply, community=key)
        return Report(key=key, status="unparsed")
    try:
        rating = float(data.get("rating"))
    except (TypeError, ValueError):
        log.add("rating_missing", str(data.get("rating")), community=key)
        rating = 0.0
    findings = []
    for f in data.get("findings") or []:
        if isinstance(f, dict) and (clean_str(f.get("summary")) or clean_str(f.get("explanation"))):
            findings.append(
                {
                    "summary": clean_str(f.get("summary")),
                    "explanation": clean_str(f.get("explanation")),
                }
            )
        else:
            log.add("finding_malformed", str(f), community=key)
    return Report(
        key=key,
        status="parsed",
        title=clean_str(data.get("title")),
        summary=clean_str(data.get("summary")),
        rating=rating,
        rating_explanation=clean_str(data.get("rating_explanation")),
        findings=findings,
    )


def generate_reports(
    llm: Any,
    builder: ContextBuilder,
    communities: Sequence[Community],
    settings: ReportSettings,
    log: FailureLog,
) -> tuple[dict[int, Report], dict[str, Any]]:
    """Every community's report, deepest level first, one concurrent batch per level."""
    by_key = {c.key: c for c in communities}
    reports: dict[int, Report] = {}
    record: dict[str, Any] = {"calls": 0, "batches": [], "failed": 0, "unparsed": 0}
    for level in sorted({c.level for c in communities}, reverse=True):
        batch = [c for c in communities if c.level == level]
        contexts = [
            builder.community_context(c, by_key, reports, settings.max_input_tokens) for c in batch
        ]
        requests = [
            ChatRequest.user(
                fill(settings.prompt, input_text=text, max_report_length=settings.max_words),
                max_tokens=settings.max_tokens,
                temperature=0.0,
                json_output=True,
            )
            for text, _ in contexts
        ]
        completions = llm.complete(requests, desc=f"graphrag reports L{level}")
        record["calls"] += len(requests)
        record["batches"].append({"level": level, "calls": len(requests)})
        for c, (_, tokens), comp in zip(batch, contexts, completions, strict=False):
            if not comp.ok:
                log.add("report_failed", comp.error or "", community=c.key)
                record["failed"] += 1
                report = Report(key=c.key, status="failed")
            else:
                report = parse_report(c.key, comp.text, log)
                record["unparsed"] += report.status == "unparsed"
            report.context_tokens = tokens
            reports[c.key] = report
    return reports, record
