"""The A-Mem product worker: PyPI ``a-mem`` (``agentic_memory``) behind the worker line protocol.

Run by ``.venvs/amem/bin/python`` (``make product-amem``); stdlib + the product only. Each unit
becomes one note (``add_note(content, time=..., id=<unit id>)``), so a search hit's note id is the
unit id. The product's LLM calls go through its OpenAI backend, which the OpenAI SDK points at
``OPENAI_BASE_URL``; its Chroma store embeds through the same endpoint's ``/v1/embeddings`` (the
harness's embedder, ``MEMHARNESS_EMBED_MODEL``) in place of the product's in-process
sentence-transformers function, so both kinds of call reach the harness's cache and ledgers.
See docs/products/amem.md.

Options (all optional; ``memory.options`` in conf/memory/amem.yaml) arrive as the JSON object in
``MEMHARNESS_PRODUCT_OPTIONS`` or as ``{"op": "hello", "options": {...}}``; names and defaults are
``DEFAULTS`` below.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402  (sibling files, found through the line above)
from amem_embeddings import endpoint_embedding_function  # noqa: E402

PRODUCT = "amem"
DISTRIBUTION = "a-mem"
# The packages whose versions hello reports (what decides the product's behaviour).
REPORTED = ("a-mem", "chromadb", "sentence-transformers", "openai", "torch")
DEFAULTS: dict[str, Any] = {
    "search": "agentic",  # agentic = search_agentic (hits + linked notes), vector = search
    "evo_threshold": 100,  # the product's evo_threshold (kept for parity; 0.2.6 no longer uses it)
    "temperature": 0.0,  # forced on every product LLM call; None keeps the product's 1.0
    "max_tokens": None,  # a cap on every product LLM reply; None keeps the product's (none)
    "json_mode": "schema",  # schema = the product's response_format; object = llama-cpp-python's form
    "llm_model": None,  # None = MEMHARNESS_LLM_MODEL
    "speaker_prefix": True,  # prefix "speaker: " unless the text already names the speaker
    "item_format": "time: {time}\ncontent: {content}\ncontext: {context}\nkeywords: {keywords}\ntags: {tags}",
}
# calls the product swallows (it falls back or skips a step): counted, reported per ingest
SWALLOWED = ("llm_error", "llm_bad_json", "llm_schema_mismatch", "embed_error")
SPACES = ("cosine", "l2", "ip")  # Chroma's distance spaces
TIME_FORMAT = "%Y%m%d%H%M"  # the product's note timestamp format (YYYYMMDDHHMM)
NO_TIME = "unknown"  # stamped when a unit has no time, so the product never uses the wall clock
# Quiet, offline imports: no telemetry, no model hub, no LiteLLM price-map download.
OFFLINE_ENV = {
    "ANONYMIZED_TELEMETRY": "False",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "TOKENIZERS_PARALLELISM": "false",
}


def merge_options(given: dict[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS overlaid with ``given``; an unknown name is refused, naming the known ones."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown A-Mem option(s) {unknown}; known: {sorted(DEFAULTS)}")
    merged = {**DEFAULTS, **given}
    if merged["search"] not in ("agentic", "vector"):
        raise ValueError(f"option search={merged['search']!r}: use 'agentic' or 'vector'")
    if merged["json_mode"] not in ("schema", "object"):
        raise ValueError(f"option json_mode={merged['json_mode']!r}: use 'schema' or 'object'")
    return merged


def note_time(timestamp: str | None) -> tuple[str, str | None]:
    """The product's ``time=`` for a unit's ISO timestamp, and the failure kind if it has none."""
    if not timestamp:
        return NO_TIME, "no_timestamp"
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).strftime(TIME_FORMAT), None
    except ValueError:
        return timestamp, "timestamp_unparsed"  # kept verbatim: still the data's time


def note_content(unit: dict[str, Any], speaker_prefix: bool = True) -> str:
    """The note text: the unit's text, led by its speaker when the text does not name them."""
    text = str(unit.get("text") or "")
    speaker = unit.get("speaker")
    if speaker_prefix and speaker and str(speaker) not in text:
        return f"{speaker}: {text}"
    return text


