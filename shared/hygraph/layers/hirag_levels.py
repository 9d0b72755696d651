"""HiRAG's layered construction (spec 001 §3.5): clustering, cluster sparsity, the stop rule,
and the summary entities of one layer.

* :func:`cluster_layer` groups one layer's entities: their embeddings are reduced
  (UMAP to 2 dimensions with cosine distance, 15 neighbours, as the authors' code; PCA
  when umap-learn is not installed, ``reduction="auto"``), then a Gaussian mixture with
  the number of components chosen by BIC over ``1..min(N, max_clusters) - 1``
  (authors' code) assigns each entity to every cluster whose posterior exceeds 0.1
  (``assignment="soft"``, authors' code) or to its most likely one (``"hard"``, the
  paper's partition). The search stops early, as the authors' code does, once the BIC
  changes by less than ``bic_tolerance`` (1e-3, relative) from one count to the next
  (the lowest BIC seen wins); ``bic_tolerance=0`` searches every count (the shared
  :func:`~hygraph.graph.algorithms.gmm.best_k_by_bic`). On a large layer this is the
  difference between minutes and seconds. One initialisation per fit (the authors'
  code uses five).
* :func:`cluster_sparsity` is Eq. 17, ``CS = 1 - Σ|S|(|S|-1) / (N(N-1))``, computed
  from the actual (possibly overlapping) cluster sizes and clamped to [0, 1]
  (spec §9 #1, #4).
* :func:`stops` is the paper's stop rule (Algorithm 1, lines 8-12): with the relative
  change rate ``|CS_i - CS_{i-1}| / CS_{i-1}`` at most ε (5%), the current clustering
  is discarded and no layer is built from it. The first layer has no previous CS and
  is always built (spec §9 #3). A previous CS of 0 gives a change rate of 0 when the
  new CS is 0 too and infinity otherwise.
* :func:`summarise_clusters` turns each cluster into the next layer (Algorithm 1,
  lines 14-20): a singleton is carried up unchanged without a call (authors' code); a
  larger cluster gets one or more summary entities from the LLM (prompt E3,
  :mod:`hygraph.prompts.hirag`), linked to the members the LLM relates to them, and
  every member left without an up-link is linked to the cluster's most similar summary
  entity (spec §9 #9, ``link_all_members``). Clusters over ``cluster_token_cap`` tokens
  are downsampled to 80% repeatedly (seed 224, authors' code). Without an LLM, or when
  a reply is unusable, the cluster gets one **extractive summary entity**: named after
  its three members nearest the cluster's mean embedding (``"Group: A, B, C"``; names
  without a letter, such as years, are passed over, and a member group lends its own
  names), with the sentences most central to the members' texts as its description
  (never empty) and an up-link from every member. Up-links written from a template
  (extractive and fallback ones) are marked ``data["templated"]``, so extractive
  community reports quote the graph's real statements rather than these.

Summary entities are ``hi_summary`` nodes with ids ``hsum:<layer>:<key>`` (the
normalised name): same-named summaries of one layer merge (the first description is
kept, spec §3.5 "deduplicated by name"), summaries of different layers stay apart
(our choice: the authors' code merges by name across layers, which can add the
intra-layer edges the paper rules out). A summary whose name equals a base entity's is
kept apart as well (the entity graph owns entity nodes) and records the collision in
``data["same_name_as"]`` (spec §9 #12).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node

if TYPE_CHECKING:
    from hygraph.resources import Resources

log = logging.getLogger(__name__)

DOWNSAMPLE_SEED = 224  # authors' code
DOWNSAMPLE_KEEP = 0.8  # authors' code
UMAP_NEIGHBOURS = 15  # authors' code
GROUP_NAMES = 3  # ours: members named by an extractive summary entity
GROUP_PREFIX = "Group: "
SUMMARY_PREFIX = "hsum"


@dataclass
class LayerItem:
    """One entity of a layer as clustering and summaries see it."""

    id: str
    name: str
    type: str
    text: str  # description (or profile) the layer clusters and summarises


@dataclass
class LevelResult:
    """What summarising one layer's clusters produced."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    carried: list[str] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    written: Counter = field(default_factory=Counter)


