"""Operators of the personalized-PageRank family: Link, PPR, the two Aggregators, and
HippoRAG 2's fact linking, recognition filter and passage walk.

The unified framework (spec 002) writes HippoRAG and FastGraphRAG as
``Link + PPR → relationship Aggregator → chunk Aggregator``:

* ``node.link`` (N6): each question entity → its nearest graph entity (top-1) by
  vector; the similarities go to ``state.seeds``.
* ``node.ppr`` (N3): personalized PageRank over the entity graph
  (:func:`~hygraph.graph.ppr_views.entity_walk`). ``mode="hipporag"`` restarts at
  the linked entities, each weighted ``1 / (chunks that mention it)`` (node
  specificity); ``mode="fastgraphrag"`` restarts at the linked entities' similarities
  plus the similarities of the ``vdb_k`` (8) entities nearest to the question vector.
  The full score vector stays in ``state.subgraph["ppr"]``; the top ``k`` entities go
  to ``state.nodes``.
* ``relationship.aggregator`` (R3): ``r = Eᵀ p`` — each relationship scores the PPR
  mass of its two entities; the top ``k`` go to ``state.relationships``.
* ``chunk.aggregator`` (C1): ``Ψ = r M`` over the relationship → chunk provenance,
  min-max normalised (reference code), best first into ``state.chunks``.

**Damping.** :func:`~hygraph.graph.algorithms.ppr.personalized_pagerank` takes
``damping`` as the probability of *following an edge* (restart with ``1 - damping``),
the meaning igraph's ``personalized_pagerank(damping=...)`` has. The framework's
reference code passes ``damping: 0.1`` to igraph (so a walk continues with
probability 0.1 and stays within a hop or two of its seeds), as HippoRAG's released
code does with its default 0.1 (its docstring calls it the jump probability, which is
the other way round); HippoRAG 2's code and paper use 0.5. The methods state which
they use.

HippoRAG 2 (Gutiérrez et al., ICML 2025; reference code ``HippoRAG.py``):

* ``relationship.fact_link``: the ``k`` (5) relations (facts) nearest to the question
  vector, their cosines min-max normalised over *all* facts (the least cosine is
  found by searching with the negated query vector).
* ``relationship.recognize``: an LLM keeps the facts that help answer the question
  ("recognition memory"); without an LLM the best ``unfiltered`` facts pass.
* ``node.fact_entities``: each kept fact lends its two entities its score divided by
  the entity's chunk count; an entity's seed is the mean over its facts; the top
  ``k`` (5) entities become ``state.seeds``.
* ``chunk.ppr``: PPR (damping 0.5) over entities *and* passages
  (:func:`~hygraph.graph.ppr_views.passage_walk`), restarting at the seed entities and
  at every passage with ``passage_weight`` (0.05) × its min-max normalised dense score;
  passages rank by their PPR score. With no seed entity (no fact kept) the ranking is
  dense retrieval, as in the reference code.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.layers.relation_vectors import relation_ids
from hygraph.operators.registry import operator
from hygraph.vectors.half_screen import top_positions as _top

if TYPE_CHECKING:
    from hygraph.operators.state import Scored, State
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

ENTITY_COLLECTION = "entities"  # the entity-vectors layer's collection
RELATION_COLLECTION = "relations"  # the relation-vectors layer's collection
#: Collections whose points are the relation edges, under ids ``"src|dst"``: the
#: relation-vectors layer's and the fact-vectors layer's (``exact_scores`` reads both alike).
EDGE_COLLECTIONS = (RELATION_COLLECTION, "facts")
PPR_MODES = ("hipporag", "fastgraphrag")
RECOGNITION_MODES = ("auto", "llm", "off")


def _relationship(rel_id: str, value: float, cosine: float = 0.0) -> Scored:
    from hygraph.operators.state import Scored

    members = tuple(rel_id.split("|", 1))
    return Scored(rel_id, value, cosine=cosine, data={"kind": EdgeKind.RELATION,
                                                      "members": members})  # fmt: skip


def _chunk_count(res: Resources, state: State) -> int:
    """How many chunks the index holds (counted once per graph version)."""
    view = state.view(res)
    return int(view.memo(("chunk-count",), lambda: len(view.store.chunk_ids())))


def _best(scores: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-scores, kind="stable")[:k]`` (``k`` ≤ 0: all), without sorting them all.

    The ``k`` best positions, best first, ties in position order, exactly as the stable
    sort orders them (also at the ``k``-th score: of the positions tied there, the
    earliest are kept), found by a partition and a sort of the ``k`` alone.
    """
    if not 0 < k < len(scores) // 4:
        return np.argsort(-scores, kind="stable")[: k if k > 0 else None]
    negated = -scores
    kth = np.partition(negated, k - 1)[k - 1]
    above = np.flatnonzero(negated < kth)
    tied = np.flatnonzero(negated == kth)[: k - len(above)]
    chosen = np.concatenate([above, tied])
    return chosen[np.argsort(negated[chosen], kind="stable")]


