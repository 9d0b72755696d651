"""Benchmark datasets: the corpus, the questions, and derived corpora for scaling runs."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from hygraph.errors import InputError


@dataclass
class Question:
    id: str
    question: str
    answers: list[str]
    supporting_ids: list[str]
    type: str = "all"
    evidence: list[str] = field(default_factory=list)  # sentences the answer rests on


def parse_evidence(raw: object) -> list[str]:
    """A question's ``evidence`` as a list of strings.

    Accepts a list of strings or of objects with a ``fact`` or ``text`` key (the
    form MultiHop-RAG's ``evidence_list`` uses), or a single string; anything else is
    a ``TypeError`` so a bad record is reported with its line number.
    """
    if raw is None:
        return []
    items = [raw] if isinstance(raw, str | dict) else raw
    if not isinstance(items, list):
        raise TypeError(f"evidence must be a list, not {type(raw).__name__}")
    out: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("fact", item.get("text"))
        if not isinstance(item, str):
            raise TypeError("evidence items must be strings or objects with 'fact' or 'text'")
        if item.strip():
            out.append(item)
    return out


@dataclass
class Dataset:
    """A benchmark folder: corpus, questions and an optional precomputed extraction."""

    path: Path
    name: str
    corpus_path: Path
    questions: list[Question] = field(default_factory=list)
    extraction_path: Path | None = None

    @property
    def n_documents(self) -> int:
        with self.corpus_path.open(encoding="utf-8") as fh:
            return sum(1 for line in fh if line.strip())


def load_dataset(path: str | Path) -> Dataset:
    """Read a dataset folder (see :mod:`hygraph.bench`); questions are optional."""
    root = Path(path).expanduser().resolve()
    corpus = root / "corpus.jsonl"
    if not corpus.is_file():
        raise InputError(f"no corpus.jsonl in {root}")
    questions: list[Question] = []
    qpath = root / "questions.jsonl"
    if qpath.is_file():
        try:
            lines = qpath.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            where = f"{exc.reason} at byte {exc.start}"
            raise InputError(f"{qpath}: not UTF-8 text ({where})") from None
        for line_no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                questions.append(
                    Question(
                        id=str(raw["id"]),
                        question=raw["question"],
                        answers=[str(a) for a in raw.get("answers", [])],
                        supporting_ids=[str(s) for s in raw.get("supporting_ids", [])],
                        type=str(raw.get("type", "all")),
                        evidence=parse_evidence(raw.get("evidence")),
                    )
                )
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                detail = str(exc)[:200] if not isinstance(exc, RecursionError) else "too deep"
                raise InputError(f"{qpath}:{line_no}: bad question record ({detail})") from None
    extraction = root / "extraction.jsonl"
    return Dataset(
        path=root,
        name=root.name,
        corpus_path=corpus,
        questions=questions,
        extraction_path=extraction if extraction.is_file() else None,
    )


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def subset(dataset: Dataset, fraction: float, out_dir: Path, seed: int = 0) -> Dataset:
    """A corpus of ``fraction`` of the documents, always keeping every question's gold passages.

    Questions stay answerable, so quality can be compared across sizes; the rest of
    the documents (distractors) are sampled with a fixed seed.
    """
    records = _records(dataset.corpus_path)
    gold = {s for q in dataset.questions for s in q.supporting_ids}
    keep = [r for r in records if str(r["id"]) in gold]
    rest = [r for r in records if str(r["id"]) not in gold]
    random.Random(seed).shuffle(rest)
    target = max(len(keep), round(fraction * len(records)))
    chosen = {str(r["id"]) for r in keep + rest[: target - len(keep)]}
    _write(out_dir / "corpus.jsonl", [r for r in records if str(r["id"]) in chosen])
    _copy_questions(dataset, out_dir)
    if dataset.extraction_path is not None:
        _write(
            out_dir / "extraction.jsonl",
            [r for r in _records(dataset.extraction_path) if str(r["id"]) in chosen],
        )
    return load_dataset(out_dir)


def synthetic(dataset: Dataset, n_documents: int, out_dir: Path, seed: int = 0) -> Dataset:
    """A larger corpus of ``n_documents`` made by joining random pairs of paragraphs.

    Each synthetic document is two corpus paragraphs (title of the first, both
    texts), so the text is realistic and every document is distinct. The original
    paragraphs are included too, so the questions keep their gold passages.
    """
    records = _records(dataset.corpus_path)
    rng = random.Random(seed)
    out = list(records)
    seen: set[tuple[str, str]] = set()
    while len(out) < n_documents:
        a, b = rng.sample(records, 2)
        pair = (str(a["id"]), str(b["id"]))
        if pair in seen:
            continue
        seen.add(pair)
        out.append(
            {
                "id": f"syn-{len(out)}",
                "title": a.get("title", ""),
                "text": f"{a['text']} {b['text']}",
            }
        )
    _write(out_dir / "corpus.jsonl", out[:n_documents])
    _copy_questions(dataset, out_dir)
    return load_dataset(out_dir)


def _copy_questions(dataset: Dataset, out_dir: Path) -> None:
    src = dataset.path / "questions.jsonl"
    if src.is_file():
        (out_dir / "questions.jsonl").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