def unit_to_note(unit: dict[str, Any], speaker_prefix: bool = True) -> dict[str, Any]:
    """``add_note`` arguments for one unit plus the failure kind of its time (or None)."""
    if not unit.get("id") or not isinstance(unit.get("text"), str):
        raise ValueError(f"unit {unit.get('id')!r}: needs a non-empty 'id' and a string 'text'")
    time, problem = note_time(unit.get("timestamp"))
    return {
        "id": str(unit["id"]),
        "content": note_content(unit, speaker_prefix),
        "time": time,
        "problem": problem,
    }


def store_space(configuration: Any) -> str:
    """The distance space of a Chroma collection's configuration (``hnsw``, else ``spann``)."""
    config = configuration if isinstance(configuration, dict) else {}
    for index in ("hnsw", "spann"):
        space = (config.get(index) or {}).get("space")
        if space in SPACES:
            return space
    raise ValueError(f"the A-Mem store's distance space is unknown: {configuration!r}")


def distance_to_score(distance: Any, space: str = "cosine") -> float:
    """A Chroma distance -> cosine similarity (higher is closer); 0.0 when there is none.

    ``cosine`` (the product's store: 1 - cos) and ``ip`` (1 - dot) give 1 - d; ``l2`` is squared L2,
    which is 2 - 2 cos between unit vectors."""
    try:
        d = float(distance)
    except (TypeError, ValueError):
        return 0.0  # a linked note the product returns without a distance
    return 1.0 - d / 2.0 if space == "l2" else 1.0 - d


def _listed(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value or "")


def to_items(
    hits: list[dict[str, Any]],
    stored: dict[str, dict[str, Any]],
    item_format: str,
    space: str = "cosine",
) -> list[dict[str, Any]]:
    """Product hits (id, score, ...) + stored note metadata by id -> protocol items."""
    items = []
    for hit in hits:
        meta = stored.get(hit["id"])
        if meta is None:
            continue  # a link to a note that is gone: nothing to show
        text = item_format.format(
            time=meta.get("timestamp", ""),
            content=meta.get("content", ""),
            context=meta.get("context", ""),
            keywords=_listed(meta.get("keywords")),
            tags=_listed(meta.get("tags")),
        )
        items.append(
            {
                "id": hit["id"],
                "text": text,
                "score": distance_to_score(hit.get("score"), space),
                "source_ids": [hit["id"]],
            }
        )
    return items


def count_links(metadatas: list[dict[str, Any]]) -> int:
    """Links over all stored notes (the product keeps them as a JSON list per note)."""
    total = 0
    for meta in metadatas:
        links = meta.get("links") or "[]"
        try:
            total += len(json.loads(links) if isinstance(links, str) else links)
        except (json.JSONDecodeError, TypeError):
            continue
    return total