def _ranked(ids: list[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ``k`` best positive scores (ties: earlier position first), as ``(id, score)``.

    Chosen among the positive scores alone: a walk pushed locally scores a few thousand
    of a large graph's nodes, and the others need no partition."""
    held = np.flatnonzero(scores > 0)
    return [(ids[i], float(scores[i])) for i in held[_best(scores[held], k)].tolist()]


# --------------------------------------------------------------------------- Link, PPR


@operator("node.link", needs=("entity-vectors",))
def link(res: Resources, state: State, *, k: int = 1, threshold: float = 0.0) -> None:
    """Each question entity linked to its nearest graph entity by vector (Link, top-1).

    The keywords (``question.entities``) are embedded in one batch, as the entity names
    they are matched with were, and each keeps its ``k`` best entities with cosine above
    ``threshold``. An entity linked twice keeps its best similarity. The links go to
    ``state.seeds``.
    """
    seeds: dict[str, float] = {}
    keywords = [w for w in state.keywords if w.strip()]
    vectors = res.embedder.embed(keywords) if keywords else []
    for vector in vectors:
        for hit in res.search_vectors(ENTITY_COLLECTION, np.asarray(vector), k):
            if hit.score > threshold:
                seeds[hit.id] = max(seeds.get(hit.id, hit.score), hit.score)
    state.seeds = seeds


@operator("node.ppr", needs=("entity-vectors",))
def ppr(
    res: Resources,
    state: State,
    *,
    mode: str = "hipporag",
    damping: float = 0.1,
    k: int = 10,
    vdb_k: int = 8,
    specificity: bool = True,
    synonyms: bool = True,
) -> None:
    """Personalized PageRank over the entity graph from the linked entities (PPR).

    ``mode="hipporag"``: restart mass on ``state.seeds``, each ``1 / chunks mentioning
    it`` (``specificity``; else 1). ``mode="fastgraphrag"``: the seeds' similarities
    plus those of the ``vdb_k`` entities nearest to the question vector. ``damping`` is
    the probability of following an edge. ``synonyms`` walks synonym edges too.
    """
    from hygraph.graph.algorithms.ppr import personalized_pagerank
    from hygraph.graph.ppr_views import entity_walk
    from hygraph.operators.state import Scored

    if mode not in PPR_MODES:
        raise ConfigError(f"node.ppr mode must be one of {', '.join(PPR_MODES)}")
    walk = entity_walk(state.view(res), synonyms=synonyms)
    position = walk.graph.position
    reset = np.zeros(len(walk.graph.ids), dtype=np.float64)
    for entity, similarity in state.seeds.items():
        pos = position.get(entity)
        if pos is None:
            continue
        if mode == "fastgraphrag":
            reset[pos] += similarity
        elif specificity and walk.chunk_counts[pos] > 0:
            reset[pos] = 1.0 / walk.chunk_counts[pos]
        else:
            reset[pos] = 1.0
    if mode == "fastgraphrag" and vdb_k > 0:
        for hit in res.search_vectors(ENTITY_COLLECTION, state.query_vector(res), vdb_k):
            if hit.id in position and hit.score > 0:
                reset[position[hit.id]] += hit.score
    state.subgraph["ppr_walk"] = walk
    if not reset.any():
        state.subgraph["ppr"] = np.zeros(len(walk.graph.ids))
        state.nodes = []
        return
    scores = personalized_pagerank(None, reset, damping=damping,
                                   transposed=walk.graph.transposed,
                                   dangling=walk.graph.dangling,
                                   ordered=walk.graph.ordered_transposed)  # fmt: skip
    state.subgraph["ppr"] = scores
    state.nodes = [Scored(i, s, score=s) for i, s in _ranked(walk.graph.ids, scores, k)]


# --------------------------------------------------------------------------- aggregators


@operator("relationship.aggregator", needs=("entity-graph",))
def relationship_aggregator(res: Resources, state: State, *, k: int = 20) -> None:
    """Relationships scored by the PPR mass of their two entities, ``r = Eᵀ p`` (Aggregator).

    Reads the vector ``node.ppr`` left; the full score vector stays in
    ``state.subgraph["relationship_scores"]``, the ``k`` best go to ``state.relationships``.
    """
    walk = state.subgraph.get("ppr_walk")
    scores = state.subgraph.get("ppr")
    if walk is None or scores is None:
        raise ConfigError("relationship.aggregator needs node.ppr to run first")
    r = np.asarray(walk.incidence.T @ scores).ravel()
    state.subgraph["relationship_scores"] = r
    state.relationships = [_relationship(i, s) for i, s in _ranked(walk.relation_ids, r, k)]


@operator("chunk.aggregator", needs=("entity-graph",))
def chunk_aggregator(
    res: Resources, state: State, *, depth: int = 100, normalise: bool = True
) -> None:
    """Chunks scored ``Ψ = r M`` from the relationship scores (Aggregator), best first.

    ``M`` marks the chunks each relationship was extracted from. Scores are min-max
    normalised (reference code); chunks with no score are left out; ``depth`` caps the
    ranking (0: every scored chunk).
    """
    walk = state.subgraph.get("ppr_walk")
    r = state.subgraph.get("relationship_scores")
    if walk is None or r is None:
        raise ConfigError("chunk.aggregator needs relationship.aggregator to run first")
    psi = np.asarray(walk.provenance.T @ r).ravel()
    ranked = _ranked(walk.chunks, psi, depth)
    if normalise and ranked:
        every = len(psi) == _chunk_count(res, state)
        low = float(psi.min()) if every else 0.0  # a chunk without relationships scores 0
        high = ranked[0][1]
        span = high - low
        ranked = [(c, (s - low) / span if span > 0 else 1.0) for c, s in ranked]
    state.chunks = ranked


# --------------------------------------------------------------------------- HippoRAG 2


def exact_scores(
    res: Resources, state: State, collection: str, query: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """Cosine of ``query`` to every vector of ``collection`` (chunks, or relation edges).

    HippoRAG 2 normalises by the least and greatest score over *all* facts and passages,
    which a vector store's top-k search does not give (the least needs a second search
    with the negated query, and the passage prior a search as deep as the corpus). The
    rows are the chunks in store order, or for a collection of relation edges
    (``relations``, ``facts``: :data:`EDGE_COLLECTIONS`) the relation edges in store
    order, each ``"src|dst"``; ids without a vector are left out. The unit-normalised
    vectors are read once per graph version and write to the collection
    (:meth:`~hygraph.kept_matrices.KeptMatrices.unit_matrix`, kept on disk for later
    processes), and one matrix product scores them all (a few milliseconds at 30,000
    facts).
    """
    if not res.vectors.has_collection(collection):
        return [], np.zeros(0, dtype=np.float32)
    ids_found, matrix = collection_matrix(res, state.view(res), collection)
    if not ids_found:
        return [], np.zeros(0, dtype=np.float32)
    from hygraph.vectors.half_screen import exact_scores as product

    return ids_found, product(matrix, unit_query(query))


def unit_query(query: np.ndarray) -> np.ndarray:
    """``query`` as a flat float32 unit vector (a zero vector stays zero)."""
    q = np.asarray(query, dtype=np.float32).ravel()
    norm = float(np.sqrt(q @ q))
    return q / norm if norm > 0 else q


def collection_matrix(res: Resources, view: Any, collection: str) -> tuple[list[str], np.ndarray]:
    """The unit rows :func:`exact_scores` multiplies: read once per graph version and write.

    Kept in the process (``view.memo_current``) and on disk beside the index
    (:meth:`~hygraph.kept_matrices.KeptMatrices.unit_matrix`).
    """
    stamp = res.vector_stamp(collection)
    written = stamp if stamp is not None else res.vectors.count(collection)

    def ids() -> list[str]:
        if collection in EDGE_COLLECTIONS:
            return relation_ids(view.store.edge_pairs(EdgeKind.RELATION))
        return view.store.chunk_ids()

    return view.memo_current(  # type: ignore[no-any-return]
        ("exact-vectors", collection), written,
        lambda: res.unit_matrix(collection, view.version, ids),
    )  # fmt: skip


def collection_half(res: Resources, view: Any, collection: str) -> np.ndarray | None:
    """:func:`collection_matrix`'s rows as float16, for the screen of
    :func:`hygraph.vectors.half_screen.top_scores`: kept in the process and on disk beside
    the index under the same key as the float32 matrix, so a query process maps half the
    bytes and reads only a few float32 rows. None below ``SCREEN_FROM`` rows, where the
    screen reads the float32 matrix whole (no copy to make and write on each insert)."""
    from hygraph.vectors import half_screen

    if len(collection_matrix(res, view, collection)[0]) < half_screen.SCREEN_FROM:
        return None
    stamp = res.vector_stamp(collection)

    def make() -> tuple[list[str], np.ndarray]:
        ids, matrix = collection_matrix(res, view, collection)
        return ids, half_screen.half_rows(matrix)

    def kept() -> np.ndarray:
        if stamp is None:
            return make()[1]
        found = res.kept_matrix(f"{collection}-half", [list(view.version), stamp], make)
        assert found is not None
        return found[1]

    written = stamp if stamp is not None else res.vectors.count(collection)
    return view.memo_current(("half-vectors", collection), written, kept)  # type: ignore[no-any-return]


#: The collections an operator scores whole with :func:`exact_scores`, by operator name.
EXACT_COLLECTIONS = {"relationship.fact_link": "facts", "chunk.ppr": "chunks"}
#: Of those, the ones whose operator reads only the best few and the extremes (screened
#: at half precision: :func:`collection_half`).
SCREENED_COLLECTIONS = {"facts"}


def keep_query_matrices(
    res: Resources, steps: Iterable[tuple[str, dict[str, Any]]], *, walks: bool = True
) -> list[str]:
    """Write the on-disk matrices that ``steps`` (operator, resolved parameters) will read;
    the names kept.

    Called at the end of a build, so that a query process maps a file instead of
    loading each collection's shard and reading every vector back: otherwise the first
    process to query after a build pays that, in seconds and in peak memory (on
    MuSiQue 800 MB against 719 MB for a process that maps the matrices). With
    ``walks``, also the passage walk's dense-restart matrix of each ``chunk.ppr`` step
    (:mod:`hygraph.operators.passage_prior`; a step with a ``passage_pool`` walks the
    whole graph and needs none).
    """
    from hygraph.graph.view import graph_view

    steps = list(steps)
    collections = sorted({EXACT_COLLECTIONS[op] for op, _ in steps if op in EXACT_COLLECTIONS})
    kept = [c for c in collections if res.vectors.has_collection(c)]
    if not kept:
        return kept
    view = graph_view(res.store)
    for collection in kept:
        collection_matrix(res, view, collection)
        if collection in SCREENED_COLLECTIONS:
            collection_half(res, view, collection)
    if walks and "chunks" in kept:
        from hygraph.graph.ppr_views import keep_passage_walk, passage_walk
        from hygraph.kept_matrices import MATRIX_DIR
        from hygraph.operators.passage_prior import prior_matrix

        walked = {
            (float(p["damping"]), bool(p["synonyms"]), float(p["pair_factor"]))
            for op, p in steps if op == "chunk.ppr" and not p["passage_pool"]
        }  # fmt: skip
        folder = res.path / MATRIX_DIR
        for damping, synonyms, pair_factor in sorted(walked):
            if keep_passage_walk(view, folder, synonyms=synonyms, pair_factor=pair_factor):
                kept.append(f"passage-walk(synonyms={synonyms}, pair_factor={pair_factor:g})")
            walk = passage_walk(view, synonyms=synonyms, pair_factor=pair_factor, keep=folder)
            if prior_matrix(res, view, walk, damping=damping, synonyms=synonyms,
                            pair_factor=pair_factor, make=True) is not None:  # fmt: skip
                kept.append(f"walk-prior(damping={damping:g})")
    return kept


@operator("relationship.fact_link", needs=("fact-vectors",))
def fact_link(res: Resources, state: State, *, k: int = 5) -> None:
    """The ``k`` facts (relations) nearest to the question, min-max normalised over all facts.

    Facts are the ``fact-vectors`` layer's relation edges, each embedded as its triple
    alone. Each ``Scored`` keeps the normalised score as ``value`` and the cosine as
    ``cosine`` (HippoRAG 2's query-to-fact linking). Every fact is scored, as HippoRAG 2
    does, up to :data:`~hygraph.layers.fact_vectors.SEARCH_FACTS_FROM` facts, reading
    a half-precision copy of their vectors and rescoring exactly the few that could be
    among the best or the least (:mod:`hygraph.vectors.half_screen`: the same facts and
    scores as the float32 product, half the bytes read); from there the collection is
    searched (Qdrant's HNSW, which a build makes for it) and the least and greatest
    cosine come from :meth:`~hygraph.resources.Resources.cosine_range`.
    """
    from hygraph.layers.fact_vectors import FACT_COLLECTION, facts_searched

    query = state.query_vector(res)
    view = state.view(res)
    if view.memo(("facts-searched",), lambda: facts_searched(view.store)):
        # Too many to score each: Qdrant's search (HNSW); its best hit is the greatest.
        low = res.least_cosine(FACT_COLLECTION, query)
        hits = [] if low is None else res.vectors.search(FACT_COLLECTION, query, k)
        high = hits[0].score if hits else 0.0
        low = high if low is None else low
        state.relationships = [
            _relationship(h.id, (h.score - low) / (high - low) if high > low else 1.0,
                          cosine=h.score)
            for h in hits
        ]  # fmt: skip
        return
    if not res.vectors.has_collection(FACT_COLLECTION):
        state.relationships = []
        return
    ids, matrix = collection_matrix(res, view, FACT_COLLECTION)
    if not ids:
        state.relationships = []
        return
    from hygraph.vectors.half_screen import top_scores

    best = top_scores(matrix, collection_half(res, view, FACT_COLLECTION), unit_query(query), k)
    span = best.high - best.low
    state.relationships = [
        _relationship(ids[i], (float(s) - best.low) / span if span > 0 else 1.0, cosine=float(s))
        for i, s in zip(best.rows, best.scores, strict=True)
    ]


def fact_texts(res: Resources, relationships: list[Scored]) -> list[str]:
    """Each relation as ``(subject, relation, object)`` with display names."""
    ids = {m for r in relationships for m in r.data.get("members", ())}
    names = {i: (n.name or i) for i, n in res.store.get_nodes(ids).items()}
    keys = [(*r.data["members"], EdgeKind.RELATION) for r in relationships]
    edges = res.store.get_edges(keys)
    out = []
    for r, key in zip(relationships, keys, strict=True):
        edge = edges.get(key)
        label = str(edge.data.get("label", "")) if edge else ""
        src, dst = (names.get(m, m) for m in r.data["members"])
        out.append(f"({src}, {label or 'related to'}, {dst})")
    return out


@operator("relationship.recognize")
def recognize(res: Resources, state: State, *, mode: str = "auto", unfiltered: int = 0) -> None:
    """Keep the facts an LLM judges useful for the question (HippoRAG 2's recognition memory).

    ``mode``: ``auto`` (the LLM when retrieval may use it, else no filter), ``llm`` (an
    error without one) or ``off``. When no filter runs, or its call fails or its reply
    cannot be read (logged), the best ``unfiltered`` facts stay (0: all of them); a
    readable reply keeping none empties ``state.relationships``.
    """
    if mode not in RECOGNITION_MODES:
        raise ConfigError(f"recognition mode must be one of {', '.join(RECOGNITION_MODES)}")
    llm = res.llm if mode == "llm" else res.retrieval_llm if mode == "auto" else None
    if mode == "llm" and llm is None:
        raise ConfigError("recognition=llm needs an LLM: pass llm=... or set OPENAI_MODEL")
    unfiltered_facts = state.relationships[: unfiltered if unfiltered > 0 else None]
    if llm is None or not state.relationships:
        state.relationships = unfiltered_facts
        return
    from hygraph.prompts.hipporag import parse_recognition, recognition_messages

    facts = fact_texts(res, state.relationships)
    try:
        reply = res.complete_bounded(recognition_messages(state.question, facts))
        kept = parse_recognition(reply, facts)
    except Exception as err:  # noqa: BLE001 - the facts stay unfiltered; a query never fails
        log.warning("fact recognition failed (%s); keeping the best linked facts", err)
        state.relationships = unfiltered_facts
        return
    state.relationships = [state.relationships[i] for i in kept]


@operator("node.fact_entities", needs=("entity-graph",))
def fact_entities(res: Resources, state: State, *, k: int = 5, specificity: bool = True) -> None:
    """Seed entities from the kept facts (HippoRAG 2): fact score / chunk count, averaged.

    Each fact in ``state.relationships`` gives its subject and object its ``value``,
    divided by how many chunks mention the entity (``specificity``); an entity's seed
    is the mean over the facts naming it; the ``k`` best become ``state.seeds``.
    """
    mentions = res.store.source_counts(m for r in state.relationships
                                       for m in r.data.get("members", ()))  # fmt: skip
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for rel in state.relationships:
        for entity in dict.fromkeys(rel.data.get("members", ())):
            chunks = mentions.get(entity, 0)
            weight = rel.value / chunks if specificity and chunks > 0 else rel.value
            total[entity] = total.get(entity, 0.0) + weight
            count[entity] = count.get(entity, 0) + 1
    mean = {e: total[e] / count[e] for e in total}
    best = sorted(mean, key=lambda e: (-mean[e], e))[: k if k > 0 else None]
    state.seeds = {e: mean[e] for e in best if mean[e] > 0}


@operator("chunk.ppr", needs=("entity-graph", "chunks"))
def passage_ppr(
    res: Resources,
    state: State,
    *,
    damping: float = 0.5,
    passage_weight: float = 0.05,
    passage_pool: int = 0,
    synonyms: bool = True,
    pair_factor: float = 2.0,
    depth: int = 100,
    prior: str = "",
    prior_weight: float = 0.0,
    prior_k: float = 60.0,
) -> None:
    """Chunks ranked by PPR over entities and passages (HippoRAG 2).

    Restarts at ``state.seeds`` and at the ``passage_pool`` densest passages (0: all),
    each weighted ``passage_weight`` × its dense cosine min-max normalised over every
    chunk. ``prior`` names a ranking in ``state.rankings`` (a first stage such as dense
    + BM25) whose passage at rank ``r`` adds ``prior_weight × (prior_k + 1) / (prior_k
    + r)`` to its restart, so passages a lexical or fused first stage found start the
    walk too. Without seeds the ``prior`` ranking (else the dense one) is kept.
    ``depth`` caps the ranking.
    """
    from hygraph.graph.algorithms.ppr import personalized_pagerank
    from hygraph.graph.ppr_views import passage_walk
    from hygraph.kept_matrices import MATRIX_DIR
    from hygraph.operators.passage_prior import prior_matrix, walk_scores

    walk = passage_walk(state.view(res), synonyms=synonyms, pair_factor=pair_factor,
                        keep=res.path / MATRIX_DIR)  # fmt: skip
    position = walk.graph.position
    reset = np.zeros(len(walk.graph.ids), dtype=np.float64)
    for entity, weight in state.seeds.items():
        if entity in position:
            reset[position[entity]] += weight
    first = state.rankings.get(prior, []) if prior else []
    if reset.any():
        for rank, chunk in enumerate(first, start=1):
            if chunk in position:
                reset[position[chunk]] += prior_weight * (prior_k + 1) / (prior_k + rank)
        # The dense restart walked at build time and the rest pushed locally, where the
        # build kept the matrix (large corpora; no passage pool); else the whole graph.
        kept = None if passage_pool > 0 else prior_matrix(
            res, state.view(res), walk, damping=damping, synonyms=synonyms,
            pair_factor=pair_factor,
        )  # fmt: skip
        extremes = None if kept is None else res.cosine_range(
            "chunks", state.query_vector(res), greatest=state.greatest.get("chunks")
        )  # fmt: skip
        if kept is not None and extremes is not None and extremes[0] > extremes[1]:
            scores = walk_scores(
                walk, kept, state.query_vector(res), reset, damping=damping,
                passage_weight=passage_weight, low=extremes[1], high=extremes[0],
            )  # fmt: skip
            state.chunks = _ranked(walk.graph.ids, scores, depth)
            return
    ids, cosines = exact_scores(res, state, "chunks", state.query_vector(res))
    if not ids:
        state.chunks = []
        return
    pool = passage_pool if 0 < passage_pool < len(ids) else 0
    if not reset.any():
        if first:
            n = len(first)
            state.chunks = [(c, float(n - i)) for i, c in enumerate(first[: depth or None])]
        else:
            order = _top(cosines, pool)[: depth or None] if pool else _best(cosines, depth)
            state.chunks = [(ids[i], float(cosines[i])) for i in order]
        return
    # Every passage (or the ``pool`` densest) restarts at passage_weight × its cosine
    # min-max normalised over all passages, in float64 as Python floats would compute it.
    low, high = float(cosines.min()), float(cosines.max())
    span = high - low
    at = walk.positions_of(ids)
    chosen = _top(cosines, pool) if pool else np.flatnonzero(at >= 0)
    chosen = chosen[at[chosen] >= 0]
    if span > 0:
        normalised = (cosines[chosen].astype(np.float64) - low) / span
    else:
        normalised = np.ones(len(chosen), dtype=np.float64)
    reset[at[chosen]] += passage_weight * normalised
    scores = personalized_pagerank(None, reset, damping=damping,
                                   transposed=walk.graph.transposed,
                                   dangling=walk.graph.dangling,
                                   ordered=walk.graph.ordered_transposed)  # fmt: skip
    scores = np.where(walk.is_chunk, scores, 0.0)
    state.chunks = _ranked(walk.graph.ids, scores, depth)
