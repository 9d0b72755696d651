"""`hygraph.diskspace.used_bytes`: the disk an index takes, read while it may change."""


def test_used_bytes_skips_files_that_go_while_it_walks(tmp_path, monkeypatch):
    """An index's size is read while a build may be creating and removing temporary files
    (``GraphIndex.info`` under ``hygraph serve``): one that goes is skipped, not an error."""
    import os

    from hygraph.diskspace import used_bytes

    (tmp_path / "kept").write_bytes(b"x" * 10_000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "gone.tmp").write_bytes(b"y" * 10_000)
    whole = used_bytes(tmp_path)
    assert whole >= 20_000
    real_stat = os.stat

    def vanishing(path, *args, **kwargs):
        if str(path).endswith("gone.tmp"):
            raise FileNotFoundError(path)
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", vanishing)
    assert 10_000 <= used_bytes(tmp_path) < whole
    assert used_bytes(tmp_path / "missing") == 0
