"""Community reports: a title, summary, rating and findings per community, and their vectors.

GraphRAG describes each community of its entity graph in a report, and HiRAG does the
same over its multi-layer graph (spec 001 §3.7). :func:`write_reports` writes them for
any :class:`~hygraph.layers.communities.CommunityScheme`:

* **Input.** A community is packed as two tables (spec 001 §3.7, authors' code): its
  members ``(id, entity, type, description, degree)``, most connected first, and the
  relationships among them ``(id, source, target, description, rank)`` with rank =
  the endpoints' degree sum, highest first; each table gets half of
  ``report_context_tokens``. When something did not fit and sub-communities already
  have reports, those reports come first and the tables are filled with what they do
  not cover. Reports are written level by level, finest first, so sub-reports exist.
* **With an LLM**, the packed tables go through the shared fan-out
  (:func:`~hygraph.layers.summaries.summarize_groups`: cache, retries, bounded
  concurrency, usage charged to ``build:<layer>:reports:level<n>``) with the prompt of
  :mod:`hygraph.prompts.communities`; a reply that does not parse falls back to the
  extractive report for that community only.
* **Extractive (no LLM).** Title: the three most connected members' names (members
  grounded in chunks, with a letter in their name, first). Summary: the sentences most
  central to the relationship and member descriptions (the shared extractive
  summariser, most connected first), never empty (a member list when there is no text
  at all). Findings: the highest-ranked relationships with distinct descriptions (up to
  five), as ``source – label – target`` with the description. Edges whose text was
  written from a template (``data["templated"]``) are left out of both.
  Rating (ours): grows with the number of source chunks the community spans,
  ``min(10, 2.5 · log2(1 + chunks))``.

A report is stored on its community node: ``text`` is ``"<community label>: <title>"``
followed by the summary and the findings in markdown (:func:`report_text`; the label is
the node's name, ``community <level>.<cluster>``), ``data["report"]`` the fields,
``data["report_of"]`` a digest of the input it was written from (and of the writer, LLM
or extractive). A recompute keeps a report whose community id and digest are unchanged,
so only new or changed communities are written (an unchanged prompt would also be an
LLM cache hit). Each report is embedded (title and summary) in the scheme's collection,
payload ``{"kind", "level"}``; a vector is written when the report is new or its vector
is missing, so a build killed between the store and the vectors is completed by the
next one.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hygraph.graph.store import Edge, Node
from hygraph.layers.summaries import extractive_group_summary, summarize_groups
from hygraph.prompts.communities import parse_report, render_report, report_messages, table

if TYPE_CHECKING:
    from hygraph.layers.communities import Community, CommunityOptions, CommunityScheme
    from hygraph.resources import Resources

EXTRACTIVE_TEXTS = 60  # ours: texts an extractive summary reads (most connected first)
EXTRACTIVE_FINDINGS = 5  # ours
TITLE_NAMES = 3  # ours: names in an extractive title


def report_text(name: str, report: dict[str, Any]) -> str:
    """A community's shown text: ``"<name>: <title>"``, then the summary and the findings."""
    body = render_report(report).split("\n", 1)[-1].strip()
    return f"{name}: {report.get('title', '')}\n\n{body}".strip()


def approx_tokens(text: str) -> int:
    """A cheap token estimate for packing budgets (4 tokens per 3 words, ours)."""
    return len(text.split()) * 4 // 3 + 1


def edge_text(edge: Edge) -> tuple[str, str]:
    """``(label, description)`` of a graph edge: its own description, else the distinct
    descriptions its chunks gave (relation edges keep them per chunk), at most three."""
    label = str(edge.data.get("label") or "")
    description = str(edge.data.get("description") or "")
    if not description:
        seen: list[str] = []
        for items in edge.data.get("entries", {}).values():
            for item in items:
                text = str(item[1]).strip() if len(item) > 1 else ""
                if text and text not in seen:
                    seen.append(text)
        description = " ".join(seen[:3])
    return label, description


class _Graph:
    """What packing needs: member nodes, degrees, and the edges inside each community."""

    def __init__(
        self,
        res: Resources,
        scheme: CommunityScheme,
        found: Sequence[Community],
        rows: Sequence[tuple[str, str, float]],
    ):
        neighbours: dict[str, set[str]] = {}
        for s, d, _ in rows:
            if s != d:
                neighbours.setdefault(s, set()).add(d)
                neighbours.setdefault(d, set()).add(s)
        self.degree = {n: len(v) for n, v in neighbours.items()}
        self.members = res.store.get_nodes({n for c in found for n in c.members})
        pairs = {(s, d) for s, d, _ in rows}
        self.edges: list[Edge] = [
            e for kind in scheme.edge_kinds for e in res.store.iter_edges(kind)
            if (e.src, e.dst) in pairs
        ]  # fmt: skip
        self.inside: dict[str, list[Edge]] = {}
        for level in sorted({c.level for c in found}):
            where = {n: c.id for c in found if c.level == level for n in c.members}
            for e in self.edges:
                cid = where.get(e.src)
                if cid is not None and where.get(e.dst) == cid:
                    self.inside.setdefault(cid, []).append(e)

    def name(self, node_id: str) -> str:
        node = self.members.get(node_id)
        return (node.name if node is not None else None) or node_id

    def ranked_edges(self, cid: str) -> list[Edge]:
        edges = self.inside.get(cid, [])
        rank = {id(e): self.degree.get(e.src, 0) + self.degree.get(e.dst, 0) for e in edges}
        return sorted(edges, key=lambda e: (-rank[id(e)], -e.weight, e.src, e.dst))


