"""Prompt for answering a question from retrieved context (used by ``query(answer=True)``)."""

from __future__ import annotations

from hygraph.models.base import Message
from hygraph.prompts.blocks import DATA_NOTE, fenced

ANSWER_SYSTEM = (
    "You answer questions using only the evidence you are given. The evidence may need "
    "to be combined across several items to reach the answer. If the evidence does not "
    "contain the answer, say that you cannot tell from the given material. Keep the "
    "answer short and factual; cite the items you used by their section and number, "
    "for example (Passages 2). " + DATA_NOTE
)

ANSWER_USER = "Evidence:\n{context}\n\nQuestion: {question}\nAnswer:"


def answer_messages(question: str, context: str) -> list[Message]:
    """Chat messages asking the model to answer ``question`` from ``context``."""
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {
            "role": "user",
            "content": ANSWER_USER.format(context=fenced(context), question=question),
        },  # fmt: skip
    ]
