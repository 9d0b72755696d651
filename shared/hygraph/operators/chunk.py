"""Chunk operators: passages by vector, by BM25, by graph walk or bridge, and as evidence.

Each ranks chunks into ``state.chunks`` (``(chunk id, score)``, best first) or, with
``into=NAME``, into ``state.rankings[NAME]`` for a later fusion step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.operators.registry import operator
from hygraph.resources import CHUNK_COLLECTION

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def _put(state: State, ranked: list[tuple[str, float]], into: str) -> None:
    if into == "chunks":
        state.chunks = ranked
    else:
        state.rankings[into] = [c for c, _ in ranked]
        state.ranking_scores[into] = [float(s) for _, s in ranked]


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

    ``at_least_top_k`` widens the search to the query's top_k when that is deeper than
    ``k`` (so top_k passages can come back; it never narrows ``k``); ``if_empty`` runs
    only when no earlier step ranked chunks.
    """
    if if_empty and state.chunks:
        return
    depth = max(k, state.top_k) if at_least_top_k else k
    query = state.query if state.query is not None else state.question
    hits = res.search_chunks(query, depth)
    if hits and query is state.query:
        state.greatest[CHUNK_COLLECTION] = hits[0].score
    ranked = [(h.id, h.score) for h in hits if threshold is None or h.score > threshold]
    _put(state, ranked, into)