def _fit(rows: list[tuple[Any, ...]], budget: int) -> tuple[list[tuple[Any, ...]], bool]:
    """The first rows that fit ``budget`` tokens (:func:`~hygraph.retrieval.budget.fit_budget`),
    and whether any were left out."""
    from hygraph.retrieval.budget import fit_budget

    kept = fit_budget(rows, budget, lambda row: approx_tokens(" ".join(str(v) for v in row)))
    return kept, len(kept) < len(rows)


def pack_community(
    community: Community,
    graph: _Graph,
    sub_reports: Sequence[tuple[str, Node]],
    budget: int,
) -> str:
    """The tables a report is written from (see the module docstring)."""
    member_rows = []
    for n in community.members:
        node = graph.members.get(n)
        if node is None:
            continue
        etype = str(node.data.get("type") or "")
        member_rows.append((n, node.name or n, etype, node.text or "", graph.degree.get(n, 0)))
    edge_rows = []
    for e in graph.ranked_edges(community.id):
        label, description = edge_text(e)
        text = description or f"{graph.name(e.src)} {label or 'related to'} {graph.name(e.dst)}"
        edge_rows.append((graph.name(e.src), graph.name(e.dst), text,
                          graph.degree.get(e.src, 0) + graph.degree.get(e.dst, 0)))  # fmt: skip
    ents, cut_e = _fit(member_rows, budget // 2)
    rels, cut_r = _fit(edge_rows, budget // 2)
    parts: list[str] = []
    if (cut_e or cut_r) and sub_reports:
        ranked = sorted(sub_reports, key=lambda s: (-float(s[1].data.get("rating", 0.0)), s[0]))
        sub_rows = [(n, " ".join((node.text or "").split()), node.data.get("rating", 0.0))
                    for n, (_, node) in enumerate(ranked)]  # fmt: skip
        subs, _ = _fit(sub_rows, budget // 2)
        covered = {m for _, node in ranked[: len(subs)] for m in node.data.get("members", [])}
        left = budget - sum(approx_tokens(" ".join(map(str, r))) for r in subs)
        ents, _ = _fit([r for r in member_rows if r[0] not in covered], max(left // 2, 0))
        names = {graph.name(m) for m in covered}
        rels, _ = _fit([r for r in edge_rows if not (r[0] in names and r[1] in names)],
                       max(left // 2, 0))  # fmt: skip
        parts.append("-----Reports-----\n" + table(("id", "report", "rating"), subs))
    entity_table = [(i, name, etype, desc, deg) for i, (_, name, etype, desc, deg)
                    in enumerate(ents)]  # fmt: skip
    relation_table = [(i, *row) for i, row in enumerate(rels)]
    parts.append(
        "-----Entities-----\n"
        + table(("id", "entity", "type", "description", "degree"), entity_table)
    )
    parts.append(
        "-----Relationships-----\n"
        + table(("id", "source", "target", "description", "rank"), relation_table)
    )
    return "\n\n".join(parts)


def _title_names(community: Community, graph: _Graph) -> list[str]:
    """The most connected members' names, preferring entities from chunks with a letter in
    their name (summary nodes and years make poor titles)."""

    def rank(n: str) -> tuple[int, int]:
        node = graph.members.get(n)
        grounded = node is not None and bool(node.sources)
        return (0 if grounded else 1, 0 if any(ch.isalpha() for ch in graph.name(n)) else 1)

    position = {n: i for i, n in enumerate(community.members)}
    ordered = sorted(community.members, key=lambda n: (rank(n), position[n]))
    return [graph.name(n) for n in ordered[:TITLE_NAMES]] or [community.id]


def extractive_report(community: Community, graph: _Graph, node: Node, max_words: int) -> dict:
    """A report without an LLM (see the module docstring): never empty."""
    names = [graph.name(n) for n in community.members]
    shown = _title_names(community, graph)
    title = ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]
    edges = [e for e in graph.ranked_edges(community.id) if not e.data.get("templated")]
    texts = [edge_text(e)[1] for e in edges[:EXTRACTIVE_TEXTS]]
    texts += [(graph.members[n].text or "") for n in community.members[:EXTRACTIVE_TEXTS]
              if n in graph.members]  # fmt: skip
    summary = extractive_group_summary([t for t in texts if t], max_words)
    if not summary:
        more = f" and {len(names) - 12} more" if len(names) > 12 else ""
        summary = f"A community of {len(names)} entities: {', '.join(names[:12])}{more}."
    findings: list[dict[str, str]] = []
    seen: set[str] = set()
    for e in edges:
        label, description = edge_text(e)
        if not description or description in seen:
            continue
        seen.add(description)
        head = f"{graph.name(e.src)} – {label or 'related to'} – {graph.name(e.dst)}"
        findings.append({"summary": head, "explanation": description})
        if len(findings) >= EXTRACTIVE_FINDINGS:
            break
    chunks = len(node.sources)
    return {
        "title": title,
        "summary": summary,
        "rating": round(min(10.0, 2.5 * math.log2(1 + chunks)), 2),
        "rating_explanation": f"Extractive report: the community spans {chunks} source chunks.",
        "findings": findings,
    }


def _writer(res: Resources, options: CommunityOptions) -> str:
    """Who writes reports now: ``llm:<model>`` or ``extractive`` (part of each digest)."""
    if options.report_llm and res.llm is not None:
        return f"llm:{getattr(res.llm, 'name', 'llm')}"
    return "extractive"


def write_reports(
    res: Resources,
    scheme: CommunityScheme,
    found: Sequence[Community],
    rows: Sequence[tuple[str, str, float]],
    options: CommunityOptions,
) -> int:
    """Write the missing or outdated reports of ``found``, then their vectors.

    Returns how many reports were written. See the module docstring.
    """
    if not found:
        return 0
    graph = _Graph(res, scheme, found, rows)
    nodes = res.store.get_nodes(c.id for c in found)
    writer = _writer(res, options)
    written: list[str] = []
    for level in sorted({c.level for c in found}, reverse=True):
        todo: list[tuple[Community, str, str]] = []
        for c in (c for c in found if c.level == level and c.id in nodes):
            subs = [
                (k, nodes[k]) for k in c.children if nodes.get(k) and nodes[k].data.get("report")
            ]
            context = pack_community(c, graph, subs, options.report_context_tokens)
            digest = hashlib.sha256(f"{writer}\n{context}".encode()).hexdigest()[:16]
            node = nodes[c.id]
            if node.data.get("report") and node.data.get("report_of") == digest:
                continue
            todo.append((c, context, digest))
        if not todo:
            continue
        with res.tracker.stage(f"build:{scheme.layer}:reports:level{level}"):
            reports = _generate(res, scheme, todo, graph, nodes, options, writer, level)
        updated = []
        for (c, _, digest), (report, by) in zip(todo, reports, strict=True):
            node = nodes[c.id]
            node.text = report_text(node.name or c.id, report)
            node.data.update({"report": report, "title": report["title"], "rating":
                              report["rating"], "written_by": by,
                              "report_of": digest if writer.startswith(by) else ""})  # fmt: skip
            updated.append(node)
        with res.store.transaction():
            res.store.upsert_nodes(updated)
        written += [n.id for n in updated]
    _embed(res, scheme, nodes, written)
    return len(written)


def _generate(
    res: Resources,
    scheme: CommunityScheme,
    todo: list[tuple[Community, str, str]],
    graph: _Graph,
    nodes: dict[str, Node],
    options: CommunityOptions,
    writer: str,
    level: int,
) -> list[tuple[dict, str]]:
    """``(report, written_by)`` per community: the LLM's where it answered, else extractive."""

    def fallback(c: Community) -> dict:
        return extractive_report(c, graph, nodes[c.id], options.report_words)

    if writer == "extractive":
        return [(fallback(c), "extractive") for c, _, _ in todo]
    replies = summarize_groups(
        res,
        [[context] for _, context, _ in todo],
        messages=lambda group: report_messages(group[0]),
        max_words=options.report_words,
        desc=f"{scheme.layer} reports, level {level}",
        parse=lambda text: json.dumps(parse_report(text)),
    )
    out: list[tuple[dict, str]] = []
    for (c, _, _), (text, by) in zip(todo, replies, strict=True):
        out.append((json.loads(text), "llm") if by == "llm" else (fallback(c), "extractive"))
    return out


def _embed(
    res: Resources, scheme: CommunityScheme, nodes: dict[str, Node], written: list[str]
) -> None:
    """Embed new reports and any report whose vector is missing."""
    reported = [cid for cid, n in nodes.items() if n.data.get("report")]
    if not reported:
        return
    have = (res.vectors.existing(scheme.collection, reported)
            if res.vectors.has_collection(scheme.collection) else set())  # fmt: skip
    fresh = set(written)
    ids = [cid for cid in reported if cid in fresh or cid not in have]
    texts = [f"{nodes[c].data['report']['title']}\n{nodes[c].data['report']['summary']}"
             for c in ids]  # fmt: skip
    payloads = [{"kind": str(scheme.node_kind), "level": int(nodes[c].data.get("level", 0))}
                for c in ids]  # fmt: skip
    res.upsert_vectors(scheme.collection, ids, texts, payloads)
