"""The parsing side of LLM extraction, shared by GraphRAG-lite, CAM w/ FM and HippoRAG: prompt
filling, cleaning extracted strings, JSON replies, and the failure log that counts every reply
that could not be used."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from typing import Any

RAW_CHARS = 2000  # a kept raw reply is cut to this many characters


def fill(template: str, **values: Any) -> str:
    """A prompt from its ``str.format`` template (literal braces are written ``{{`` / ``}}``; the
    settings checker has verified the placeholders). Inserted text is never parsed again."""
    return template.format(**values)


def clean_str(text: Any) -> str:
    """Unescape HTML entities, drop control characters and surrounding quotes and whitespace."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    text = re.sub(r"[\x00-\x1f\x7f-\x9f]", "", html.unescape(text.strip()))
    return text.strip().strip('"').strip("'").strip()


def parse_json_object(reply: str) -> dict[str, Any] | None:
    """The JSON object in a reply (code fences and text around the outermost braces ignored), else None."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(reply[start : end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class FailureLog:
    """Counts of every failure kind, plus the first ``cap`` raw replies that caused one.

    Nothing that fails is dropped silently: each kind is counted (``counts``) and the raw reply is
    kept (cut to ``RAW_CHARS``) until ``cap`` samples are held; later ones are only counted.
    """

    def __init__(self, cap: int = 20) -> None:
        self.cap = int(cap)
        self.counts: Counter[str] = Counter()
        self.samples: list[dict[str, Any]] = []

    def add(self, kind: str, raw: str = "", **context: Any) -> None:
        """Count one failure of ``kind`` and keep its raw text while under the cap."""
        self.counts[kind] += 1
        if len(self.samples) < self.cap:
            self.samples.append({"kind": kind, "raw": str(raw)[:RAW_CHARS], **context})

    def total(self, *kinds: str) -> int:
        return sum(self.counts[k] for k in kinds) if kinds else sum(self.counts.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items())),
            "samples_kept": len(self.samples),
            "samples_cap": self.cap,
            "samples": list(self.samples),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None, cap: int = 20) -> FailureLog:
        log = cls(cap=(data or {}).get("samples_cap", cap))
        log.counts.update((data or {}).get("counts", {}))
        log.samples = list((data or {}).get("samples", []))
        return log
