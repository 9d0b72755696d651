"""The server's retrieval routes: retrieve, query with an answer, the graph around an entity."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Query

from hygraph.errors import ConfigError, InputError
from hygraph.passages import retrieve_passages
from hygraph.serve.context import API, Served
from hygraph.serve.schemas import QueryRequest, RetrieveRequest, RetrieveResponse


def add_retrieval_routes(app: FastAPI, served: Served) -> None:
    """``POST /v1/retrieve``, ``POST /v1/query``, ``GET /v1/graph/entity``."""
    index, limits = served.index, served.limits
    guarded, errors = served.guarded, served.errors

    def check_question(body: RetrieveRequest | QueryRequest) -> None:
        if len(body.question) > limits.question_chars:
            raise InputError(f"the question may be {limits.question_chars} characters long")
        if body.top_k is not None and not 1 <= body.top_k <= limits.top_k:
            raise InputError(f"top_k must be between 1 and {limits.top_k}")

    def shown(result: Any, passages: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "method": result.method, "question": result.question, "passages": passages,
            "documents": list(dict.fromkeys(p["doc_id"] for p in passages if p["doc_id"])),
            "context": result.context, "context_tokens": result.context_tokens,
            "answer": result.answer, "evidence": result.evidence, "usage": result.usage,
            "trace": result.trace,
        }  # fmt: skip

    def passage_rows(rows: list[tuple[str, float, str, list[str]]]) -> list[dict[str, Any]]:
        """``(chunk id, score, via, graph evidence)`` rows with their texts and citations."""
        store = index.resources.store
        texts = store.get_chunks(c for c, *_ in rows)
        titles = store.document_titles(c.doc_id for c in texts.values())
        out = []
        for rank, (chunk_id, score, via, cited) in enumerate(rows, start=1):
            chunk = texts.get(chunk_id)
            out.append({
                "rank": rank, "chunk_id": chunk_id, "doc_id": chunk.doc_id if chunk else None,
                "title": titles.get(chunk.doc_id) if chunk else None,
                "text": chunk.text if chunk else "", "score": float(score), "via": via,
                "graph_evidence": cited,
            })  # fmt: skip
        return out

    @app.post(f"{API}/retrieve", dependencies=guarded, responses=errors,
              response_model=RetrieveResponse, tags=["retrieval"])  # fmt: skip
    def retrieve(body: RetrieveRequest) -> dict[str, Any]:
        """Passages for a question, with scores, citations and the graph evidence.

        Exactly ``top_k`` passages (default 5) in the method's order, filled from dense
        search where the method ranks fewer (``via``), as the framework retrievers
        return them; ``filters`` keep passages of matching documents only.
        """
        check_question(body)
        found = retrieve_passages(
            index, body.question, body.method or index.default_method, body.top_k or 5,
            filters=body.filters, evidence=body.evidence,
        )  # fmt: skip
        rows = [(p.id or "", p.score, p.metadata.get("via", "method"),
                 list(p.metadata.get("graph_evidence", []))) for p in found.passages]  # fmt: skip
        return shown(found.result, passage_rows(rows))

    @app.post(f"{API}/query", dependencies=guarded, responses=errors,
              response_model=RetrieveResponse, tags=["retrieval"])  # fmt: skip
    def query(body: QueryRequest) -> dict[str, Any]:
        """Retrieval, then an answer from the configured LLM (400 without one)."""
        check_question(body)
        if index.llm is None:
            raise ConfigError("no LLM is configured: start the server with --llm MODEL")
        result = index.query(body.question, body.method, top_k=body.top_k, answer=True,
                             evidence=body.evidence)  # fmt: skip
        scores = {i.source_ids[0]: i.score for i in result.items
                  if i.kind == "chunk" and i.source_ids}  # fmt: skip
        k = body.top_k or len(result.chunks)
        rows = [(c, scores.get(c, 0.0), "method", []) for c in result.chunks[:k]]
        return shown(result, passage_rows(rows))

    @app.get(f"{API}/graph/entity", dependencies=guarded, responses=errors, tags=["graph"])
    def entity_graph(
        name: str = Query(..., min_length=1, max_length=500, description="entity id or name"),
        limit: int = Query(60, ge=1, description="nodes at most (bounded by the server)"),
    ) -> dict[str, Any]:
        """The graph around an entity: related entities and the chunks that mention it."""
        return index.neighbourhood(name, limit=min(limit, limits.graph_nodes))
