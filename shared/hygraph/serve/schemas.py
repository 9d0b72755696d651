"""The JSON the server takes and gives (pydantic models; they make its OpenAPI document)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """Unknown fields are an error, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class RetrieveRequest(Strict):
    question: str = Field(..., description="the question (its length is bounded by the server)")
    method: str | None = Field(
        None, description="a built method, with options as `name:key=value`; default: the index's"
    )
    top_k: int | None = Field(None, description="passages to return (bounded by the server)")
    evidence: bool = Field(True, description="also return the graph the method used")
    filters: dict[str, Any] | None = Field(
        None,
        description="keep passages of documents whose metadata match: {key: value}, "
        "{key: [values]}, {key: {$gte: x}}, {$and: [...]}, {$or: [...]}",
    )


class QueryRequest(Strict):
    """Retrieval, then an answer from the configured LLM."""

    question: str = Field(..., description="the question (its length is bounded by the server)")
    method: str | None = Field(None, description="a built method; default: the index's")
    top_k: int | None = Field(None, description="passages to use (bounded by the server)")
    evidence: bool = Field(True, description="also return the graph the method used")


class DocumentIn(Strict):
    text: str = Field(..., description="the document's text")
    id: str | None = Field(None, description="its id (default: a digest of its text)")
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class InsertRequest(Strict):
    documents: list[DocumentIn] = Field(..., description="documents to add or replace")
    methods: list[str] | None = Field(
        None, description="methods to build as well (default: those the index has)"
    )


class Passage(BaseModel):
    rank: int
    chunk_id: str
    doc_id: str | None
    title: str | None
    text: str
    score: float = Field(..., description="cosine to the question, non-increasing down the list")
    via: str = Field("method", description="method, or dense fill where the method ranked fewer")
    graph_evidence: list[str] = Field(
        default_factory=list, description="the graph items (entities, facts ...) citing it"
    )


class BuildRequest(Strict):
    methods: list[str] = Field(..., description="methods to build over the indexed chunks")


class RetrieveResponse(BaseModel):
    method: str
    question: str
    passages: list[Passage]
    documents: list[str] = Field(..., description="documents of the passages, best first")
    context: str
    context_tokens: int
    answer: str | None = None
    evidence: dict[str, Any] | None = None
    usage: dict[str, Any]
    trace: list[dict[str, Any]]


class JobOut(BaseModel):
    id: str
    kind: str
    detail: dict[str, Any]
    status: str = Field(..., description="queued, running, done or failed")
    created: float
    started: float | None
    finished: float | None
    progress: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None


class ErrorBody(BaseModel):
    type: str
    message: str


class ErrorOut(BaseModel):
    error: ErrorBody