@operator("chunk.bm25", needs=("bm25",))
def bm25(
    res: Resources, state: State, *, k: int = 5, into: str = "chunks", at_least_top_k: bool = False
) -> None:
    """The ``k`` chunks with the best BM25 score for the question (positive scores only).

    ``at_least_top_k`` widens ``k`` to the query's top_k, as :func:`vdb`'s does.
    """
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

    ``k`` cuts the list (0: the query's top_k, when this list is the passages returned);
    scores are 1, 1/2, 1/3 ...
    """
    if if_empty and state.chunks:
        return
    names = [s for s in sources.split("+") if s]
    cited = [c for n in names for item in state.evidence.get(n, []) for c in item.source_ids]
    ranked = list(dict.fromkeys(cited))[: k or state.top_k]
    _put(state, [(c, 1.0 / (n + 1)) for n, c in enumerate(ranked)], into)


@operator("chunk.evidence", needs=("chunks",))
def evidence(res: Resources, state: State, *, k: int = 5, into: str = "chunks") -> None:
    """Evidence for the best ``k`` ranked chunks (their texts, with the document title).

    ``k`` 0 (or less) keeps every ranked chunk: a list taken whole, to be merged with
    another before the final cut (LightRAG's hybrid).
    """
    state.evidence[into] = res.chunk_evidence(state.chunks[:k] if k > 0 else state.chunks)


@operator("chunk.walk", needs=("hypergraph",))
def walk(
    res: Resources,
    state: State,
    *,
    damping: float = 0.5,
    chunk_seed: float = 0.05,
    mentions: bool = True,
    dense: bool = True,
    dense_k: int = 10,
) -> None:
    """Chunks ranked by personalized PageRank over facts, entities and chunks.

    Seeds: the retrieved entities and facts (each group normalised to its best value)
    and, at weight ``chunk_seed`` (HippoRAG 2's factor), the ``dense_k`` chunks nearest
    to the question (a depth of its own: the query's top_k does not change the walk).
    The walk follows incidences, fact provenance and (``mentions``) chunk mentions.
    """
    from hygraph.operators.walks import fact_walk

    hits = res.search_chunks(state.query_vector(res), dense_k) if dense else []
    ranked = fact_walk(
        res, state.view(res), state.nodes, state.relationships, [(h.id, h.score) for h in hits],
        damping=damping, chunk_seed=chunk_seed, mentions=mentions,
    )  # fmt: skip
    state.chunks = ranked
    state.rankings["lead"] = [c for c, _ in ranked]


# --------------------------------------------------------------------------- knowledge graph


def _within(res: Resources, ranked: list[tuple[str, float]], k: int, budget: int) -> list:
    """``ranked`` cut to ``k`` (0: all) and to a token ``budget`` of chunk texts (0: no cut).

    The cut is :func:`hygraph.retrieval.budget.fit_budget`'s (the first chunk is kept).
    """
    from hygraph.retrieval.budget import fit_budget, token_cost

    ranked = ranked[:k] if k > 0 else ranked
    if budget <= 0 or not ranked:
        return ranked
    texts = res.chunk_texts(c for c, _ in ranked)
    return fit_budget(ranked, budget, token_cost(lambda item: texts.get(item[0], "")))


@operator("chunk.from_rel", needs=("entity-graph",))
def from_rel(
    res: Resources,
    state: State,
    *,
    k: int = 0,
    budget: int = 0,
    pick: str = "order",
    related: int = 0,
    into: str = "chunks",
) -> None:
    """The chunks the retrieved relationships were extracted from (FromRel).

    The union of each relationship's source chunks (a relation edge's extraction
    entries, an n-ary fact's provenance), each chunk once. ``pick="order"`` keeps them in
    relationship order, each scored by the value of the first relationship citing it
    (the framework's ``from_relation``, JayLZhou/GraphRAG Core/Retriever/
    ChunkRetriever.py:79-109, and LightRAG 0.0.9 operate.py:859-893); ``"similarity"``
    ranks them by cosine to the question and keeps ``related`` × (relationships with
    chunks) / 2 (0: all), scored by the cosine (current LightRAG's vector pick,
    v1.5.7 operate.py:6387-6588 with utils.py:5965). Then cut to ``k`` (0: all) and at
    ``budget`` tokens (0: no cut).
    """
    from hygraph.errors import ConfigError
    from hygraph.graph.kinds import EdgeKind

    if pick not in CHUNK_PICKS:
        raise ConfigError(f"from_rel pick must be one of {', '.join(CHUNK_PICKS)}")
    keys = {r.id: (*r.data["members"], EdgeKind.RELATION) for r in state.relationships
            if r.data.get("kind") == EdgeKind.RELATION and "sources" not in r.data}  # fmt: skip
    edges = res.store.get_edges(keys.values())
    nodes = res.store.get_nodes(r.id for r in state.relationships if r.id not in keys)
    ranked: dict[str, float] = {}
    cited = 0  # relationships with at least one source chunk
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
        cited += bool(sources)
    found = list(ranked.items())
    if pick == "similarity":
        found = _by_similarity(res, state, list(ranked), _pick_limit(related, cited))
    _put(state, _within(res, found, k, budget), into)


CHUNK_PICKS = ("order", "similarity")


def _pick_limit(related: int, sources: int) -> int:
    """How many chunks a similarity pick keeps: ``related`` × ``sources`` / 2 (0: all).

    Current LightRAG keeps ``related_chunk_number`` × (entities or relations with
    chunks) / 2 candidates (v1.5.7 operate.py:6220 and :6512); at least one is kept.
    """
    return max(1, int(related * sources / 2)) if related > 0 else 0


def _by_similarity(
    res: Resources, state: State, candidates: list[str], limit: int
) -> list[tuple[str, float]]:
    """``candidates`` by cosine between their stored vectors and the question's, best first.

    The search is restricted to the candidates (no chunk is embedded again) and keeps
    ``limit`` of them (0: all); a chunk without a vector is dropped, as current
    LightRAG's ``pick_by_vector_similarity`` skips it (v1.5.7 utils.py:5965-6104).
    """
    from hygraph.resources import CHUNK_COLLECTION

    if not candidates:
        return []
    depth = min(limit, len(candidates)) if limit > 0 else len(candidates)
    hits = res.search_vectors(CHUNK_COLLECTION, state.query_vector(res), depth, ids=candidates)
    return [(h.id, h.score) for h in hits]


OCCURRENCE_MODES = ("entity", "similarity", "paper")


@operator("chunk.occurrence", needs=("entity-graph",))
def occurrence(
    res: Resources,
    state: State,
    *,
    k: int = 0,
    mode: str = "entity",
    budget: int = 0,
    related: int = 0,
    into: str = "chunks",
) -> None:
    """The chunks of the retrieved entities or relationships, ranked (Occurrence).

    ``mode="entity"``: the chunks of the retrieved entities in entity order, each
    entity's chunks by how many of its relation neighbours also occur in them (then
    index order), a chunk under the first entity citing it: the framework's
    ``entity_occurrence`` (JayLZhou/GraphRAG Core/Retriever/ChunkRetriever.py:18-77,
    sort key at :67-69) and original LightRAG's
    ``_find_most_related_text_unit_from_entities`` (0.0.9 operate.py:545-621); Microsoft
    GraphRAG's local search sorts its text units by the same key.
    ``mode="similarity"``: the same candidate chunks ranked by cosine to the question
    (the whole question, not its keywords), keeping ``related`` × (entities with chunks)
    / 2 of them (0: all): current LightRAG's default ``kg_chunk_pick_method="VECTOR"``
    (v1.5.7 operate.py:6136-6292, utils.py:5965; constants.py:63-64).
    ``mode="paper"``: the paper's wording (spec 002 §4.3 C3), which no reference code
    implements: every chunk starts at 0 and gains 1 for each retrieved relationship all
    of whose entities it mentions; chunks with a positive count rank by it (ties: the
    earlier relationship, then index order).
    Then cut to ``k`` (0: all) and at ``budget`` tokens (0: no cut).
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
    elif mode == "similarity":
        cited = [list(dict.fromkeys(mentioned.get(hit.id, []))) for hit in state.nodes]
        candidates = list(dict.fromkeys(c for chunks in cited for c in chunks))
        limit = _pick_limit(related, sum(1 for chunks in cited if chunks))
        ranked = _by_similarity(res, state, candidates, limit)
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
