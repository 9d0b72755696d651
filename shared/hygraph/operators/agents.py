"""Agent operators: an LLM chooses among graph candidates (ToG, DALK; spec 002 §4).

* ``relationship.agent`` (R4, Agent): for each frontier entity (``state.nodes``), the
  LLM scores its relations and the best ``width`` are kept (ToG's relation
  exploration and pruning).
* ``node.agent`` (N4, Agent): the LLM scores candidate entities and the best ``k``
  are kept. With ``source="relationships"`` the candidates are the entities each kept
  relation leads to, scored per relation and ranked by relation score × entity score
  over all of them (ToG's entity exploration and pruning; the kept entities are the
  next frontier and their paths go to ``state.subgraph["paths"]``); with
  ``source="nodes"`` they are the retrieved nodes that are not linked question
  entities (DALK's neighbours), in one call.
* ``subgraph.agent_path`` (S3, AgentPath): the LLM keeps the candidate paths that help.
* ``subgraph.agent_check``: the LLM says whether the paths so far are enough to answer;
  yes ends the search (ToG's reasoning step).

**LLM.** These steps are the method: they use the configured LLM (``res.llm``)
whether or not the index lets other retrieval steps use it (``llm_in_retrieval``),
and without one they fail with one line. Every call goes through the shared fan-out
(:meth:`~hygraph.resources.Resources.complete_many`: bounded concurrency, the LLM
cache, usage accounting); a reply whose form cannot be read is that call's failure
and is not cached. Prompts and reply forms: :mod:`hygraph.prompts.agents`.

**Bounds.** The agent steps of one query share one account in
``state.subgraph["agent"]`` (:class:`AgentRun`): at most ``max_calls`` calls and
``max_tokens`` tokens (prompts counted with our tokenizer before they are sent, plus
replies; 0 = no bound). A step sends only the calls that fit; once one did not fit,
the run is stopped (``AgentRun.stop`` says why) and later agent steps do nothing.

**Failures.** A failed call, an unreadable reply, or a reply naming no candidate
never fails the query: a relation reply gives that entity no relation (as ToG's code
does); an entity reply gives its candidates equal scores (as ToG's code does), so
the best ``k`` are kept in candidate order; a path reply keeps the first ``k`` paths
unfiltered; a check reply counts as "not enough". A readable reply that keeps
nothing keeps nothing. Each failure is logged and counted in ``AgentRun.failures``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.operators.paths import PATHS, Path, entity_names, path_text, undirected
from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.models.base import Message
    from hygraph.operators.state import Scored, State
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

AGENT = "agent"  # the state.subgraph slot holding the query's AgentRun
DESCRIPTION_WORDS = 24  # words of an entity's description shown to the LLM (ours)
NODE_SOURCES = ("relationships", "nodes")
NEIGHBOURS_REACHED = "linked to the question's entities in the knowledge graph"


@dataclass
class AgentRun:
    """One query's agent account: calls and tokens spent, failures, and why it stopped."""

    calls: int = 0
    tokens: int = 0
    failures: int = 0
    stop: str = ""  # why the search ended ("" while it may go on)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def agent_run(state: State) -> AgentRun:
    """The query's :class:`AgentRun` (created on first use)."""
    run = state.subgraph.get(AGENT)
    if not isinstance(run, AgentRun):
        run = AgentRun()
        state.subgraph[AGENT] = run
    return run


def require_llm(res: Resources, who: str) -> None:
    """Raise a one-line error when no LLM is configured (``who`` names the method or step)."""
    if res.llm is None:
        raise ConfigError(
            f"{who} needs an LLM at query time (its retrieval is an LLM agent): pass llm=... "
            "(or --llm MODEL), or set OPENAI_MODEL (and OPENAI_BASE_URL for a local server)"
        )


