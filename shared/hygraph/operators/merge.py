"""Merge operators: fuse rankings, and assemble the context from named evidence lists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError
from hygraph.operators.fusion import distribution_score_fusion, reciprocal_rank_fusion
from hygraph.operators.registry import operator
from hygraph.retrieval.context import Section
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def _store(state: State, fused: list[tuple[str, float]], into: str) -> None:
    """Put a fused ranking where ``into`` says: the chunks, the context's passage
    ranking, or a named ranking (with its scores) for a later step."""
    if into == "chunks":
        state.chunks = fused
    elif into == "ranking":
        state.context.ranking = [c for c, _ in fused]
    else:
        state.rankings[into] = [c for c, _ in fused]
        state.ranking_scores[into] = [s for _, s in fused]


@operator("merge.rrf")
def rrf(
    res: Resources,
    state: State,
    *,
    rankings: list[str],
    k: float = 60,
    weights: list[float] | None = None,
    depths: list[int] | None = None,
    require: str = "",
    into: str = "chunks",
) -> None:
    """Reciprocal-rank fusion of named rankings (``depths``: a cut per ranking, 0 = none).

    ``require`` names a ranking that must be non-empty for the fusion to run.

    ``into="chunks"`` sets the ranked chunks; ``into="ranking"`` sets the context's
    passage ranking (what citations and passage recall read); any other name stores a
    ranking for a later step.
    """
    if require and not state.rankings.get(require):
        return
    lists = [state.rankings.get(name, []) for name in rankings]
    for n, cut in enumerate(depths or []):
        if cut > 0:
            lists[n] = lists[n][:cut]
    _store(state, reciprocal_rank_fusion(lists, k, weights), into)


@operator("merge.dbsf")
def dbsf(
    res: Resources,
    state: State,
    *,
    rankings: list[str],
    weights: list[float] | None = None,
    depth: int = 0,
    into: str = "chunks",
) -> None:
    """Distribution-based score fusion of named scored rankings (Qdrant's DBSF).

    Each ranking's scores are rescaled by its own mean ± 3 standard deviations (over its
    first ``depth`` items; 0: all) and summed, so the ranking whose best hit stands out
    most leads for this question. A ranking stored without scores fuses by rank
    (``1/rank``). ``into`` as for :func:`rrf`.
    """
    lists = []
    for name in rankings:
        ids = state.rankings.get(name, [])
        scores = state.ranking_scores.get(name)
        if scores is None or len(scores) != len(ids):
            scores = [1.0 / r for r in range(1, len(ids) + 1)]
        lists.append(list(zip(ids, scores, strict=True)))
    _store(state, distribution_score_fusion(lists, weights, depth), into)


def _names(text: str | list[str]) -> list[str]:
    if isinstance(text, list):
        return text
    return [s.strip() for s in text.replace(",", "+").split("+") if s.strip()]


@operator("merge.context")
def context(
    res: Resources,
    state: State,
    *,
    sections: str = "chunks",
    titles: dict[str, str] | None = None,
    budgets: dict[str, int] | None = None,
    ranking: str = "",
    lead: str = "",
) -> None:
    """The context: one titled section per named evidence list, in ``sections`` order.

    ``budgets`` caps a section's tokens. ``ranking`` names the evidence lists whose
    sources, in that order, rank the passages (empty: the order the context cites
    them); ``lead`` names a ranking placed before them.
    """
    titles = titles or {}
    budgets = budgets or {}
    for name in _names(sections):
        if name not in state.evidence:
            known = ", ".join(state.evidence) or "none"
            raise ConfigError(f"merge.context: no evidence named {name!r} (have: {known})")
        state.context.add(titles.get(name, name.title()), state.evidence[name], budgets.get(name))
    if ranking:
        cited = [
            c for n in _names(ranking) for i in state.evidence.get(n, []) for c in i.source_ids
        ]
        first = state.rankings.get(lead, []) if lead else []
        state.context.ranking = [*first, *cited]


@operator("merge.lead")
def lead(res: Resources, state: State, *, ranking: str = "walk") -> None:
    """Put a named ranking before the context's passage ranking."""
    state.context.ranking = [*state.rankings.get(ranking, []), *state.context.chunk_ranking()]


