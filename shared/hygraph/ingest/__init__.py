"""Ingestion: load documents from files, count tokens offline, cut documents into chunks."""

from hygraph.ingest.chunker import Chunker, chunk_document, chunk_documents
from hygraph.ingest.documents import Chunk, Document
from hygraph.ingest.loaders import LoadResult, iter_documents, load_documents
from hygraph.ingest.tokenizer import Tokenizer, default_tokenizer

__all__ = [
    "Chunk",
    "Chunker",
    "Document",
    "LoadResult",
    "Tokenizer",
    "chunk_document",
    "chunk_documents",
    "default_tokenizer",
    "iter_documents",
    "load_documents",
]