def ask(
    res: Resources,
    state: State,
    prompts: Sequence[list[Message]],
    *,
    desc: str,
    max_calls: int,
    max_tokens: int,
    validate: Callable[[str], object] | None = None,
) -> list[str | BaseException | None]:
    """The replies to ``prompts`` within the query's budget, in order.

    Each entry is the reply text, the exception of a failed call or unreadable reply
    (``validate`` raises on those), or None for a prompt not sent because the budget
    would not cover it (the run is then stopped).
    """
    from hygraph.ingest.tokenizer import default_tokenizer

    run = agent_run(state)
    tok = default_tokenizer()
    out: list[str | BaseException | None] = [None] * len(prompts)
    sent: list[int] = []
    calls, tokens = run.calls, run.tokens
    for n, messages in enumerate(prompts):
        cost = sum(tok.count(str(m.get("content", ""))) for m in messages)
        if max_calls > 0 and calls + 1 > max_calls:
            run.stop = run.stop or f"call budget ({max_calls}) spent"
            break
        if max_tokens > 0 and tokens + cost > max_tokens:
            run.stop = run.stop or f"token budget ({max_tokens}) spent"
            break
        calls, tokens = calls + 1, tokens + cost
        sent.append(n)
    replies = res.complete_many([prompts[n] for n in sent], desc=desc, validate=validate)
    for n, reply in zip(sent, replies, strict=True):
        out[n] = reply
        if isinstance(reply, str):
            tokens += tok.count(reply)
    run.calls, run.tokens = calls, tokens
    return out


def _choices(reply: str | BaseException | None, candidates: Sequence[str], what: str,
             run: AgentRun) -> list[tuple[int, float]] | None:  # fmt: skip
    """The reply's choices, or None when the call failed or the reply was unusable."""
    from hygraph.prompts.agents import parse_choices
    from hygraph.prompts.replies import ParseError

    if reply is None:
        return None
    if isinstance(reply, BaseException):
        run.failures += 1
        why = "unusable reply" if isinstance(reply, ParseError) else "the LLM call failed"
        log.warning("%s: %s (%s)", what, why, reply)
        return None
    try:
        return parse_choices(reply, list(candidates))
    except Exception as err:  # noqa: BLE001 - an unusable reply is this step's failure only
        run.failures += 1
        log.warning("%s: unusable reply (%s)", what, err)
        return None


def _form_check(text: str) -> object:
    """The fan-out's reply check: the reply must have the choosing form (any candidates)."""
    from hygraph.prompts.agents import parse_choices

    return parse_choices(text)


def describe_entities(res: Resources, ids: Sequence[str]) -> dict[str, str]:
    """``name (type): the description's first words`` for each entity id."""
    out = {}
    for eid, node in res.store.get_nodes(set(ids)).items():
        etype = str(node.data.get("type", "") or "")
        name = str(node.name or eid)
        head = f"{name} ({etype})" if etype and etype != "entity" else name
        words = " ".join(str(node.text or "").split()[:DESCRIPTION_WORDS])
        out[eid] = f"{head}: {words}" if words else head
    return out


def _start_path(node: Scored) -> Path:
    path = node.data.get("path")
    return path if isinstance(path, Path) else Path((node.id,), (), node.value)


# --------------------------------------------------------------------------- relations (R4)


@dataclass(frozen=True)
class RelationGroup:
    """One relation of an entity: its label, direction and the entities it leads to."""

    label: str
    direction: str  # "out": the entity is the source; "in": the target
    tails: tuple[str, ...]


def relation_groups(
    res: Resources, state: State, entity: str, avoid: set[str], limit: int = 0
) -> list[RelationGroup]:
    """An entity's relations by (label, direction) leading off ``avoid``, most used first.

    Every label an edge was extracted with counts (an edge's entries may name several);
    tails are ordered by relation degree, then id; ``limit`` keeps the first (0: all).
    """
    from hygraph.layers.rich_kg import relation_parts
    from hygraph.operators.relationship import relation_degrees

    others = [o for o in undirected(res, state).get(entity, []) if o not in avoid]
    keys = [(entity, o, EdgeKind.RELATION) for o in others]
    keys += [(o, entity, EdgeKind.RELATION) for o in others]
    tails: dict[tuple[str, str], list[str]] = {}
    for (src, dst, _), edge in sorted(res.store.get_edges(keys).items()):
        label, labels, _ = relation_parts(edge)
        direction, other = ("out", dst) if src == entity else ("in", src)
        for name in labels or [label or "related to"]:
            tails.setdefault((name, direction), []).append(other)
    degree = relation_degrees(res, state)
    groups = [
        RelationGroup(label, direction,
                      tuple(sorted(dict.fromkeys(found), key=lambda n: (-degree.get(n, 0), n))))
        for (label, direction), found in tails.items()
    ]  # fmt: skip
    groups.sort(key=lambda g: (-len(g.tails), g.label, g.direction))
    return groups[:limit] if limit > 0 else groups