#: NodeRAG's context groups: type letter → (section title, evidence kind).
TYPE_SECTIONS = {
    "H": ("High-level elements", "high_level"),
    "A": ("Entity attributes", "attribute"),
    "S": ("Semantic units", "unit"),
    "R": ("Relationships", "relationship"),
    "T": ("Source passages", "chunk"),
}


@operator("merge.typed_context")
def typed_context(res: Resources, state: State, *, order: str = "H+A+S+R+T") -> None:
    """The picked nodes as evidence grouped by type, entries before cross nodes (NodeRAG).

    Reads ``state.subgraph["picked"]`` (the entry nodes when no walk ran). N and O
    never reach the context; T, S and R rank passages (A and H summarise many chunks).
    """
    from hygraph.graph.heterograph import node_type
    from hygraph.operators.node import node_types

    entries = {h.id: h.value for h in state.nodes}
    picked = state.subgraph.get("picked", list(entries))
    walked = state.subgraph.get("walk_scores", {})
    chunk_ids = [i for i in picked if node_type(i) == "T"]
    nodes = res.store.get_nodes(i for i in picked if node_type(i) != "T")
    chunks = {e.id: e for e in res.chunk_evidence([(c, 0.0) for c in chunk_ids])}
    groups: dict[str, list[Evidence]] = {t: [] for t in TYPE_SECTIONS}
    ranking: list[str] = []
    for rank, node_id in enumerate(picked):
        kind = node_type(node_id)
        if kind not in groups:
            continue
        meta = {"type": kind, "via": "vector" if node_id in entries else "ppr", "rank": rank}
        score = entries.get(node_id, walked.get(node_id, 0.0))
        item = _typed_item(kind, node_id, score, meta, chunks, nodes)
        if item is None:
            continue
        groups[kind].append(item)
        if kind in ("T", "S", "R"):
            ranking.extend(item.source_ids)
    for kind in node_types(order, "HASRT"):
        if groups[kind]:
            state.context.add(TYPE_SECTIONS[kind][0], groups[kind])
    state.context.ranking = ranking


def _typed_item(
    kind: str,
    node_id: str,
    score: float,
    meta: dict[str, Any],
    chunks: dict[str, Evidence],
    nodes: dict[str, Any],
) -> Evidence | None:
    """One picked node as evidence (None when it is gone or has no text)."""
    if kind == "T":
        item = chunks.get(node_id)
        if item is None:
            return None
        item.score = score
        item.metadata = {**item.metadata, **meta}
        return item
    node = nodes.get(node_id)
    if node is None or not node.text:
        return None
    if node.name:
        meta["name"] = node.name
    return Evidence(TYPE_SECTIONS[kind][1], node.text, score, tuple(node.sources), id=node_id,
                    metadata=meta)  # fmt: skip


@operator("merge.passage_section", needs=("chunks",))
def passage_section(
    res: Resources, state: State, *, k: int = 5, kind: str = "T", order: str = "H+A+S+R+T"
) -> None:
    """Replace the passage section by the ``k`` best passages of the passage ranking."""
    from hygraph.operators.node import node_types

    best = state.context.chunk_ranking()[:k]
    items = res.chunk_evidence([(c, 1.0 / (n + 1)) for n, c in enumerate(best)])
    for item in items:
        item.metadata = {**item.metadata, "type": kind, "via": "ranking"}
    sections = {s.title: s for s in state.context.sections}
    title = TYPE_SECTIONS[kind][0]
    sections[title] = Section(title, items)
    titles = [TYPE_SECTIONS[t][0] for t in node_types(order, "HASRT")]
    state.context.sections = [sections[t] for t in titles if t in sections and sections[t].items]


UNION_MODES = ("concat", "interleave")