# --------------------------------------------------------------------------- sparsity


def cluster_sparsity(clusters: Sequence[Sequence[int]], n: int) -> float:
    """Eq. 17: the share of ordered entity pairs that share no cluster, clamped to [0, 1].

    Needs ``n >= 2`` (a pair); soft clusters may overlap, so the raw value can go below 0.
    """
    if n < 2:
        raise ValueError("cluster sparsity needs at least two entities")
    together = sum(len(c) * (len(c) - 1) for c in clusters)
    return min(1.0, max(0.0, 1.0 - together / (n * (n - 1))))


def change_rate(cs: float, previous: float) -> float:
    """``|CS_i - CS_{i-1}| / CS_{i-1}``; from a previous CS of 0: 0 if unchanged, else inf."""
    if previous == 0:
        return 0.0 if cs == 0 else math.inf
    return abs(cs - previous) / previous


def stops(cs: float, previous: float | None, epsilon: float) -> bool:
    """The paper's stop rule: the change rate is at most ``epsilon`` (never for layer 1)."""
    return previous is not None and change_rate(cs, previous) <= epsilon


# --------------------------------------------------------------------------- clustering


def _umap_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("umap") is not None


def reduce_dimensions(vectors: np.ndarray, method: str, dim: int, seed: int) -> np.ndarray:
    """``vectors`` reduced to ``dim`` dimensions by UMAP (cosine) or PCA (``none``: as is)."""
    x = np.asarray(vectors, dtype=np.float64)
    n = len(x)
    if method == "auto":
        method = "umap" if _umap_available() else "pca"
    if method == "none" or n <= dim + 1 or x.shape[1] <= dim:
        return x
    if method == "umap":
        import umap

        reducer = umap.UMAP(n_neighbors=min(UMAP_NEIGHBOURS, n - 1), n_components=min(dim, n - 2),
                            metric="cosine", random_state=seed)  # fmt: skip
        return np.asarray(reducer.fit_transform(x), dtype=np.float64)
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=dim, random_state=seed).fit_transform(x)
    raise ValueError(f"unknown reduction {method!r}: use auto, umap, pca or none")


def bic_clusters(x: np.ndarray, max_clusters: int, seed: int, tolerance: float) -> int:
    """The number of components with the lowest BIC in ``1..max_clusters``, the search
    stopping once the BIC's relative change falls below ``tolerance`` (authors' code)."""
    from sklearn.mixture import GaussianMixture

    from hygraph.graph.algorithms.gmm import best_k_by_bic

    if tolerance <= 0:
        return best_k_by_bic(x, max_clusters=max_clusters, seed=seed)
    best_k, best, previous = 1, math.inf, None
    for k in range(1, min(max_clusters, len(x)) + 1):
        model = GaussianMixture(n_components=k, random_state=seed, covariance_type="full",
                                reg_covar=1e-5)  # fmt: skip
        bic = float(model.fit(x).bic(x))
        if bic < best - 1e-9:
            best_k, best = k, bic
        if previous is not None and abs(previous - bic) <= tolerance * abs(previous):
            break
        previous = bic
    return best_k


def cluster_layer(
    vectors: np.ndarray,
    *,
    assignment: str = "soft",
    max_clusters: int = 50,
    threshold: float = 0.1,
    reduction: str = "auto",
    reduce_dim: int = 2,
    seed: int = 0,
    bic_tolerance: float = 1e-3,
) -> list[list[int]]:
    """Clusters of row indices of one layer (see the module docstring)."""
    from hygraph.graph.algorithms.gmm import soft_gmm_clusters

    n = len(vectors)
    if n == 0:
        return []
    if n == 1:
        return [[0]]
    x = reduce_dimensions(vectors, reduction, reduce_dim, seed)
    limit = max(1, min(n, max_clusters) - 1)  # authors' code: 1 .. min(N, 50) - 1
    cut = threshold if assignment == "soft" else 1.0  # hard: only the most likely cluster
    k = bic_clusters(x, limit, seed, bic_tolerance)
    return soft_gmm_clusters(x, threshold=cut, seed=seed, k=k)


