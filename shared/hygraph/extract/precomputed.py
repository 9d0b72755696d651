"""Import an extraction computed elsewhere (HippoRAG's OpenIE format).

The file has one JSON object per line: ``{"id", "entities": [...], "triples":
[[head, relation, tail], ...]}`` and optionally ``title`` and ``text``. Records
are matched to documents by id (a .jsonl line's ``id`` is kept as the document
id), or, when a record carries ``title`` and ``text``, by their content hash, so
a file keyed differently still matches the same passages.

What the file gives is used as given: its entities become entities and its
triples relations (label = relation, description = the triple as a sentence).
The format has no facts or semantic units, so these are derived from the chunk
text the same way the offline extractor does it, but with the imported entities:
each sentence that mentions two or more of them becomes a fact with those
members; units are the sentence groups of the offline splitter.

When a document spans several chunks, an entity goes to the chunks whose text
contains it (case-insensitively), and a triple to the chunks containing its head
or tail; anything found in none of them goes to the document's first chunk.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hygraph.errors import InputError
from hygraph.extract.schema import (
    ChunkInput,
    Entity,
    Extraction,
    ExtractionStats,
    Fact,
    Relation,
    Unit,
)
from hygraph.ingest.documents import content_hash

log = logging.getLogger("hygraph")

# Facts from sentences: completeness grows with the number of members (our choice).
FACT_BASE_SCORE = 4.0
FACT_SCORE_PER_MEMBER = 1.0


def _mention_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    names = sorted({n for n in names if n.strip()}, key=len, reverse=True)
    if not names:
        return None
    alternatives = "|".join(re.escape(n) for n in names)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


class PrecomputedExtractor:
    """Serves extractions from a HippoRAG-style OpenIE file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.name = f"precomputed:{self.path.name}"
        self.stats = ExtractionStats()
        self.unmatched_chunks = 0
        self._by_id: dict[str, dict[str, Any]] = {}
        self._by_hash: dict[str, dict[str, Any]] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.is_file():
            raise InputError(f"precomputed extraction file not found: {self.path}")
        bad = 0
        with self.path.open(encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    if not isinstance(record, dict):
                        raise ValueError("not an object")
                except ValueError:
                    bad += 1
                    log.warning("%s:%d: skipped a malformed line", self.path, line_no)
                    continue
                if record.get("id") is not None:
                    self._by_id[str(record["id"])] = record
                if isinstance(record.get("text"), str):
                    key = content_hash(record.get("title") or "", record["text"])
                    self._by_hash[key] = record
        if not self._by_id and not self._by_hash:
            raise InputError(f"no usable records in {self.path} ({bad} malformed lines)")

    def record_for(self, chunk: ChunkInput) -> dict[str, Any] | None:
        """The record of a chunk's document, by document id or by content hash."""
        record = self._by_id.get(chunk.doc_id)
        if record is None and chunk.doc_hash is not None:
            record = self._by_hash.get(chunk.doc_hash)
        return record

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        """One extraction per chunk; chunks of unknown documents get an empty one (counted)."""
        from hygraph.extract.sentences import make_units, split_sentences

        unmatched_before = self.unmatched_chunks
        by_doc: dict[str, list[ChunkInput]] = {}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        out: dict[str, Extraction] = {}
        for doc_chunks in by_doc.values():
            record = self.record_for(doc_chunks[0])
            if record is None:
                self.unmatched_chunks += len(doc_chunks)
                for chunk in doc_chunks:
                    out[chunk.id] = Extraction(chunk.id, extractor=self.name)
                continue
            entities = [str(e) for e in record.get("entities", []) if isinstance(e, str | int)]
            triples = [
                tuple(str(x) for x in t)
                for t in record.get("triples", [])
                if isinstance(t, list | tuple) and len(t) == 3 and all(str(x).strip() for x in t)
            ]
            self.stats.malformed_items += len(record.get("triples", [])) - len(triples)
            assigned = self._assign(doc_chunks, entities, triples)
            for chunk in doc_chunks:
                names, chunk_triples = assigned[chunk.id]
                spans = split_sentences(chunk.text)
                facts = self._facts(chunk.text, spans, names)
                ex = Extraction(
                    chunk.id,
                    entities=[Entity(n) for n in names],
                    relations=[Relation(h, t, r, f"{h} {r} {t}") for h, r, t in chunk_triples],
                    facts=facts,
                    units=[Unit(u) for u in make_units(chunk.text, spans)],
                    extractor=self.name,
                ).normalised()
                out[chunk.id] = ex
        result = [out[c.id] for c in chunks]
        for ex in result:
            self.stats.count(ex)
        if self.unmatched_chunks > unmatched_before:
            log.warning(
                "%d chunk(s) have no record in %s; they were indexed without extraction",
                self.unmatched_chunks - unmatched_before,
                self.path.name,
            )
        return result

    @staticmethod
    def _assign(
        chunks: list[ChunkInput], entities: list[str], triples: list[tuple[str, ...]]
    ) -> dict[str, tuple[list[str], list[tuple[str, ...]]]]:
        if len(chunks) == 1:
            return {chunks[0].id: (entities, triples)}
        lowered = {c.id: c.text.casefold() for c in chunks}
        out: dict[str, tuple[list[str], list[tuple[str, ...]]]] = {c.id: ([], []) for c in chunks}
        first = chunks[0].id
        for name in entities:
            hits = [cid for cid, text in lowered.items() if name.casefold() in text] or [first]
            for cid in hits:
                out[cid][0].append(name)
        for triple in triples:
            head, _, tail = triple
            hits = [
                cid
                for cid, text in lowered.items()
                if head.casefold() in text or tail.casefold() in text
            ] or [first]
            for cid in hits:
                out[cid][1].append(triple)
        return out

    @staticmethod
    def _facts(text: str, spans: list[tuple[int, int]], names: list[str]) -> list[Fact]:
        pattern = _mention_pattern(names)
        if pattern is None:
            return []
        canonical = {n.casefold(): n for n in names}
        facts = []
        for start, end in spans:
            sentence = text[start:end]
            members = list(
                dict.fromkeys(
                    canonical.get(m.group(0).casefold(), m.group(0))
                    for m in pattern.finditer(sentence)
                )
            )
            if len(members) >= 2:
                score = FACT_BASE_SCORE + FACT_SCORE_PER_MEMBER * len(members)
                facts.append(Fact(sentence.strip(), members, score))
        return facts