def relation_text(group: RelationGroup, name: str) -> str:
    """How a relation is shown: ``Ada founded …`` or ``… works at Ada``."""
    if group.direction == "out":
        return f"{name} {group.label} …"
    return f"… {group.label} {name}"


@operator("relationship.agent", needs=("entity-graph",))
def relationship_agent(
    res: Resources,
    state: State,
    *,
    width: int = 3,
    max_relations: int = 30,
    max_calls: int = 0,
    max_tokens: int = 0,
) -> None:
    """The relations to follow from each frontier entity, chosen and scored by an LLM (Agent).

    The frontier is ``state.nodes`` (each with the path that reached it). An entity's
    candidates are its relations by (label, direction) that lead to an entity not on
    its path, at most ``max_relations``; one call per entity keeps at most ``width``
    with scores adding up to 1 (an entity with one candidate keeps it with score 1,
    without a call). The chosen go to ``state.relationships`` (value: the score), with
    the entity, label, direction, candidate tails and path in ``data``.
    """
    from hygraph.operators.state import Scored
    from hygraph.prompts.agents import relation_messages

    require_llm(res, "relationship.agent")
    run = agent_run(state)
    state.relationships = []
    if run.stop:
        return
    frontier = [(node, _start_path(node)) for node in state.nodes]
    if not frontier:
        run.stop = "no entity to start from"
        return
    names = entity_names(res, [n.id for n, _ in frontier])
    groups = {node.id: relation_groups(res, state, node.id, set(path.nodes), max_relations)
              for node, path in frontier}  # fmt: skip
    asking = [(node, path) for node, path in frontier if len(groups[node.id]) > 1]
    prompts = [
        relation_messages(state.question, describe_entities(res, [node.id]).get(node.id, node.id),
                          [relation_text(g, names.get(node.id, node.id)) for g in groups[node.id]],
                          width)
        for node, _ in asking
    ]  # fmt: skip
    replies = ask(res, state, prompts, desc="relation agent", max_calls=max_calls,
                  max_tokens=max_tokens, validate=_form_check)  # fmt: skip
    chosen: dict[str, list[tuple[int, float]] | None] = {
        node.id: _choices(reply, [relation_text(g, names.get(node.id, node.id))
                                  for g in groups[node.id]], "relation agent", run)
        for (node, _), reply in zip(asking, replies, strict=True)
    }  # fmt: skip
    out = []
    for node, path in frontier:
        options = groups[node.id]
        picks = [(0, 1.0)] if len(options) == 1 else (chosen.get(node.id) or [])
        for index, share in picks[: max(width, 0)]:
            group = options[index]
            out.append(Scored(
                f"{node.id}|{group.direction}|{group.label}", share, score=share,
                data={"kind": "agent_relation", "entity": node.id, "label": group.label,
                      "direction": group.direction, "tails": group.tails, "path": path},
            ))  # fmt: skip
    state.relationships = out
    if not out:
        run.stop = run.stop or "no relation chosen"


# --------------------------------------------------------------------------- entities (N4)


@operator("node.agent", needs=("entity-graph",))
def node_agent(
    res: Resources,
    state: State,
    *,
    k: int = 3,
    source: str = "relationships",
    max_candidates: int = 20,
    max_calls: int = 0,
    max_tokens: int = 0,
) -> None:
    """Candidate entities scored by an LLM; the best ``k`` are kept (Agent).

    ``source="relationships"`` (ToG): each relation in ``state.relationships`` leads to
    candidate entities not on its path (at most ``max_candidates``); one call per
    relation scores them (a single candidate scores 1 without a call); an entity
    scores relation score × its score, keeps its best, and the ``k`` best over all
    become ``state.nodes``, each with its path one hop longer (also added to
    ``state.subgraph["paths"]``). ``source="nodes"`` (DALK): the retrieved nodes that
    are not linked entities are the candidates (at most ``max_candidates``, each shown
    with the relations joining it to the linked entities); one call keeps the ``k``
    best, after the linked entities.
    """
    if source not in NODE_SOURCES:
        raise ConfigError(f"node.agent source must be one of {', '.join(NODE_SOURCES)}")
    require_llm(res, "node.agent")
    if source == "nodes":
        _pick_neighbours(res, state, k, max_candidates, max_calls, max_tokens)
    else:
        _next_frontier(res, state, k, max_candidates, max_calls, max_tokens)


