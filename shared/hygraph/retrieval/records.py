"""Evidence as framework-neutral records, for the LlamaIndex and LangChain integrations.

Both integrations hand retrieved evidence to a framework as a text with metadata
(a ``TextNode``, a ``Document``). What goes into that metadata is decided here once:

- the source document's own simple metadata (file name, title ...), first;
- the evidence's simple metadata (a fact's members, an entity's type ...);
- then ``kind``, ``score``, ``source_ids`` (chunks), ``doc_ids`` (their documents),
  ``method`` and ``id``, which always win.

"Simple" means scalars and flat lists of scalars, which survive every store and
serialisation a framework applies (JSON tracing, vector payloads, checkpoints).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.ingest.documents import content_hash
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.store import GraphStore

_SIMPLE = (str, int, float, bool, type(None))


def json_simple(value: Any) -> bool:
    """Whether ``value`` is a scalar or a flat list of scalars (safe in any store)."""
    if isinstance(value, _SIMPLE):
        return True
    return isinstance(value, list | tuple) and all(isinstance(v, _SIMPLE) for v in value)


def simple_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON-simple entries of ``metadata`` (tuples become lists)."""
    return {
        str(k): list(v) if isinstance(v, tuple) else v
        for k, v in (metadata or {}).items()
        if json_simple(v)
    }


def evidence_id(item: Evidence) -> str:
    """The evidence's own id, or a stable hash of its kind and text."""
    return item.id or "ev:" + content_hash(item.kind, item.text)


@dataclass
class EvidenceRecord:
    """One evidence item ready for a framework: id, text, score, documents and metadata."""

    id: str
    text: str
    score: float
    doc_ids: list[str]
    metadata: dict[str, Any]


class EvidenceRecords:
    """Turns evidence into :class:`EvidenceRecord`s, caching document metadata per version."""

    def __init__(self, store: GraphStore):
        self.store = store
        self._doc_metadata: dict[tuple[str, str], dict[str, Any]] = {}

    def records(self, items: Sequence[Evidence], method: str) -> list[EvidenceRecord]:
        """Records for ``items`` (retrieved with ``method``), in the same order."""
        chunk_ids = {cid for item in items for cid in item.source_ids}
        chunk_doc = {cid: c.doc_id for cid, c in self.store.get_chunks(chunk_ids).items()}
        doc_meta = self._documents_metadata(set(chunk_doc.values()))
        out = []
        for item in items:
            doc_ids = list(dict.fromkeys(chunk_doc[c] for c in item.source_ids if c in chunk_doc))
            ident = evidence_id(item)
            metadata = dict(doc_meta.get(doc_ids[0], {})) if doc_ids else {}
            metadata.update(simple_metadata(item.metadata))
            metadata.update(
                kind=item.kind,
                score=float(item.score),
                source_ids=list(item.source_ids),
                doc_ids=doc_ids,
                method=method,
                id=ident,
            )
            out.append(EvidenceRecord(ident, item.text, float(item.score), doc_ids, metadata))
        return out

    def _documents_metadata(self, doc_ids: set[str]) -> dict[str, dict[str, Any]]:
        """Simple metadata (and title) of documents, cached by content hash."""
        out: dict[str, dict[str, Any]] = {}
        for doc_id, (title, digest) in self.store.documents_meta(doc_ids).items():
            key = (doc_id, digest)
            if key not in self._doc_metadata:
                doc = self.store.get_document(doc_id)
                meta = simple_metadata(doc.metadata if doc is not None else {})
                if title:
                    meta.setdefault("title", title)
                self._doc_metadata[key] = meta
            out[doc_id] = self._doc_metadata[key]
        return out