@operator("merge.union")
def union(
    res: Resources, state: State, *, lists: str | list[str], into: str, mode: str = "concat"
) -> None:
    """One evidence list from several named ones, each item once (by kind and id, else text).

    ``mode="concat"`` takes the lists one after another (LightRAG's hybrid puts the
    high-level context first); ``"interleave"`` takes one item of each in turn. Missing
    lists count as empty.
    """
    if mode not in UNION_MODES:
        raise ConfigError(f"merge.union mode must be one of {', '.join(UNION_MODES)}")
    sources = [state.evidence.get(name, []) for name in _names(lists)]
    if mode == "concat":
        ordered = [item for items in sources for item in items]
    else:
        longest = max((len(items) for items in sources), default=0)
        ordered = [items[n] for n in range(longest) for items in sources if n < len(items)]
    seen: set[tuple[str, str]] = set()
    out: list[Evidence] = []
    for item in ordered:
        key = (item.kind, item.id if item.id is not None else item.text)
        if key not in seen:
            seen.add(key)
            out.append(item)
    state.evidence[into] = out


def protect_ranks(
    ranked: list[tuple[str, float]],
    first: list[str],
    *,
    top: int,
    factor: float,
    keep: int = 0,
) -> list[tuple[str, float]]:
    """``ranked`` with the first ranking's best passages held near the top.

    ``first[r-1]`` ends at position ``r`` exactly when ``r ≤ keep`` (it keeps its rank)
    and no lower than ``⌊factor·r⌋`` when ``keep < r ≤ top`` (:func:`rank_floors`,
    :func:`hold_floors`). A passage already that high, or higher, stays where it is;
    one lower (or absent) is placed at its floor and everything below shifts down one.
    Scores of moved passages take the score of the passage they displace, so the list
    stays sorted.
    """
    return hold_floors(ranked, rank_floors(first, top=top, factor=factor, keep=keep))


def rank_floors(first: list[str], *, top: int, factor: float, keep: int = 0) -> dict[str, int]:
    """The lowest position each of a ranking's best passages may end at: ``r`` for its
    ``r``-th when ``r ≤ keep``, else ``max(1, ⌊factor·r⌋)`` up to ``r = top``."""
    floors: dict[str, int] = {}
    for r, chunk in enumerate(first[: max(top, keep)], start=1):
        floor = r if r <= keep else max(1, int(factor * r))
        floors[chunk] = min(floor, floors.get(chunk, floor))
    return floors


def hold_floors(ranked: list[tuple[str, float]], floors: dict[str, int]) -> list[tuple[str, float]]:
    """``ranked``, each passage of ``floors`` at its floor position or higher.

    Positions fill in ``ranked``'s order, except that a held passage goes first when
    waiting longer would leave some held passage (its own floor or an earlier one) no
    room at or above its floor: the earliest-deadline order, which meets every floor
    whenever they can all be met (two passages cannot both have floor 1). Held passages
    missing from ``ranked`` are placed at their floors too. A passage placed ahead of its
    turn takes the score of the one it displaces, so the scores stay sorted.
    """
    if not floors:
        return list(ranked)
    scores = dict(ranked)
    waiting = [c for c, _ in ranked] + sorted(set(floors) - scores.keys(), key=floors.__getitem__)
    turn_of = {c: n for n, c in enumerate(waiting)}
    pending = sorted(floors, key=lambda c: (floors[c], turn_of[c]))
    out: list[tuple[str, float]] = []
    last = ranked[0][1] if ranked else 1.0
    at = 0  # the next passage of ``waiting`` not yet placed
    placed: set[str] = set()
    while len(out) < len(waiting):
        while waiting[at] in placed:
            at += 1
        position = len(out) + 1
        due = any(floors[c] <= position + j for j, c in enumerate(pending))
        chunk = pending[0] if due else waiting[at]
        turn = scores.get(waiting[at], last)  # the score of the passage whose turn it is
        last = min(turn, last) if out else turn
        out.append((chunk, last))
        placed.add(chunk)
        if chunk in floors:
            pending.remove(chunk)
    return out


