"""The ``Extraction`` schema: everything extracted from one chunk.

One schema serves every method ("extract once, build many"):

- **entities**: name as written, normalised key, type, description and an
  importance score (0–100, the HyperGraphRAG scale);
- **relations**: binary (source, target, label) with a description and a weight
  (relationship strength; 1.0 when a source gives none);
- **facts**: n-ary statements in natural language with their member entities and
  a completeness score (0–10): the hyperedges of HyperGraphRAG;
- **units**: short self-contained event/statement texts: the S nodes of NodeRAG.

Every source (offline rules, LLM prompts, precomputed files) produces this
schema; :meth:`Extraction.normalised` makes any of them consistent (entities
merged by key within the chunk, relation and fact members present as entities,
scores clamped into range).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from hygraph.extract.keys import display_name, entity_key

ENTITY_SCORE_RANGE = (0.0, 100.0)  # HyperGraphRAG: importance (0, 100]
FACT_SCORE_RANGE = (0.0, 10.0)  # HyperGraphRAG: completeness (0, 10]
DEFAULT_ENTITY_SCORE = 50.0  # HyperGraphRAG reference code default for a missing score
DEFAULT_FACT_SCORE = 1.0  # same source
DEFAULT_TYPE = "entity"


def _clamp(value: float, bounds: tuple[float, float]) -> float:
    return min(bounds[1], max(bounds[0], float(value)))


@dataclass
class Entity:
    name: str
    type: str = DEFAULT_TYPE
    description: str = ""
    score: float = DEFAULT_ENTITY_SCORE

    @property
    def key(self) -> str:
        return entity_key(self.name)


@dataclass
class Relation:
    source: str
    target: str
    label: str = ""
    description: str = ""
    weight: float = 1.0

    @property
    def source_key(self) -> str:
        return entity_key(self.source)

    @property
    def target_key(self) -> str:
        return entity_key(self.target)


@dataclass
class Fact:
    """An n-ary statement and its member entities (a HyperGraphRAG hyperedge).

    ``member_scores`` and ``member_descriptions`` optionally hold what the extractor
    said about a member *under this fact* (HyperGraphRAG lists each fact's entities
    with their own importance and description); keys are member names as in
    ``entities``. Sources without per-fact detail leave them empty.
    """

    text: str
    entities: list[str] = field(default_factory=list)
    score: float = DEFAULT_FACT_SCORE
    member_scores: dict[str, float] = field(default_factory=dict)
    member_descriptions: dict[str, str] = field(default_factory=dict)


@dataclass
class Unit:
    """A semantic unit (NodeRAG's S node): one self-contained event or statement.

    ``entities`` names the entities the unit mentions, when the source says so (the
    NodeRAG decomposition prompt lists them per unit); sources that only give the
    text leave it empty and the NodeRAG builder finds the chunk's entities in the text.
    """

    text: str
    entities: list[str] = field(default_factory=list)


@dataclass
class Extraction:
    """What one extractor found in one chunk."""

    chunk_id: str
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    extractor: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The extraction as plain data (what ``from_dict`` reads).

        Field by field rather than ``dataclasses.asdict``, which deep-copies every value
        and took most of the time of storing a batch of extractions.
        """
        return {
            "chunk_id": self.chunk_id,
            "entities": [dict(vars(e)) for e in self.entities],
            "relations": [dict(vars(r)) for r in self.relations],
            "facts": [
                {
                    **vars(f),
                    "entities": list(f.entities),
                    "member_scores": dict(f.member_scores),
                    "member_descriptions": dict(f.member_descriptions),
                }
                for f in self.facts
            ],  # fmt: skip
            "units": [{**vars(u), "entities": list(u.entities)} for u in self.units],
            "extractor": self.extractor,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Extraction:
        return cls(
            chunk_id=data["chunk_id"],
            entities=[Entity(**e) for e in data.get("entities", [])],
            relations=[Relation(**r) for r in data.get("relations", [])],
            facts=[Fact(**f) for f in data.get("facts", [])],
            units=[Unit(**u) for u in data.get("units", [])],
            extractor=data.get("extractor", ""),
        )

    def normalised(self) -> Extraction:
        """A consistent copy: one entity per key, every referenced entity present, scores in range.

        Merging within a chunk keeps the first-seen display name and type (a typed
        mention wins over the default type), joins distinct descriptions, and keeps
        the highest score. Items with empty names or texts are dropped.
        """
        by_key: dict[str, Entity] = {}

        def add(
            name: str,
            etype: str = DEFAULT_TYPE,
            description: str = "",
            score: float = DEFAULT_ENTITY_SCORE,
        ) -> str:
            shown = display_name(name)
            key = entity_key(shown)
            if not key:
                return ""
            current = by_key.get(key)
            if current is None:
                by_key[key] = Entity(
                    shown,
                    etype or DEFAULT_TYPE,
                    description.strip(),
                    _clamp(score, ENTITY_SCORE_RANGE),
                )
                return key
            if current.type == DEFAULT_TYPE and etype and etype != DEFAULT_TYPE:
                current.type = etype
            description = description.strip()
            if description and description not in current.description:
                current.description = (
                    f"{current.description}\n{description}" if current.description else description
                )
            current.score = max(current.score, _clamp(score, ENTITY_SCORE_RANGE))
            return key

        for e in self.entities:
            add(e.name, e.type, e.description, e.score)
        relations: list[Relation] = []
        seen_rel: set[tuple[str, str, str]] = set()
        for r in self.relations:
            source, target = display_name(r.source), display_name(r.target)
            if not add(source) or not add(target) or entity_key(source) == entity_key(target):
                continue
            ident = (entity_key(source), entity_key(target), r.label.strip().casefold())
            if ident in seen_rel:
                continue
            seen_rel.add(ident)
            relations.append(
                Relation(
                    source,
                    target,
                    r.label.strip(),
                    r.description.strip(),
                    max(0.0, float(r.weight)),
                )
            )
        facts: list[Fact] = []
        seen_fact: set[str] = set()
        for f in self.facts:
            text = " ".join(f.text.split())
            if not text or text in seen_fact:
                continue
            seen_fact.add(text)
            members = list(dict.fromkeys(display_name(m) for m in f.entities if add(m)))
            scores = {
                display_name(m): _clamp(v, ENTITY_SCORE_RANGE) for m, v in f.member_scores.items()
            }
            descriptions = {
                display_name(m): d.strip() for m, d in f.member_descriptions.items() if d.strip()
            }
            facts.append(
                Fact(
                    text,
                    members,
                    _clamp(f.score, FACT_SCORE_RANGE),
                    {m: v for m, v in scores.items() if m in members},
                    {m: d for m, d in descriptions.items() if m in members},
                )
            )
        unit_members: dict[str, list[str]] = {}
        for u in self.units:
            text = " ".join(u.text.split())
            if not text:
                continue
            members = unit_members.setdefault(text, [])
            for m in u.entities:
                shown = display_name(m)
                if add(m) and shown not in members:
                    members.append(shown)
        return Extraction(
            chunk_id=self.chunk_id,
            entities=list(by_key.values()),
            relations=relations,
            facts=facts,
            units=[Unit(text, members) for text, members in unit_members.items()],
            extractor=self.extractor,
        )


@dataclass(frozen=True)
class ChunkInput:
    """What an extractor reads: a chunk's id, document, and text (title header included).

    ``doc_hash`` is the document's content hash (lets importers match by content).
    """

    id: str
    doc_id: str
    text: str
    title: str | None = None
    doc_hash: str | None = None


@dataclass
class ExtractionStats:
    """Counters an extractor keeps across calls, for the build report and warnings."""

    chunks: int = 0
    entities: int = 0
    relations: int = 0
    facts: int = 0
    units: int = 0
    malformed_items: int = 0
    failed_chunks: int = 0
    empty_llm_chunks: int = 0

    def count(self, extraction: Extraction) -> None:
        self.chunks += 1
        self.entities += len(extraction.entities)
        self.relations += len(extraction.relations)
        self.facts += len(extraction.facts)
        self.units += len(extraction.units)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@runtime_checkable
class Extractor(Protocol):
    """Fills the schema for a batch of chunks.

    ``name`` identifies the extractor and its settings (recorded in the manifest).
    ``extract`` returns one normalised :class:`Extraction` per input chunk it could
    process, in input order; chunks it could not process (an LLM that kept failing)
    are left out, counted in ``stats.failed_chunks``, and retried by the next build.
    """

    name: str
    stats: ExtractionStats

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]: ...
