"""Embedding ahead: a small build's layers share one encoder call.

Inserting one document into the default index embeds its chunk (``chunks``), its facts
(``fact-vectors``) and its entity names (``entity-vectors``): three calls of a few texts
each. On a CPU such a call is bound by reading the model's weights, not by the texts, so
three small calls cost about three times one call of them all. Before the layers of a
small build run, :func:`embed_ahead` asks each of them what it is about to embed
(:meth:`Layer.planned_texts`) and embeds the lot in one call; the layers then find
their vectors held in memory (:meth:`CachedEmbedder.hold`). A bulk build is left as it
is: its layers embed in large batches already, and with progress bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hygraph.layers.base import Layer
from hygraph.models.base import Region

if TYPE_CHECKING:
    from hygraph.resources import Resources

#: A build whose layers have more pending chunks than this is not small.
AHEAD_CHUNKS = 16
#: Nor one whose layers would embed more texts than this.
AHEAD_TEXTS = 512


def embed_ahead(res: Resources, layers: Sequence[Layer], done: set[str]) -> int:
    """Embed in one call what ``layers`` will embed, when the build is small.

    Only layers whose requirements are all in ``done`` (the layers already brought up
    to date) are asked: what the others embed depends on what has not run yet. Returns
    how many texts were embedded ahead (0: none, the build is not small or nothing is
    planned). The call is timed as the ``embed`` stage.
    """
    hold = getattr(res.embedder, "hold", None)
    if hold is None:
        return 0
    texts: list[str] = []
    spans: dict[str, list[Region]] = {}  # text → the regions its pass pools
    for layer in layers:
        if not plans(layer) or not set(layer.requires) <= done:
            continue
        pending = layer.pending(res)
        if len(pending) > AHEAD_CHUNKS:
            return 0
        if pending:
            texts += layer.planned_texts(res, pending)
            planned_spans = getattr(layer, "planned_spans", None)
            if planned_spans is not None:
                spans.update(planned_spans(res, pending))
        if len(texts) > AHEAD_TEXTS:
            return 0
    texts = list(dict.fromkeys(texts))
    if len(texts) < 2:
        return 0
    with res.tracker.stage("embed"):
        hold_spans = getattr(res.embedder, "hold_spans", None)
        if spans and hold_spans is not None:
            hold_spans(texts, [spans.get(t, []) for t in texts])  # one pass for all
        else:
            hold(texts)
    return len(texts)


def plans(layer: Layer) -> bool:
    """Whether ``layer`` says what it will embed (overrides :meth:`Layer.planned_texts`)."""
    return type(layer).planned_texts is not Layer.planned_texts


def update_layers(res: Resources, layers: Sequence[Layer]) -> dict[str, int]:
    """Bring ``layers`` (each after what it requires) up to date, in order.

    Before the first layer that says what it will embed, a small build embeds ahead for
    it and the layers after it (:func:`embed_ahead`).
    Returns how many chunks each layer took in, by name.
    """
    counts: dict[str, int] = {}
    done: set[str] = set()
    ahead = False
    try:
        for i, layer in enumerate(layers):
            if not ahead and plans(layer):
                ahead = True
                embed_ahead(res, layers[i:], done)
            counts[layer.name] = layer.update(res)
            done.add(layer.name)
    finally:
        release = getattr(res.embedder, "release", None)
        if release is not None:
            release()
    return counts