def leaders(
    scores: list[float], *, keep: int, tie: float, tie_rank: int, most: int, gap: float = 0.0
) -> int:
    """How many of a ranking's best items lead it: the first ``keep``, and after them
    each next one whose score is within ``tie · (s₁ − s_tie_rank)`` of the best score
    (a near-tie at the top), up to ``most`` in all. With ``gap``, also every item above
    the largest drop between neighbours among the first ``tie_rank`` scores, when that
    drop is at least ``gap · (s₁ − s_tie_rank)`` and leaves at most ``most`` above it (a
    clear head: "which came out first, X or Y?" puts both pages far above the rest,
    though not as near each other as a tie)."""
    count = min(keep, len(scores))
    if count == 0 or len(scores) < 2 or (tie <= 0 and gap <= 0):
        return count
    head = scores[: min(tie_rank, len(scores))]
    spread = head[0] - head[-1]
    while tie > 0 and count < min(most, len(scores)) and scores[count] >= head[0] - tie * spread:
        count += 1
    if gap > 0 and spread > 0:
        drops = [head[i] - head[i + 1] for i in range(len(head) - 1)]
        widest = max(range(len(drops)), key=lambda i: (drops[i], -i))
        if drops[widest] >= gap * spread and widest + 1 <= most:
            count = max(count, widest + 1)
    return count


def _unrepresented(
    res: Resources, ranked: list[tuple[str, float]], floors: dict[str, int]
) -> dict[str, int]:
    """The ``floors`` whose passage has no other passage of its document in ``ranked``
    at or above its floor."""
    if not floors:
        return floors
    above = [c for c, _ in ranked[: max(floors.values())]]
    docs = {c: chunk.doc_id for c, chunk in res.store.get_chunks({*floors, *above}).items()}

    def in_view(chunk: str, floor: int) -> bool:
        doc = docs.get(chunk)
        return doc is not None and any(c != chunk and docs.get(c) == doc for c in above[:floor])

    return {chunk: floor for chunk, floor in floors.items() if not in_view(chunk, floor)}


@operator("merge.protect")
def protect(
    res: Resources,
    state: State,
    *,
    ranking: str = "first",
    top: int = 3,
    factor: float = 2.0,
    keep: int = 0,
    tie: float = 0.0,
    tie_rank: int = 5,
    gap: float = 0.0,
    also: str | None = None,
    also_top: int = 0,
    also_factor: float = 2.0,
) -> None:
    """Keep a first stage's best passages at or near the top of the re-ranked ``state.chunks``.

    The ranking's leaders keep their ranks: its first ``keep`` passages, and the next
    ones (up to ``top``) whose first-stage score is a near-tie with the best (within
    ``tie`` of the gap between the 1st and the ``tie_rank``-th score; needs the
    ranking's scores), and with ``gap`` those above a clear drop (:func:`leaders`). Any
    other passage at rank ``r ≤ top`` ends no lower than ``factor·r`` (defaults: 1st →
    top 2, 2nd → top 4, 3rd → top 6): a re-ranker such as a graph walk may promote other
    passages above it, but cannot push a strong first-stage hit out of the top ranks.
    Does nothing when the ranking is missing.

    ``also``: a second ranking (such as the dense one a fused first stage came from)
    whose ``also_top`` best passages are held too, the ``r``-th no lower than
    ``also_factor·r``, unless the first ranking already holds them (then its floor
    stands: it has placed them, and a second vote for the same passage would only push
    others down), or another passage of their document already stands at or above
    their floor (the document is in view there; a second chunk of it would only push
    other documents down); all floors are met together (:func:`hold_floors`).
    """
    first = state.rankings.get(ranking, [])
    floors: dict[str, int] = {}
    if first and (top > 0 or keep > 0):
        scores = state.ranking_scores.get(ranking) or []
        lead = (
            leaders(scores, keep=keep, tie=tie, tie_rank=tie_rank, most=top, gap=gap)
            if scores
            else keep
        )
        floors = rank_floors(first, top=top, factor=factor, keep=lead)
    if also and also_top > 0:
        more = rank_floors(state.rankings.get(also, []), top=also_top, factor=also_factor)
        more = {chunk: floor for chunk, floor in more.items() if chunk not in floors}
        floors |= _unrepresented(res, state.chunks, more)
    if floors:
        state.chunks = hold_floors(state.chunks, floors)
