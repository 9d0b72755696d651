"""Chunk operators: passages by vector, by BM25, by graph walk or bridge, and as evidence.

Each ranks chunks into ``state.chunks`` (``(chunk id, score)``, best first) or, with
``into=NAME``, into ``state.rankings[NAME]`` for a later fusion step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def _put(state: State, ranked: list[tuple[str, float]], into: str) -> None:
    if into == "chunks":
        state.chunks = ranked
    else:
        state.rankings[into] = [c for c, _ in ranked]


@operator("chunk.vdb", needs=("chunks",))
def vdb(
    res: Resources,
    state: State,
    *,
    k: int = 5,
    threshold: float | None = None,
    into: str = "chunks",
    at_least_top_k: bool = False,
    if_empty: bool = False,
) -> None:
    """The ``k`` chunks nearest to the question by cosine (above ``threshold`` if set).

    ``at_least_top_k`` searches at least the query's top_k deep; ``if_empty`` runs only
    when no earlier step ranked chunks.
    """
    if if_empty and state.chunks:
        return
    depth = max(k, state.top_k) if at_least_top_k else k
    query = state.query if state.query is not None else state.question
    hits = res.search_chunks(query, depth)
    ranked = [(h.id, h.score) for h in hits if threshold is None or h.score > threshold]
    _put(state, ranked, into)


@operator("chunk.bm25", needs=("bm25",))
def bm25(
    res: Resources, state: State, *, k: int = 5, into: str = "chunks", at_least_top_k: bool = False
) -> None:
    """The ``k`` chunks with the best BM25 score for the question (positive scores only)."""
    depth = max(k, state.top_k) if at_least_top_k else k
    _put(state, res.layer("bm25").search(res, state.question, depth), into)


@operator("chunk.from_evidence")
def from_evidence(
    res: Resources,
    state: State,
    *,
    sources: str = "facts+entities",
    k: int = 0,
    into: str = "chunks",
    if_empty: bool = False,
) -> None:
    """Chunks in the order the named evidence lists cite them (the reference code's mode).

    ``k`` cuts the list (0: the query's top_k); scores are 1, 1/2, 1/3 ...
    """
    if if_empty and state.chunks:
        return
    names = [s for s in sources.split("+") if s]
    cited = [c for n in names for item in state.evidence.get(n, []) for c in item.source_ids]
    ranked = list(dict.fromkeys(cited))[: k or state.top_k]
    _put(state, [(c, 1.0 / (n + 1)) for n, c in enumerate(ranked)], into)


@operator("chunk.evidence", needs=("chunks",))
def evidence(res: Resources, state: State, *, k: int = 5, into: str = "chunks") -> None:
    """Evidence for the best ``k`` ranked chunks (their texts, with the document title)."""
    state.evidence[into] = res.chunk_evidence(state.chunks[:k])


@operator("chunk.walk", needs=("hypergraph",))
def walk(
    res: Resources,
    state: State,
    *,
    damping: float = 0.5,
    chunk_seed: float = 0.05,
    mentions: bool = True,
    dense: bool = True,
) -> None:
    """Chunks ranked by personalized PageRank over facts, entities and chunks.

    Seeds: the retrieved entities and facts (each group normalised to its best value)
    and, at weight ``chunk_seed``, the top_k dense chunks (HippoRAG 2's factor). The
    walk follows incidences, fact provenance and (``mentions``) chunk mentions.
    """
    from hygraph.operators.walks import fact_walk

    hits = res.search_chunks(state.query_vector(res), state.top_k) if dense else []
    ranked = fact_walk(
        res, state.view(res), state.nodes, state.relationships, [(h.id, h.score) for h in hits],
        damping=damping, chunk_seed=chunk_seed, mentions=mentions,
    )  # fmt: skip
    state.chunks = ranked
    state.rankings["lead"] = [c for c, _ in ranked]


# --------------------------------------------------------------------------- knowledge graph


def _within(res: Resources, ranked: list[tuple[str, float]], k: int, budget: int) -> list:
    """``ranked`` cut to ``k`` (0: all), then while the chunks' tokens fit ``budget`` (0: all)."""
    from hygraph.ingest.tokenizer import default_tokenizer

    ranked = ranked[:k] if k > 0 else ranked
    if budget <= 0 or not ranked:
        return ranked
    texts = res.chunk_texts(c for c, _ in ranked)
    tok, used, kept = default_tokenizer(), 0, []
    for chunk_id, score in ranked:
        used += tok.count(texts.get(chunk_id, ""))
        if used > budget:
            break
        kept.append((chunk_id, score))
    return kept


@operator("chunk.from_rel", needs=("entity-graph",))
def from_rel(
    res: Resources, state: State, *, k: int = 0, budget: int = 0, into: str = "chunks"
) -> None:
    """The chunks the retrieved relationships were extracted from, in their order (FromRel).

    The union of each relationship's source chunks (a relation edge's extraction
    entries, an n-ary fact's provenance), each chunk once and scored by the value of the
    first relationship citing it; cut to ``k`` (0: all) and at ``budget`` tokens (0: no
    cut), as LightRAG's code does.
    """
    from hygraph.graph.kinds import EdgeKind

    keys = {r.id: (*r.data["members"], EdgeKind.RELATION) for r in state.relationships
            if r.data.get("kind") == EdgeKind.RELATION and "sources" not in r.data}  # fmt: skip
    edges = res.store.get_edges(keys.values())
    nodes = res.store.get_nodes(r.id for r in state.relationships if r.id not in keys)
    ranked: dict[str, float] = {}
    for rel in state.relationships:
        if "sources" in rel.data:
            sources = list(rel.data["sources"])
        elif rel.id in keys:
            edge = edges.get(keys[rel.id])
            sources = list(edge.data.get("entries", {})) if edge is not None else []
        else:
            node = nodes.get(rel.id)
            sources = list(node.sources) if node is not None else []
        for chunk_id in sources:
            ranked.setdefault(chunk_id, rel.value)
    _put(state, _within(res, list(ranked.items()), k, budget), into)


OCCURRENCE_MODES = ("paper", "entity")


@operator("chunk.occurrence", needs=("entity-graph",))
def occurrence(
    res: Resources,
    state: State,
    *,
    k: int = 0,
    mode: str = "paper",
    budget: int = 0,
    into: str = "chunks",
) -> None:
    """Chunks where the retrieved relationships' entities occur together (Occurrence).

    ``mode="paper"`` (spec 002 §4.3): every chunk starts at 0 and gains 1 for each
    retrieved relationship all of whose entities it mentions; chunks with a positive
    count rank by it (ties: the earlier relationship, then index order).
    ``mode="entity"`` (the reference code's ``entity_occurrence``, from LightRAG): the
    chunks of the retrieved entities, in entity order, each entity's chunks by how many
    of its relation neighbours they also mention (then index order). Cut to ``k`` (0:
    all) and at ``budget`` tokens (0: no cut).
    """
    from hygraph.errors import ConfigError
    from hygraph.graph.kinds import EdgeKind, NodeKind

    if mode not in OCCURRENCE_MODES:
        raise ConfigError(f"occurrence mode must be one of {', '.join(OCCURRENCE_MODES)}")
    view = state.view(res)
    mentioned = view.provenance(NodeKind.ENTITY)  # entity -> chunks that mention it
    ranked: list[tuple[str, float]] = []
    if mode == "paper":
        count: dict[str, int] = {}
        first: dict[str, int] = {}
        for n, rel in enumerate(state.relationships):
            members = rel.data.get("members", ())
            if not members:
                continue
            shared = set(mentioned.get(members[0], []))
            for member in members[1:]:
                shared &= set(mentioned.get(member, []))
            for chunk_id in shared:
                count[chunk_id] = count.get(chunk_id, 0) + 1
                first.setdefault(chunk_id, n)
        at = res.store.chunk_positions(count)
        order = sorted(count, key=lambda c: (-count[c], first[c], at.get(c, len(at)), c))
        ranked = [(c, float(count[c])) for c in order]
    else:
        links = view.links(EdgeKind.RELATION)
        seen: set[str] = set()
        for hit in state.nodes:
            chunks = [c for c in dict.fromkeys(mentioned.get(hit.id, [])) if c not in seen]
            neighbours = set(links.out.get(hit.id, [])) | set(links.into.get(hit.id, []))
            counts = {c: sum(c in set(mentioned.get(o, [])) for o in neighbours) for c in chunks}
            at = res.store.chunk_positions(chunks)
            for chunk_id in sorted(chunks, key=lambda c: (-counts[c], at.get(c, len(at)), c)):
                ranked.append((chunk_id, 1.0 / (len(ranked) + 1)))
                seen.add(chunk_id)
    _put(state, _within(res, ranked, k, budget), into)
