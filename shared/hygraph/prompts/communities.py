"""Prompt and reply parser for community reports (GraphRAG-style, used by HiRAG too).

A community of the entity graph (or of HiRAG's multi-layer graph) is described to the
model as two tables, its entities and the relationships among them, optionally
preceded by the reports of its sub-communities. The model answers with one JSON object:

``{"title", "summary", "rating", "rating_explanation", "findings": [{"summary",
"explanation"}]}``

the structure GraphRAG's community reports have (spec 001 §3.7): a short title naming
key entities, an executive summary, an importance rating from 0 to 10 with a one-line
reason, and five to ten findings grounded in the tables. :func:`parse_report` reads a
reply tolerantly (renamed keys, a rating given as text, findings given as strings)
and raises :class:`~hygraph.prompts.replies.ParseError` when no title-or-summary is
left, so an unusable reply is never cached and falls back to an extractive report.
:func:`render_report` writes a report as the markdown text a context shows. The
wording is our own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_number,
    as_text,
    find_sections,
    lower_keys,
    parse_json_payload,
    pick,
    preview,
)

REPORT_SYSTEM = """\
You write reports about communities of a knowledge graph for an analyst who has to
understand, quickly and reliably, what a group of related entities is about.

You are given the entities of one community and the relationships among them as
tables, and sometimes the reports already written about its sub-communities. Using
only that material, write a report with:

- "title": a short, specific name for the community that mentions its key entities;
- "summary": an executive summary (a few sentences) of how the community is
  structured, how its entities relate to each other and what matters about them;
- "rating": a number from 0 to 10 saying how important or impactful the community is
  (10 = of the greatest importance);
- "rating_explanation": one sentence justifying the rating;
- "findings": five to ten key insights, each an object with a one-line "summary" and
  an "explanation" of a paragraph or more that is grounded in the tables.

Ground every statement in the given data. Do not invent facts, names or numbers; if
the data does not support something, leave it out. Write in English.

Reply with one JSON object and nothing else (no markdown fences, no text before or
after it):
{"title": "...", "summary": "...", "rating": 0.0, "rating_explanation": "...",
 "findings": [{"summary": "...", "explanation": "..."}]}
"""

REPORT_USER = """\
Write the report for this community.

{context}
"""

_TITLE_KEYS = ("title", "name", "heading", "community_title")
_SUMMARY_KEYS = ("summary", "executive_summary", "overview", "description")
_RATING_KEYS = ("rating", "impact_rating", "importance", "impact_severity_rating", "score")
_RATING_REASON_KEYS = ("rating_explanation", "rating_reason", "explanation", "justification")
_FINDINGS_KEYS = ("findings", "key_findings", "insights")
_FINDING_SUMMARY_KEYS = ("summary", "title", "finding", "insight", "headline")
_FINDING_TEXT_KEYS = ("explanation", "details", "detail", "text", "description", "content")
MAX_FINDINGS = 10


def report_messages(context: str) -> list[Message]:
    """The report conversation for one community whose tables are ``context``."""
    return [
        {"role": "system", "content": REPORT_SYSTEM},
        {"role": "user", "content": REPORT_USER.format(context=context.strip())},
    ]


def _rating(value: Any) -> float:
    """A rating clamped to 0..10 from a number or a text holding one (0 when none)."""
    number = as_number(value)
    return 0.0 if number is None else round(min(10.0, max(0.0, number)), 2)


def _findings(value: Any) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for item in as_list(value):
        if isinstance(item, str):
            text = " ".join(item.split())
            summary, explanation = text, ""
        elif isinstance(item, Mapping):
            data = lower_keys(item)
            summary = " ".join(as_text(pick(data, _FINDING_SUMMARY_KEYS)).split())
            explanation = " ".join(as_text(pick(data, _FINDING_TEXT_KEYS)).split())
        else:
            continue
        if summary or explanation:
            out.append({"summary": summary or explanation[:80], "explanation": explanation})
        if len(out) >= MAX_FINDINGS:
            break
    return out


def parse_report(text: str) -> dict[str, Any]:
    """The report in a reply to :func:`report_messages`, normalised.

    Returns ``{"title", "summary", "rating", "rating_explanation", "findings"}`` with
    the rating clamped to 0..10 and at most ten findings. A missing title is taken
    from the summary's first words; a missing summary from the findings.

    Raises:
        ParseError: no JSON object, or neither a title nor a summary nor a finding.
    """
    payload = parse_json_payload(text)
    groups = {
        "title": _TITLE_KEYS,
        "summary": _SUMMARY_KEYS,
        "rating": _RATING_KEYS,
        "reason": _RATING_REASON_KEYS,
        "findings": _FINDINGS_KEYS,
    }
    sections = find_sections(payload, groups) if isinstance(payload, Mapping) else None
    if sections is None:
        raise ParseError(f"the reply holds no report object: {preview(text)!r}")
    title = " ".join(as_text(sections.get("title")).split())
    summary = " ".join(as_text(sections.get("summary")).split())
    findings = _findings(sections.get("findings"))
    if not summary and findings:
        summary = " ".join(f["summary"] for f in findings[:3])
    if not title and not summary:
        raise ParseError(f"the report has no title and no summary: {preview(text)!r}")
    if not title:
        title = " ".join(summary.split()[:8]).rstrip(".,;:")
    return {
        "title": title,
        "summary": summary,
        "rating": _rating(sections.get("rating")),
        "rating_explanation": " ".join(as_text(sections.get("reason")).split()),
        "findings": findings,
    }


def render_report(report: Mapping[str, Any]) -> str:
    """A report as markdown: ``# title``, the summary, then one section per finding."""
    lines = [f"# {report.get('title', '')}".rstrip(), ""]
    if report.get("summary"):
        lines += [str(report["summary"]), ""]
    for finding in report.get("findings", []) or []:
        lines.append(f"## {finding.get('summary', '')}".rstrip())
        if finding.get("explanation"):
            lines += ["", str(finding["explanation"])]
        lines.append("")
    return "\n".join(lines).strip()


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows as a compact comma-and-tab separated table (the layout reports are fed)."""

    def cell(value: Any) -> str:
        return " ".join(str(value).split()).replace('"', "'")

    out = [",\t".join(header)]
    out += [",\t".join(f'"{cell(v)}"' if isinstance(v, str) else cell(v) for v in row)
            for row in rows]  # fmt: skip
    return "\n".join(out)
