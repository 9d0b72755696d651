"""The rich knowledge graph (RKG, spec 002 §2): relation keywords and their relation index.

The shared entity graph already is the *textual* knowledge graph of the 002 framework:
entities carry a name, a type and descriptions merged across chunks, relation edges a
name (the most frequent label), per-chunk descriptions and a weight (summed strength).
LightRAG's rich graph adds a few **high-level keywords** to every relationship, and
indexes relationships by ``keywords + endpoints + description``. Two layers add that:

* ``relation-keywords``: keywords on each relation edge (``data["keywords"]``). The
  shared extraction gives none, so they are derived here: with an LLM configured for
  the build (``relation_keywords="auto"`` or ``"llm"``), batches of relations go through
  the shared fan-out with :func:`~hygraph.prompts.lightrag.relation_keywords_messages`;
  otherwise (or for a batch whose reply is unusable) by rule: the phrases of the
  relation's labels, then of its descriptions without the endpoint names
  (:func:`~hygraph.extract.phrases.relation_keywords`). ``data["keywords_by"]`` says
  which. The entity graph rewrites an edge's data when a chunk adds to it or a delete
  takes from it, which drops the keywords; this layer then derives them again (it
  takes the same chunks, and the edges a delete touched), and a digest of what they
  were derived from (``keywords_of``) skips edges that did not change.
* ``rich-relation-vectors``: the relation vectors of :mod:`hygraph.layers.relation_vectors`
  with the keywords first (``"keywords\\nsource label target: descriptions"``), in the
  ``rich_relations`` collection, so the plain relation index stays as it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.graph.store import Edge
from hygraph.layers.base import Layer, LayerConfig, in_batches, register_layer
from hygraph.layers.relation_vectors import RelationVectors, named_relations, relation_text

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

RICH_RELATION_COLLECTION = "rich_relations"
BUILD_BATCH = 256  # chunks per progress mark
RELATIONS_PER_CALL = 20  # ours: relations annotated by one LLM call
DESCRIPTION_WORDS = 60  # ours: words of a relation's descriptions shown to the LLM
KEYWORD_MODES = ("auto", "llm", "offline")
GENERIC_LABEL = "related to"  # the label of a relation its source did not name

EdgeKey = tuple[str, str, str]


@dataclass
class RelationKeywordsConfig(LayerConfig):
    relation_keywords: str = "auto"  # auto: the build's LLM if any, else rules | llm | offline
    keywords_per_relation: int = 5  # ours: LightRAG's extraction asks for "one or more"

    def __post_init__(self) -> None:
        if self.relation_keywords not in KEYWORD_MODES:
            raise ConfigError(f"relation_keywords must be one of {', '.join(KEYWORD_MODES)}")


def relation_parts(edge: Edge) -> tuple[str, list[str], list[str]]:
    """A relation edge's name, its distinct labels and its distinct descriptions."""
    entries = edge.data.get("entries", {})
    items = [item for found in entries.values() for item in found]
    labels = list(dict.fromkeys(str(i[0]).strip() for i in items if i and str(i[0]).strip()))
    descriptions = list(
        dict.fromkeys(str(i[1]).strip() for i in items if len(i) > 1 and str(i[1]).strip())
    )
    return str(edge.data.get("label", "")), labels, descriptions


def edge_keywords(edge: Edge) -> list[str]:
    """The keywords stored on a relation edge ([] when it has none yet)."""
    return [str(k) for k in edge.data.get("keywords", [])]


