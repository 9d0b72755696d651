"""``hygraph bench``: retrieval quality, cost and scale of methods and peers, side by side.

A dataset is a folder with ``corpus.jsonl`` (``{"id", "title", "text"}``),
``questions.jsonl`` (``{"id", "question", "answers", "supporting_ids", "type"}``)
and optionally ``extraction.jsonl`` (precomputed OpenIE records). Every method
runs in its own process over one shared index (same chunks, embedder and
extraction), so peak memory is measured per method and indexes are reused
across runs.
"""

from hygraph.bench.data import Dataset, Question, load_dataset
from hygraph.bench.metrics import answer_in_context, growth_exponent, recall_at_k

__all__ = [
    "Dataset",
    "Question",
    "answer_in_context",
    "growth_exponent",
    "load_dataset",
    "recall_at_k",
]