# --------------------------------------------------------------------------- summaries


def summary_id(level: int, key: str) -> str:
    return f"{SUMMARY_PREFIX}:{level}:{key}"


def _approx_tokens(text: str) -> int:
    return len(text.split()) * 4 // 3 + 1


def cap_cluster(rows: list[int], items: Sequence[LayerItem], cap: int) -> list[int]:
    """The rows kept under ``cap`` tokens: 80% at random, repeatedly (authors' code)."""
    rng = np.random.RandomState(DOWNSAMPLE_SEED)
    size = sum(_approx_tokens(f"{items[r].name} {items[r].text}") for r in rows)
    while cap > 0 and size > cap and len(rows) > 1:
        keep = max(1, int(len(rows) * DOWNSAMPLE_KEEP))
        rows = sorted(int(r) for r in rng.choice(rows, keep, replace=False))
        size = sum(_approx_tokens(f"{items[r].name} {items[r].text}") for r in rows)
    return rows


def _central(rows: list[int], vectors: np.ndarray) -> list[int]:
    """``rows`` ordered by cosine to their mean vector, highest first (ties by row)."""
    x = vectors[rows]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms > 0, norms, 1.0)
    mean = x.mean(axis=0)
    sims = x @ mean
    return [rows[i] for i in sorted(range(len(rows)), key=lambda i: (-sims[i], rows[i]))]


def _member_line(item: LayerItem) -> str:
    return f"{item.name}: {item.text}" if item.text else item.name


def _majority_type(items: Sequence[LayerItem], default: str) -> str:
    types = Counter(i.type for i in items if i.type and i.type not in ("entity", default))
    return types.most_common(1)[0][0] if types else default


def group_names(names: Sequence[str], limit: int = GROUP_NAMES) -> list[str]:
    """The first ``limit`` distinct names with a letter, in order; a nested group lends its
    own names, taken in turns with the other members' (so two groups give two names each)."""
    lists = [name[len(GROUP_PREFIX) :].split(", ") if name.startswith(GROUP_PREFIX) else [name]
             for name in names]  # fmt: skip
    out: list[str] = []
    for turn in range(max((len(parts) for parts in lists), default=0)):
        for parts in lists:
            part = parts[turn] if turn < len(parts) else ""
            if any(ch.isalpha() for ch in part) and part not in out:
                out.append(part)
    if not out:
        out = list(dict.fromkeys(names))
    return out[:limit]


