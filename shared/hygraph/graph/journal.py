"""The delete journal: what a document delete removed, until every layer has forgotten it.

The store's delete commits together with an entry of its :class:`DeleteResult`; each
layer's completion is recorded as it happens, and the entry is cleared when all are done.
A delete killed in between (after the store committed, before the vectors were dropped)
is finished from the entry by the next run, repeating only the layer that was cut off.
Kept in the store's meta table, so it commits with the store's own writes.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hygraph.graph.store import DeleteResult, GraphStore

JOURNAL_KEY = "pending_deletes"


class DeleteJournal:
    """Pending deletes of one store: doc id → removed result and the layers done."""

    def __init__(self, store: GraphStore):
        self.store = store

    def _read(self) -> dict[str, dict[str, Any]]:
        return json.loads(self.store.get_meta(JOURNAL_KEY) or "{}")

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        self.store.set_meta(JOURNAL_KEY, json.dumps(entries))

    def pending(self) -> dict[str, DeleteResult]:
        """Deletes whose layer cleanup has not finished."""
        return {doc: DeleteResult(**e["result"]) for doc, e in self._read().items()}

    def record(self, removed: DeleteResult) -> None:
        """Journal a delete (call inside the store transaction that deleted the document)."""
        entries = self._read()
        entries[removed.doc_id] = {"result": dataclasses.asdict(removed), "done": []}
        self._write(entries)

    def layers_done(self, doc_id: str) -> set[str]:
        return set(self._read().get(doc_id, {}).get("done", []))

    def layer_done(self, doc_id: str, layer: str) -> None:
        entries = self._read()
        if doc_id in entries:
            entries[doc_id]["done"].append(layer)
            self._write(entries)

    def clear(self, doc_id: str) -> None:
        entries = self._read()
        if entries.pop(doc_id, None) is not None:
            self._write(entries)
