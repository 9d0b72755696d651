"""The server's document and job routes: list, insert (text or files), delete, build
methods; writes run as jobs on one worker thread (:mod:`hygraph.serve.jobs`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from fastapi import FastAPI, File, Query, UploadFile
from starlette.exceptions import HTTPException

from hygraph.errors import InputError
from hygraph.ingest import Document
from hygraph.progress import reporting
from hygraph.serve.context import API, Served
from hygraph.serve.schemas import BuildRequest, InsertRequest, JobOut


def add_document_routes(app: FastAPI, served: Served) -> None:
    """``/v1/documents`` (list, add, files, delete), ``/v1/methods/build``, ``/v1/jobs``."""
    index, jobs, limits = served.index, served.jobs, served.limits
    guarded, errors = served.guarded, served.errors

    @app.get(f"{API}/documents", dependencies=guarded, responses=errors, tags=["documents"])
    def documents(
        offset: int = Query(0, ge=0, le=10**12), limit: int = Query(100, ge=1, le=1000)
    ) -> Any:
        """A page of the documents in the index, in the order they were added."""
        return index.documents(offset, limit)

    # -------------------------------------------------------------------- writing (jobs)

    def refresh_later() -> None:
        """After a write, a job that writes again what query processes read from disk and
        the write left stale (the passage graph; the walk matrix, which a small insert
        leaves to a later build), unless one is waiting already. It runs on the writer
        thread after the writes before it, so retrieval is not held up by it."""
        if jobs.queued("refresh"):
            return

        def work(job: Any) -> dict[str, Any]:
            with reporting(job.report):
                index.insert()  # nothing new to add: writes what is missing for queries
            return {"methods": index.methods}

        jobs.submit("refresh", {}, work)

    def insert_job(docs: list[Any], methods: list[str] | None) -> Any:
        detail = {"documents": [d.id for d in docs][:50], "count": len(docs)}

        def work(job: Any) -> dict[str, Any]:
            with reporting(job.report):
                report = index.insert(docs, methods=methods)
            refresh_later()
            return report.to_dict()

        return jobs.submit("insert", detail, work)

    @app.post(f"{API}/documents", dependencies=guarded, responses=errors, status_code=202,
              response_model=JobOut, tags=["documents"])  # fmt: skip
    def add_documents(body: InsertRequest) -> dict[str, Any]:
        """Add or replace documents (a job: follow it at /v1/jobs/{id})."""
        if not body.documents or len(body.documents) > limits.documents:
            raise InputError(f"send between 1 and {limits.documents} documents")
        docs = [
            Document(d.id or hashlib.sha256(d.text.encode()).hexdigest()[:16], d.text,
                     title=d.title, metadata=dict(d.metadata))
            for d in body.documents
        ]  # fmt: skip
        return insert_job(docs, body.methods).to_dict()

    @app.post(f"{API}/documents/files", dependencies=guarded, responses=errors, status_code=202,
              response_model=JobOut, tags=["documents"])  # fmt: skip
    async def add_files(files: list[UploadFile] = File(...)) -> dict[str, Any]:  # noqa: B008
        """Add .txt or .md files (UTF-8; a job). Each file's name is its document id."""
        if not files or len(files) > limits.documents:
            raise InputError(f"send between 1 and {limits.documents} files")
        docs = []
        for upload in files:
            name = Path(upload.filename or "upload.txt").name
            if Path(name).suffix.lower() not in (".txt", ".md"):
                raise InputError(f"{name}: only .txt and .md files can be uploaded")
            raw = await upload.read(limits.body_bytes + 1)
            if b"\x00" in raw:
                raise InputError(f"{name}: a binary file, not text")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{name}: not UTF-8 text") from None
            docs.append(Document(name, text, title=Path(name).stem, source=name))
        return insert_job(docs, None).to_dict()

    @app.post(f"{API}/methods/build", dependencies=guarded, responses=errors, status_code=202,
              response_model=JobOut, tags=["methods"])  # fmt: skip
    def build_methods(body: BuildRequest) -> dict[str, Any]:
        """Build methods over the indexed chunks (their layers; a job)."""
        from hygraph.methods.base import parse_method_spec

        if not body.methods:
            raise InputError("name at least one method to build")
        for spec in body.methods:
            parse_method_spec(spec)  # an unknown method fails here, not in the job

        def work(job: Any) -> dict[str, Any]:
            with reporting(job.report):
                report = index.insert(methods=body.methods)
            return {**report.to_dict(), "methods": index.methods}

        return jobs.submit("build", {"methods": body.methods}, work).to_dict()

    @app.delete(f"{API}/documents/{{doc_id}}", dependencies=guarded, responses=errors,
                status_code=202, response_model=JobOut, tags=["documents"])  # fmt: skip
    def delete_document(doc_id: str) -> dict[str, Any]:
        """Delete a document and what was derived only from it (a job)."""
        if index.resources.store.document_hash(doc_id) is None:
            raise HTTPException(404, f"no document {doc_id!r}")

        def work(job: Any) -> dict[str, Any]:
            removed = index.delete(doc_id)
            refresh_later()
            return {"doc_id": doc_id, "chunks": len(removed.chunk_ids)}

        return jobs.submit("delete", {"doc_id": doc_id}, work).to_dict()

    @app.get(f"{API}/jobs", dependencies=guarded, responses=errors, tags=["jobs"])
    def list_jobs() -> dict[str, Any]:
        """Every job remembered, oldest first."""
        return {"jobs": [j.to_dict() for j in jobs.all()]}

    @app.get(f"{API}/jobs/{{job_id}}", dependencies=guarded, responses=errors,
             response_model=JobOut, tags=["jobs"])  # fmt: skip
    def job(job_id: str) -> dict[str, Any]:
        """One job: its state, progress and result or error."""
        found = jobs.get(job_id)
        if found is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return found.to_dict()