def _next_frontier(res: Resources, state: State, k: int, max_candidates: int, max_calls: int,
                   max_tokens: int) -> None:  # fmt: skip
    """ToG's entity exploration and pruning over the relations ``relationship.agent`` kept."""
    from hygraph.operators.state import Scored
    from hygraph.prompts.agents import entity_messages

    run = agent_run(state)
    if run.stop and not state.relationships:
        return
    groups = []  # (relation, its path, its candidate tails)
    for rel in state.relationships:
        path = rel.data.get("path")
        if rel.data.get("kind") != "agent_relation" or not isinstance(path, Path):
            continue
        tails = [t for t in rel.data["tails"] if t not in path.nodes][: max(max_candidates, 1)]
        if tails:
            groups.append((rel, path, tails))
    shown = describe_entities(res, [t for _, _, tails in groups for t in tails])
    names = entity_names(res, [rel.data["entity"] for rel, _, _ in groups])
    asking = [n for n, (_, _, tails) in enumerate(groups) if len(tails) > 1]
    prompts = []
    for n in asking:
        rel, _, tails = groups[n]
        group_text = _reached(rel, names)
        prompts.append(entity_messages(state.question, group_text,
                                       [shown.get(t, t) for t in tails], k))  # fmt: skip
    answers = ask(res, state, prompts, desc="entity agent", max_calls=max_calls,
                  max_tokens=max_tokens, validate=_form_check)  # fmt: skip
    replies = dict(zip(asking, answers, strict=True))
    best: dict[str, tuple[float, Path]] = {}
    for n, (rel, path, tails) in enumerate(groups):
        if len(tails) == 1:
            shares = [(0, 1.0)]
        else:
            shares = _choices(replies[n], [shown.get(t, t) for t in tails], "entity agent", run)
            if shares is None:  # failed or unreadable: equal scores (ToG's code)
                shares = [(i, 1.0 / len(tails)) for i in range(len(tails))]
        for index, share in shares:
            tail = tails[index]
            score = rel.value * share
            if score <= 0 or (tail in best and best[tail][0] >= score):
                continue
            hop = _hop(rel, tail)
            best[tail] = (score, path.extend(hop, score))
    ranked = sorted(best.items(), key=lambda kv: -kv[1][0])[: max(k, 0)]
    state.nodes = [Scored(t, s, score=s, data={"path": p, "via": "agent"}) for t, (s, p) in ranked]
    state.subgraph.setdefault(PATHS, []).extend(p for _, (_, p) in ranked)
    if not state.nodes:
        run.stop = run.stop or "no entity kept"


def _reached(rel: Scored, names: dict[str, str]) -> str:
    entity = rel.data["entity"]
    group = RelationGroup(rel.data["label"], rel.data["direction"], ())
    return relation_text(group, names.get(entity, entity))


def _hop(rel: Scored, tail: str) -> tuple[str, str, str]:
    entity, label = rel.data["entity"], rel.data["label"]
    return (entity, label, tail) if rel.data["direction"] == "out" else (tail, label, entity)


