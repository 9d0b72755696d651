"""BM25 in a fresh process loads bm25s without numba (an optional backend it does not use).

Run in a subprocess, so that no other test's imports are in ``sys.modules``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import sys
    from hygraph.layers.bm25 import bm25s_module
    bm25s = bm25s_module()
    index = bm25s.BM25()
    corpus = ["the harbour crane lifts ships", "a lighthouse keeper rows home"]
    index.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    docs, scores = index.retrieve(
        bm25s.tokenize(["crane"], stopwords="en", show_progress=False), k=1, show_progress=False
    )
    assert int(docs[0][0]) == 0 and float(scores[0][0]) > 0
    assert index.backend == "numpy"
    print("numba" in sys.modules)
    import numba  # still importable afterwards, as usual
    print(bool(numba.__version__))
    """
)


def test_bm25s_is_imported_without_numba():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.split() == ["False", "True"]
