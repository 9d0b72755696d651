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


class QueryRequest(RetrieveRequest):
    """Retrieval, then an answer from the configured LLM."""


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
    score: float


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