def _pick_neighbours(res: Resources, state: State, k: int, max_candidates: int, max_calls: int,
                     max_tokens: int) -> None:  # fmt: skip
    """DALK's neighbour filter: one call keeps the best ``k`` non-seed nodes."""
    from hygraph.operators.paths import edge_between, edge_label
    from hygraph.prompts.agents import entity_messages

    run = agent_run(state)
    linked = [n for n in state.nodes if n.id in state.seeds]
    candidates = [n for n in state.nodes if n.id not in state.seeds][: max(max_candidates, 0)]
    if not candidates:
        state.nodes = linked
        return
    shown = describe_entities(res, [c.id for c in candidates])
    names = entity_names(res, [n.id for n in state.nodes])
    texts = []
    for cand in candidates:
        joins = []
        for seed in linked:
            edge = edge_between(res, seed.id, cand.id)
            if edge is not None:
                src, dst = names.get(edge.src, edge.src), names.get(edge.dst, edge.dst)
                joins.append(f"{src} {edge_label(edge)} {dst}")
        texts.append(shown.get(cand.id, cand.id) + (f" [{'; '.join(joins)}]" if joins else ""))
    reply = ask(res, state, [entity_messages(state.question, NEIGHBOURS_REACHED, texts, k)],
                desc="entity agent", max_calls=max_calls, max_tokens=max_tokens,
                validate=_form_check)[0]  # fmt: skip
    shares = _choices(reply, texts, "entity agent", run)
    if shares is None:  # failed, unreadable or not asked: equal scores, candidate order
        shares = [(i, 1.0 / len(candidates)) for i in range(len(candidates))]
    kept = [dataclasses.replace(candidates[i], value=share, data={**candidates[i].data,
                                                                  "via": "agent"})
            for i, share in shares[: max(k, 0)]]  # fmt: skip
    state.nodes = [*linked, *kept]


# --------------------------------------------------------------------------- paths (S3)


@operator("subgraph.agent_path", needs=("entity-graph",))
def agent_path(
    res: Resources, state: State, *, k: int = 5, max_calls: int = 0, max_tokens: int = 0
) -> None:
    """The candidate paths an LLM judges relevant to the question, best first (AgentPath).

    Candidates are ``state.subgraph["paths"]`` (KhopPath's); one call keeps at most
    ``k`` with scores adding up to 1 (each kept path's score). When the call fails,
    its reply is unusable or the budget is spent, the first ``k`` stay unfiltered.
    """
    from hygraph.prompts.agents import path_messages

    require_llm(res, "subgraph.agent_path")
    paths: list[Path] = list(state.subgraph.get(PATHS, []))
    if not paths:
        return
    run = agent_run(state)
    names = entity_names(res, {n for p in paths for n in p.nodes})
    texts = [path_text(p, names) for p in paths]
    replies = [None] if run.stop else ask(
        res, state, [path_messages(state.question, texts, k)], desc="path agent",
        max_calls=max_calls, max_tokens=max_tokens, validate=_form_check)  # fmt: skip
    shares = _choices(replies[0], texts, "path agent", run)
    if shares is None:
        state.subgraph[PATHS] = paths[: max(k, 0)]
        return
    state.subgraph[PATHS] = [dataclasses.replace(paths[i], score=share)
                             for i, share in shares[: max(k, 0)]]  # fmt: skip


# --------------------------------------------------------------------------- check


@operator("subgraph.agent_check", needs=("entity-graph",))
def agent_check(res: Resources, state: State, *, max_calls: int = 0, max_tokens: int = 0) -> None:
    """An LLM says whether the paths found so far answer the question; yes ends the search.

    The paths are ``state.subgraph["paths"]`` (none: no call). A "yes" stops the query's
    agent run (``stop="enough evidence"``); "no", a failed call or an unusable reply
    lets it go on.
    """
    from hygraph.graph.algorithms.khop import merge_paths
    from hygraph.prompts.agents import enough_messages, parse_enough

    require_llm(res, "subgraph.agent_check")
    run = agent_run(state)
    paths: list[Path] = list(state.subgraph.get(PATHS, []))
    if run.stop or not paths:
        return
    kept = {tuple(n) for n in merge_paths([list(p.nodes) for p in paths], join=False)}
    shown = [p for p in paths if p.nodes in kept]
    names = entity_names(res, {n for p in shown for n in p.nodes})
    texts = list(dict.fromkeys(path_text(p, names) for p in shown))
    reply = ask(res, state, [enough_messages(state.question, texts)], desc="evidence check",
                max_calls=max_calls, max_tokens=max_tokens, validate=parse_enough)[0]  # fmt: skip
    if reply is None:
        return
    if isinstance(reply, BaseException):
        run.failures += 1
        log.warning("evidence check: the LLM call failed or its reply was unusable (%s)", reply)
        return
    if parse_enough(reply):
        run.stop = "enough evidence"
