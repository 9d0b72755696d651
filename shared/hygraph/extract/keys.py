"""Entity keys: the normalised form under which mentions merge across chunks.

Two mentions are the same entity when their keys are equal. The key is the
Unicode NFKC form, case-folded, with surrounding quotes removed, punctuation
replaced by spaces and whitespace collapsed, so "The  Beatles" and "the beatles"
merge while "Paris" and "Paris, Texas" stay apart (see the ambiguity lists of
the HyGRAG and HyperGraphRAG specs; HyGRAG's ASCII-only scheme is available as
``scheme="ascii"`` for exact reproduction, it drops accented letters).
"""

from __future__ import annotations

import functools
import re
import unicodedata

_WS = re.compile(r"\s+")
_QUOTES = "\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb"
_ASCII_DROP = re.compile(r"[^a-z0-9 ]")


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch).startswith("P")


def entity_key(name: str, *, scheme: str = "unicode") -> str:
    """The merge key of an entity name ('' for a name with no letters or digits).

    Memoised: a corpus names the same few thousand entities hundreds of thousands of
    times, and each key walks the name character by character (a third of the offline
    extractor's time on a long document before it was kept).
    """
    return _entity_key(name, scheme)


@functools.lru_cache(maxsize=1 << 16)
def _entity_key(name: str, scheme: str) -> str:
    if scheme == "ascii":
        return _WS.sub(" ", _ASCII_DROP.sub(" ", name.lower())).strip()
    if scheme != "unicode":
        raise ValueError(f"unknown key scheme {scheme!r}: use 'unicode' or 'ascii'")
    text = unicodedata.normalize("NFKC", name).casefold().strip().strip(_QUOTES)
    text = "".join(" " if _is_punct(ch) else ch for ch in text)
    return _WS.sub(" ", text).strip()


def display_name(name: str) -> str:
    """A mention cleaned for display: NFKC, whitespace collapsed, outer quotes removed."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", name)).strip().strip(_QUOTES).strip()