def extractive_summary_entity(
    level: int, members: Sequence[LayerItem], max_words: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One summary entity for a cluster without an LLM (members most central first)."""
    from hygraph.layers.summaries import extractive_group_summary
    from hygraph.prompts.hirag import FALLBACK_TYPE

    names = [m.name for m in members]
    name = GROUP_PREFIX + ", ".join(group_names(names))
    description = extractive_group_summary([m.text for m in members if m.text], max_words)
    if not description:
        more = f" and {len(names) - 12} more" if len(names) > 12 else ""
        description = f"A group of {len(names)} related entities: {', '.join(names[:12])}{more}."
    entity = {"name": name, "type": _majority_type(members, FALLBACK_TYPE),
              "description": description}  # fmt: skip
    links = [{"source": m.name, "target": name, "description": f"{m.name} belongs to {name}.",
              "strength": 1.0, "templated": True} for m in members]  # fmt: skip
    return entity, links


def summarise_clusters(
    res: Resources,
    items: Sequence[LayerItem],
    vectors: np.ndarray,
    clusters: Sequence[Sequence[int]],
    level: int,
    *,
    meta_types: Sequence[str],
    max_words: int,
    token_cap: int,
    link_all: bool,
    use_llm: bool,
    base_keys: set[str] | frozenset[str] = frozenset(),
) -> LevelResult:
    """The summary entities, up-links and carried singletons of one layer's clusters."""
    import json

    from hygraph.extract.keys import entity_key
    from hygraph.layers.summaries import summarize_groups
    from hygraph.prompts.hirag import parse_summary_entities, summary_entity_messages

    out = LevelResult()
    groups: list[list[int]] = []
    for rows in clusters:
        if len(rows) == 1:
            if items[rows[0]].id not in out.carried:
                out.carried.append(items[rows[0]].id)
            continue
        rows = cap_cluster(list(rows), items, token_cap)
        groups.append(_central(rows, vectors))
    replies: list[tuple[str, str]] = [("", "extractive")] * len(groups)
    if use_llm and res.llm is not None and groups:
        replies = summarize_groups(
            res, [[_member_line(items[r]) for r in g] for g in groups],
            messages=lambda lines: summary_entity_messages(lines, meta_types),
            max_words=max_words, desc=f"hirag summaries, layer {level}",
            parse=lambda text: json.dumps(parse_summary_entities(text)),
        )  # fmt: skip
    nodes: dict[str, Node] = {}
    weights: dict[tuple[str, str], tuple[float, str, bool]] = {}
    per_group: list[tuple[list[int], list[str]]] = []
    for rows, (text, by) in zip(groups, replies, strict=True):
        members = [items[r] for r in rows]
        if by == "llm":
            reply = json.loads(text)
            entities, links = reply["entities"], reply["relationships"]
        else:
            entity, links = extractive_summary_entity(level, members, max_words)
            entities = [entity]
        out.written[by] += 1
        mine: list[str] = []
        keyed: dict[str, str] = {}
        for entity in entities:
            key = entity_key(entity["name"])
            if not key:
                continue
            sid = summary_id(level, key)
            keyed.setdefault(key, sid)
            if sid not in mine:
                mine.append(sid)
            if sid not in nodes:
                data = {"level": level, "type": entity["type"], "written_by": by}
                if key in base_keys:
                    data["same_name_as"] = f"ent:{key}"
                    log.info("hirag layer %d: summary %r shares a base entity's name", level, key)
                nodes[sid] = Node(sid, NodeKind.HI_SUMMARY, entity["name"],
                                  entity["description"], data)  # fmt: skip
        if not mine:
            continue
        by_key = {}
        for m in members:
            by_key.setdefault(entity_key(m.name), m.id)
        for link in links:
            src, dst = entity_key(link["source"]), entity_key(link["target"])
            if src in keyed and dst in by_key:  # written the other way round
                src, dst = dst, src
            if src not in by_key or dst not in keyed:
                continue  # spec §9 #9: only member → new summary entity
            pair = (by_key[src], keyed[dst])
            weight = float(link.get("strength", 1.0))
            if pair not in weights or weight > weights[pair][0]:
                text = str(link.get("description", ""))
                weights[pair] = (weight, text, bool(link.get("templated")))
        per_group.append((rows, mine))
    out.nodes = list(nodes.values())
    if out.nodes:
        found = res.embedder.embed([n.text or n.name or "" for n in out.nodes])
        out.vectors = {n.id: np.asarray(v) for n, v in zip(out.nodes, found, strict=True)}
    if link_all:
        _link_the_rest(items, vectors, per_group, out, weights)
    out.edges = [
        Edge(src, dst, EdgeKind.HI_SUMMARY_OF, weight,
             {"description": text, "level": level, **({"templated": True} if fixed else {})})
        for (src, dst), (weight, text, fixed) in sorted(weights.items())
    ]  # fmt: skip
    return out


def _link_the_rest(
    items: Sequence[LayerItem],
    vectors: np.ndarray,
    per_group: list[tuple[list[int], list[str]]],
    out: LevelResult,
    weights: dict[tuple[str, str], tuple[float, str, bool]],
) -> None:
    """Link each member with no up-link to its cluster's most similar summary entity."""
    linked = {src for src, _ in weights}
    names = {n.id: n.name for n in out.nodes}
    for rows, mine in per_group:
        targets = [s for s in mine if s in out.vectors]
        if not targets:
            continue
        matrix = np.stack([out.vectors[s] for s in targets])
        for r in rows:
            item = items[r]
            if item.id in linked:
                continue
            best = targets[int(np.argmax(matrix @ vectors[r]))] if len(targets) > 1 else targets[0]
            text = f"{item.name} is part of the group summarised as {names[best]}."
            weights[(item.id, best)] = (1.0, text, True)
