"""No file an index or its caches hold is readable by other users, whatever the umask."""

from __future__ import annotations

import os
import stat

import pytest

from hygraph.private import private_dir, tighten


def _open_to_others(root):
    return [
        str(p.relative_to(root))
        for p in [root, *root.rglob("*")]
        if not p.is_symlink() and p.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)
    ]


@pytest.fixture
def open_umask():
    """The usual 022 umask (files 0644, folders 0755), restored afterwards."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_a_library_build_and_query_leave_only_private_files(tmp_path, sample_path, open_umask):
    from hygraph.index import GraphIndex

    docs = sorted(sample_path.glob("*.md"))[:3]
    with GraphIndex(tmp_path / "ix", progress=False) as index:
        index.insert(docs, methods=["hybrid-ppr"])
        assert _open_to_others(tmp_path / "ix") == []
        index.query("Who founded the shipyard?", "hybrid-ppr", top_k=2)
    files = list((tmp_path / "ix").rglob("*"))
    assert len(files) > 20 and any(p.name.endswith(".sqlite") for p in files)
    assert _open_to_others(tmp_path / "ix") == []


def test_a_shared_cache_folder_keeps_its_files_private(tmp_path, sample_path, open_umask,
                                                       monkeypatch):  # fmt: skip
    from hygraph.index import GraphIndex

    monkeypatch.setenv("HYGRAPH_CACHE_DIR", str(tmp_path / "caches" / "hygraph"))
    with GraphIndex(tmp_path / "ix", progress=False) as index:
        index.insert(sorted(sample_path.glob("*.md"))[:2], methods=["vanilla"])
    assert _open_to_others(tmp_path / "caches" / "hygraph") == []
    assert any((tmp_path / "caches" / "hygraph").iterdir())


def test_the_cli_writes_private_files_and_restores_the_umask(tmp_path, sample_path, open_umask):
    from hygraph.cli import main

    docs = [str(p) for p in sorted(sample_path.glob("*.md"))[:2]]
    assert main(["index", *docs, "--index", str(tmp_path / "ix"), "--method", "vanilla"]) == 0
    assert _open_to_others(tmp_path / "ix") == []
    assert os.umask(0o022) == 0o022  # main() put the caller's umask back


def test_tighten_leaves_other_owners_and_links_alone(tmp_path, open_umask):
    target = tmp_path / "outside.txt"
    target.write_text("x")
    folder = private_dir(tmp_path / "a" / "b")
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    (folder / "f.txt").write_text("y")
    (folder / "link").symlink_to(target)
    tighten(tmp_path / "a")
    assert stat.S_IMODE((folder / "f.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # a link's target is not ours to change
    tighten(tmp_path / "missing")  # nothing there: nothing to do


def test_a_settled_folder_is_walked_again_once_an_entry_is_added(tmp_path, open_umask):
    """A folder unchanged since its entries were tightened is passed over, but a file
    created in it (or in a folder below) changes the folder's time, and is tightened."""
    folder = private_dir(tmp_path / "a")
    (folder / "old.txt").write_text("x")
    (folder / "sub").mkdir()
    settled = os.stat(folder).st_mtime_ns - 5_000_000_000  # changed 5 s ago: settled
    os.utime(folder, ns=(settled, settled))
    os.utime(folder / "sub", ns=(settled, settled))
    tighten(folder)
    assert _open_to_others(folder) == []
    (folder / "new.txt").write_text("y")  # 0644 under the open umask
    (folder / "sub" / "deep.txt").write_text("z")
    assert len(_open_to_others(folder)) == 2
    tighten(folder)
    assert _open_to_others(folder) == []
