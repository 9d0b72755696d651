"""Every node and edge kind the graph store holds, in one place.

Kinds are string enums: a member compares equal to its value, so the store keeps
plain strings and a row read back matches the member. Layers own their kinds (the
comment after each says which); nothing else spells a kind as a literal.
"""

from __future__ import annotations

from enum import StrEnum


class NodeKind(StrEnum):
    """What a node is."""

    ENTITY = "entity"  # shared entity graph: one per normalised name (N in NodeRAG)
    FACT = "fact"  # hypergraph: an n-ary fact (hyperedge)
    UNIT = "unit"  # heterograph S: a semantic unit
    RELATIONSHIP = "relationship"  # heterograph R: statements about one entity pair
    ATTRIBUTE = "attribute"  # heterograph A: portrait of an important entity
    HIGH_LEVEL = "high_level"  # heterograph H: a community insight
    OVERVIEW = "overview"  # heterograph O: the title of an H
    COMMUNITY = "community"  # communities: a Leiden community of entities (one level)
    # -- tree layers (RAPTOR, RAPTOR-K)
    TREE_SUMMARY = "tree_summary"  # tree layers: a cluster summary of level >= 1
    # -- HiRAG
    HI_SUMMARY = "hi_summary"  # hirag: a summary entity of layer i >= 1
    HI_COMMUNITY = "hi_community"  # hirag: a Leiden community of the multi-layer graph
    # -- HyGRAG
    HY_COMMUNITY = "hy_community"  # hygrag: a summary node of one LSH layer (layer >= 1)


class EdgeKind(StrEnum):
    """What an edge joins."""

    RELATION = "relation"  # entity graph: entity - entity, from extracted relations
    MENTION = "mentions"  # entity graph: chunk - entity
    INCIDENCE = "incidence"  # hypergraph: fact - member entity
    UNIT_MENTION = "nr_mention"  # heterograph: S - N
    RELATIONSHIP_END = "nr_end"  # heterograph: R - N
    ATTRIBUTE_OF = "nr_attribute"  # heterograph: N - A
    MEMBER = "nr_member"  # heterograph: H - S/A
    TITLE = "nr_title"  # heterograph: H - O
    TEXT = "nr_text"  # heterograph: T (chunk) - S
    SEMANTIC = "nr_semantic"  # heterograph: kNN between embedded T/S/A/H
    UNIT_RELATIONSHIP = "nr_unit_relation"  # heterograph option: R - S (spec 004 §8 #16)
    IN_COMMUNITY = "in_community"  # communities: entity - community
    SUBCOMMUNITY = "subcommunity"  # communities: parent community - child community
    # -- tree layers (RAPTOR, RAPTOR-K)
    TREE_CHILD = "tree_child"  # tree layers: summary - child (chunk or lower summary)
    # -- HiRAG
    HI_SUMMARY_OF = "hi_summary_of"  # hirag: layer i-1 member - layer i summary entity
    HI_IN_COMMUNITY = "hi_in_community"  # hirag: entity or summary - hirag community
    HI_SUBCOMMUNITY = "hi_subcommunity"  # hirag: parent community - child community
    # -- HyGRAG
    HY_MEMBER = "hy_member"  # hygrag: summary node - child (chunk, entity, summary)
    HY_SHARED = "hy_shared"  # hygrag: chunk - chunk sharing >= l entities
    # -- PPR family (HippoRAG, HippoRAG 2, FastGraphRAG)
    SYNONYM = "synonym"  # synonyms: entity - entity with similar vectors (cosine >= threshold)
    # -- agentic (KGP, G-Retriever)
    PASSAGE_SHARED = "pg_shared"  # passage-graph: chunk - chunk sharing >= tau entities
    PASSAGE_SIMILAR = "pg_similar"  # passage-graph option: chunk - its k most similar chunks


#: The heterograph's structural edges (everything but the kNN edges).
HETEROGRAPH_STRUCTURAL = (
    EdgeKind.UNIT_MENTION,
    EdgeKind.RELATIONSHIP_END,
    EdgeKind.ATTRIBUTE_OF,
    EdgeKind.MEMBER,
    EdgeKind.TITLE,
    EdgeKind.TEXT,
    EdgeKind.UNIT_RELATIONSHIP,
)
#: Every edge of the heterograph layer.
HETEROGRAPH_EDGES = (*HETEROGRAPH_STRUCTURAL, EdgeKind.SEMANTIC)
#: Edges of layers built on the shared graph (hidden from the framework property graphs).
LAYER_EDGES = frozenset(
    {
        *HETEROGRAPH_EDGES,
        EdgeKind.IN_COMMUNITY,
        EdgeKind.SUBCOMMUNITY,
        EdgeKind.TREE_CHILD,
        EdgeKind.HI_SUMMARY_OF,
        EdgeKind.HI_IN_COMMUNITY,
        EdgeKind.HI_SUBCOMMUNITY,
        EdgeKind.HY_MEMBER,
        EdgeKind.HY_SHARED,
        EdgeKind.SYNONYM,
        EdgeKind.PASSAGE_SHARED,
        EdgeKind.PASSAGE_SIMILAR,
    }
)
