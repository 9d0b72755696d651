"""An index in a folder this process may not write answers ``query`` and ``info``.

The folder is made read-only for real: a read-only bind mount when the tests run as
root (who may write any folder whatever its mode), ``chmod a-w`` otherwise. Where
neither is possible the tests are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hygraph import GraphIndex
from hygraph.errors import HygraphError


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
        for p in modes:
            p.chmod(modes[p] & ~0o222)
        try:
            yield
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
        return
    bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot make a read-only mount here: {bind.stderr.decode().strip()}")
    try:
        ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {ro.stderr.decode().strip()}")
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)  # lazy: never busy


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm, sample_path) -> Path:
    path = tmp_path_factory.mktemp("ro") / "ix"
    docs = sorted(sample_path.glob("*.md"))[:4]
    with GraphIndex.build(docs, path, methods=["hybrid-ppr", "vanilla"], progress=False):
        pass
    return path


def test_a_read_only_index_answers_through_the_api(built, tmp_path, monkeypatch):
    with GraphIndex.open(built, progress=False) as index:
        want = index.retrieve("Who designed the Caddow Bridge?", "hybrid-ppr", top_k=3).passages
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the vectors' copy goes
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    with read_only(built):
        with GraphIndex.open(built, progress=False) as index:
            assert index.read_only
            got = index.retrieve("Who designed the Caddow Bridge?", "hybrid-ppr", top_k=3)
            assert got.passages == want
            assert index.retrieve("Harrowby", "vanilla", top_k=2).passages
            with pytest.raises(HygraphError, match="read-only"):
                index.insert([built.parent / "none.txt"])
        assert list(tmp_path.glob("hygraph-readonly-*")) == []  # the copy went with close()


def test_a_read_only_index_answers_the_cli(built, capsys):
    from hygraph.cli import main

    with read_only(built):
        assert main(["query", "Who designed the Caddow Bridge?", "--index", str(built)]) == 0
        assert main(["info", "--index", str(built)]) == 0
        capsys.readouterr()
        (built.parent / "more.txt").write_text("Harrowby is a port town.")
        assert main(["index", str(built.parent / "more.txt"), "--index", str(built)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is read-only" in err[0]