def _digest(edge: Edge) -> str:
    label, labels, descriptions = relation_parts(edge)
    text = json.dumps([label, labels, descriptions], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def touched_relations(res: Resources, removed: DeleteResult) -> list[EdgeKey]:
    """Keys of the relation edges at entities a delete touched (their data was rewritten)."""
    touched = set(removed.touched_node_ids)
    rows = res.store.edge_rows([EdgeKind.RELATION])
    return [(s, d, EdgeKind.RELATION) for s, d, _ in rows if s in touched or d in touched]


@register_layer
class RelationKeywords(Layer):
    name = "relation-keywords"
    description = "high-level keywords on every relation edge (LLM when configured, else rules)"
    requires = ("entity-graph",)
    after_extraction = True
    task = "layer:relation-keywords"
    Config = RelationKeywordsConfig

    config: RelationKeywordsConfig

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        for batch in in_batches(res, chunk_ids, BUILD_BATCH, "relation keywords"):
            self.annotate(res, named_relations(res, batch))
            res.store.mark_done(self.task or "", batch)

    def annotate(self, res: Resources, keys: Iterable[EdgeKey]) -> int:
        """Derive and store the keywords of the edges ``keys`` that lack current ones.

        Returns how many edges were annotated (missing edges are skipped).
        """
        edges = res.store.get_edges(keys)
        todo = {k: e for k, e in sorted(edges.items()) if e.data.get("keywords_of") != _digest(e)}
        if not todo:
            return 0
        ids = {n for k in todo for n in k[:2]}
        names = {i: n.name or i for i, n in res.store.get_nodes(ids).items()}
        found = self._keywords(res, todo, names)
        updated = []
        for key, edge in todo.items():
            keywords, by = found[key]
            data = {**edge.data, "keywords": keywords, "keywords_of": _digest(edge),
                    "keywords_by": by}  # fmt: skip
            updated.append(Edge(edge.src, edge.dst, edge.kind, edge.weight, data))
        res.store.upsert_edges(updated)
        return len(updated)

    def _use_llm(self, res: Resources) -> bool:
        mode = self.config.relation_keywords
        if mode == "llm" and res.llm is None:
            raise ConfigError(
                "relation_keywords=llm needs an LLM: pass llm=... or set OPENAI_MODEL"
            )
        return mode != "offline" and res.llm is not None

    def _keywords(
        self, res: Resources, edges: dict[EdgeKey, Edge], names: dict[str, str]
    ) -> dict[EdgeKey, tuple[list[str], str]]:
        """Keywords and how they were made (``llm`` / ``offline``) for each edge."""
        from hygraph.extract.phrases import relation_keywords

        limit = self.config.keywords_per_relation
        out: dict[EdgeKey, tuple[list[str], str]] = {}
        for key, edge in edges.items():
            _, labels, descriptions = relation_parts(edge)
            labels = [x for x in labels if x.casefold() != GENERIC_LABEL]
            endpoints = [names.get(key[0], ""), names.get(key[1], "")]
            out[key] = (relation_keywords(labels, descriptions, endpoints, limit), "offline")
        if self._use_llm(res):
            out.update(self._llm_keywords(res, edges, names))
        return out

    def _llm_keywords(
        self, res: Resources, edges: dict[EdgeKey, Edge], names: dict[str, str]
    ) -> dict[EdgeKey, tuple[list[str], str]]:
        """The LLM's keywords for the edges it annotated (a failed batch is left out)."""
        from hygraph.prompts.lightrag import (
            parse_relation_keywords,
            relation_keywords_messages,
            relation_line,
        )

        limit = self.config.keywords_per_relation
        keys = list(edges)
        groups = [keys[i : i + RELATIONS_PER_CALL] for i in range(0, len(keys), RELATIONS_PER_CALL)]
        prompts = []
        for group in groups:
            lines = []
            for n, key in enumerate(group, start=1):
                label, _, descriptions = relation_parts(edges[key])
                words = " ".join(descriptions).split()[:DESCRIPTION_WORDS]
                lines.append(relation_line(n, names.get(key[0], key[0]), label,
                                           names.get(key[1], key[1]), " ".join(words)))  # fmt: skip
            prompts.append(relation_keywords_messages(lines, limit))
        replies = res.complete_many(prompts, "relation keywords")
        out: dict[EdgeKey, tuple[list[str], str]] = {}
        for group, reply in zip(groups, replies, strict=True):
            try:
                if isinstance(reply, BaseException):
                    raise reply
                found = parse_relation_keywords(reply, len(group))
            except Exception as err:  # noqa: BLE001 - the rules stand in for this batch
                log.warning("relation keywords: a batch falls back to the rules (%s)", err)
                continue
            for n, key in enumerate(group, start=1):
                if n in found:
                    out[key] = (found[n][:limit], "llm")
        return out

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self.annotate(res, touched_relations(res, removed))

    def reset(self, res: Resources) -> None:
        stale = ("keywords", "keywords_of", "keywords_by")
        kept = [e for e in res.store.iter_edges(EdgeKind.RELATION) if set(stale) & set(e.data)]
        updated = [
            Edge(
                e.src, e.dst, e.kind, e.weight, {k: v for k, v in e.data.items() if k not in stale}
            )
            for e in kept
        ]
        res.store.upsert_edges(updated)
        super().reset(res)


def rich_relation_text(edge: Edge, src_name: str, dst_name: str) -> str:
    """A relation as LightRAG indexes it: keywords, then ``source label target: descriptions``."""
    label, _, descriptions = relation_parts(edge)
    body = relation_text(src_name, label, dst_name, descriptions)
    keywords = edge_keywords(edge)
    return f"{', '.join(keywords)}\n{body}" if keywords else body


@register_layer
class RichRelationVectors(RelationVectors):
    name = "rich-relation-vectors"
    description = "relation vectors with their keywords first, in 'rich_relations'"
    requires = ("relation-keywords",)
    collections = (RICH_RELATION_COLLECTION,)
    task = "layer:rich-relation-vectors"
    collection = RICH_RELATION_COLLECTION
    ids_task = "rich-relation-vectors:ids"

    def text(self, edge: Edge, src_name: str, dst_name: str) -> str:
        return rich_relation_text(edge, src_name, dst_name)


def relation_record(edge: Edge) -> dict[str, Any]:
    """What the context shows of a relation edge: name, descriptions, keywords, weight."""
    label, _, descriptions = relation_parts(edge)
    return {
        "label": label or "related to",
        "description": "; ".join(descriptions),
        "keywords": edge_keywords(edge),
        "weight": float(edge.weight),
    }