def as_json_object(response_format: Any) -> Any:
    """``{"type": "json_schema", "json_schema": {"schema": S}}`` -> ``{"type": "json_object",
    "schema": S}``: the same constraint in the form llama-cpp-python's server accepts."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return response_format
    schema = (response_format.get("json_schema") or {}).get("schema")
    return {"type": "json_object", **({"schema": schema} if schema else {})}


def count_unannotated(metadatas: list[dict[str, Any]]) -> int:
    """Notes the product left without annotations (its fallback when the LLM call failed)."""
    return sum(
        1
        for meta in metadatas
        if meta.get("context", "General") == "General" and _listed(meta.get("keywords")) == ""
    )


def reply_problem(reply: Any, response_format: dict[str, Any] | None) -> str | None:
    """Why a JSON-mode reply is unusable (``llm_bad_json`` / ``llm_schema_mismatch``), or None."""
    try:
        data = json.loads(reply)
    except (TypeError, json.JSONDecodeError):
        return "llm_bad_json"
    schema = ((response_format or {}).get("json_schema") or {}).get("schema") or {}
    wanted = schema.get("required") or []  # JSON Schema: properties are optional unless required
    if not isinstance(data, dict) or any(key not in data for key in wanted):
        return "llm_schema_mismatch"
    return None


class AMemWorker:
    """Protocol handlers around one ``AgenticMemorySystem`` (built on the first op that needs it)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.options: dict[str, Any] | None = None
        self.env_options = self.env.get("MEMHARNESS_PRODUCT_OPTIONS") or "{}"
        self.system: Any = None
        self.embedder = ""  # the harness embedder's model id (MEMHARNESS_EMBED_MODEL)
        self.space = "cosine"  # the Chroma store's distance; read after the build
        self.counts: Counter[str] = Counter()

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return protocol.handlers_of(self)

    def hello(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.system is None:
            self.configure(request.get("options"))
        from importlib.metadata import PackageNotFoundError, version

        packages = {}
        for name in REPORTED:
            try:
                packages[name] = version(name)
            except PackageNotFoundError:
                packages[name] = None
        self._build()
        return {
            "product": PRODUCT,
            "version": packages[DISTRIBUTION],
            "packages": packages,
            "clock": "data",  # note times come from the units; see note_time
            "options": self.options,
            "embedder": self.embedder,
        }

    def configure(self, given: dict[str, Any] | None = None) -> dict[str, Any]:
        """Options from hello's ``options``, else from MEMHARNESS_PRODUCT_OPTIONS, over DEFAULTS."""
        if given is None:
            try:
                given = json.loads(self.env_options)
            except json.JSONDecodeError as exc:
                raise ValueError(f"MEMHARNESS_PRODUCT_OPTIONS is not JSON: {exc}") from exc
        self.options = merge_options(given)
        return self.options

    def _build(self) -> None:
        if self.system is not None:
            return
        if self.options is None:
            self.configure()
        for name, value in OFFLINE_ENV.items():
            os.environ.setdefault(name, value)
        store = self.env.get("MEMHARNESS_STORE_DIR")
        if not store:
            raise ValueError(
                "MEMHARNESS_STORE_DIR is not set (the folder for A-Mem's Chroma store)"
            )
        model = self.options["llm_model"] or self.env.get("MEMHARNESS_LLM_MODEL")
        if not model:
            raise ValueError("no LLM model: set MEMHARNESS_LLM_MODEL or the llm_model option")
        self.embedder = self.env.get("MEMHARNESS_EMBED_MODEL") or ""
        if not self.embedder or not self.env.get("OPENAI_BASE_URL"):
            raise ValueError(
                "MEMHARNESS_EMBED_MODEL and OPENAI_BASE_URL must be set (the harness endpoint"
                " serves the store's embeddings)"
            )
        from agentic_memory import retrievers
        from agentic_memory.memory_system import AgenticMemorySystem

        retrievers.SentenceTransformerEmbeddingFunction = endpoint_embedding_function(
            self.embedder, self.env["OPENAI_BASE_URL"], self.env.get("OPENAI_API_KEY"), self.counts
        )
        self.system = AgenticMemorySystem(
            model_name=self.embedder,
            llm_backend="openai",
            llm_model=model,
            evo_threshold=int(self.options["evo_threshold"]),
            storage_path=str(Path(store) / "chroma"),
        )
        self.space = store_space(self.system.retriever.collection.configuration)
        self._meter_llm()

    def _meter_llm(self) -> None:
        """Wrap the product's LLM call: force temperature / max_tokens, count calls and unusable replies."""
        llm = self.system.llm_controller.llm
        client = getattr(llm, "client", None)
        if client is not None and hasattr(client, "with_options"):
            # the SDK would give up after 600 s and send the call again behind itself; the harness
            # owns deadlines and retries (a call on the embedded model can take minutes under load)
            llm.client = client.with_options(timeout=None, max_retries=0)
        original = llm.get_completion
        temperature = self.options["temperature"]
        max_tokens = self.options["max_tokens"]
        as_object = self.options["json_mode"] == "object"

        def metered(prompt: str, response_format: Any = None, *args: Any, **kwargs: Any) -> str:
            if temperature is not None:
                kwargs["temperature"] = float(temperature)
            if max_tokens is not None:
                kwargs["max_tokens"] = int(max_tokens)
            self.counts["llm_calls"] += 1
            try:
                sent = as_json_object(response_format) if as_object else response_format
                reply = original(prompt, sent, *args, **kwargs)
            except Exception:
                self.counts["llm_error"] += 1  # the product catches it and falls back to defaults
                raise
            problem = reply_problem(reply, response_format)
            if problem:
                self.counts[problem] += 1
            return reply

        llm.get_completion = metered

    def reset(self, request: dict[str, Any]) -> dict[str, Any]:
        self._build()
        for note_id in self.system.retriever.get_all_ids():
            self.system.delete(note_id)
        self.system.evo_cnt = 0
        self.counts.clear()
        return {}

    def ingest(self, request: dict[str, Any]) -> dict[str, Any]:
        self._build()
        units = request.get("units")
        if not isinstance(units, list):
            raise ValueError(
                "ingest needs 'units': a list of {id, text, speaker, timestamp, session}"
            )
        # every unit checked before any is added: a bad one refuses the batch, not half of it
        notes = [unit_to_note(unit, bool(self.options["speaker_prefix"])) for unit in units]
        before = Counter(self.counts)
        failures: Counter[str] = Counter()
        added = 0
        for note in notes:
            if note["problem"]:
                self.counts[note["problem"]] += 1  # the data's gap, not the product's: a stat only
            if self.system.retriever.get_by_id(note["id"]) is not None:
                failures["duplicate_unit"] += 1  # Chroma would keep the first; say so
                continue
            self.system.add_note(note["content"], time=note["time"], id=note["id"])
            added += 1
        self.counts["units"] += added
        self.counts["duplicate_unit"] += failures["duplicate_unit"]
        for kind in SWALLOWED:
            if self.counts[kind] > before[kind]:
                failures[kind] = self.counts[kind] - before[kind]
        failures = +failures  # drop zero counts
        return {"added": added, "failures": dict(failures)}

    def forget(self, request: dict[str, Any]) -> dict[str, Any]:
        """A-Mem's own ``delete`` of the note made from each forgotten unit (note id = unit id): its
        content, context, keywords, tags and links go with it, and a link to it from another note
        finds nothing any more. What the note's evolution already wrote into its neighbours
        (``update_neighbor``: their context and tags) stays: the product keeps no record to undo it
        (see docs/products/amem.md)."""
        self._build()
        deleted = 0
        for unit_id in sorted({str(i) for i in request.get("unit_ids") or []}):
            if self.system.retriever.get_by_id(unit_id) is None:
                continue  # never stored (a failed or duplicate add): nothing to delete
            if not self.system.delete(unit_id):
                raise RuntimeError(f"A-Mem could not delete note {unit_id} (see its log)")
            deleted += 1
        self.counts["units"] -= deleted
        self.counts["notes_deleted"] += deleted
        return {"deleted": deleted, "units_reinserted": 0, "failures": {}}

    def search(self, request: dict[str, Any]) -> dict[str, Any]:
        self._build()
        query = request.get("query")
        k = int(request.get("k") or 5)
        if not isinstance(query, str) or k < 1:
            raise ValueError("search needs a string 'query' and k >= 1")
        if self.system.retriever.count() == 0:
            return {"items": []}
        k = min(k, self.system.retriever.count())  # Chroma warns when asked for more than it has
        failed_before = self.counts["embed_error"]
        if self.options["search"] == "agentic":
            hits = self.system.search_agentic(query, k)
        else:
            hits = self.system.search(query, k)
        if self.counts["embed_error"] > failed_before:
            # the product logs the failure and returns no hits: a failed search, not an empty one
            raise RuntimeError("the query's embedding failed at the harness endpoint (see its log)")
        ids = [hit["id"] for hit in hits]
        got = self.system.retriever.collection.get(ids=ids, include=["metadatas"]) if ids else None
        stored = dict(zip(got["ids"], got["metadatas"], strict=True)) if got else {}
        return {"items": to_items(hits, stored, self.options["item_format"], self.space)}

    def stats(self, request: dict[str, Any]) -> dict[str, Any]:
        self._build()
        metas = self.system.retriever.collection.get(include=["metadatas"])["metadatas"]
        return {
            "stats": {
                "notes": len(metas),
                "unannotated": count_unannotated(metas),
                "evolutions": int(self.system.evo_cnt),
                "links": count_links(metas),
                **dict(self.counts),
            }
        }


def main() -> None:
    """Serve the protocol on stdin/stdout; the product's own prints go to stderr."""
    out = sys.stdout
    sys.stdout = sys.stderr  # A-Mem prints its swallowed errors; keep stdout for replies
    protocol.serve(AMemWorker().handlers(), stdin=sys.stdin, stdout=out)


if __name__ == "__main__":
    main()
