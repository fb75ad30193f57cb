"""Key files are private from the moment they exist: no window in which others can read them."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from daskgraph import tls


def test_the_node_key_is_created_owner_only_whatever_the_umask(tmp_path, monkeypatch):
    """With a permissive umask and no chmod afterwards (as if the process died between the
    write and a later chmod), the key is still 0600: it was created that way."""
    monkeypatch.setattr(Path, "chmod", lambda *args, **kwargs: None)
    monkeypatch.setattr(os, "chmod", lambda *args, **kwargs: None)
    old = os.umask(0o022)
    try:
        paths = tls.make_certificates(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(paths["key"].stat().st_mode) == 0o600
    assert stat.S_IMODE(paths["cert"].stat().st_mode) == 0o644  # certificates are public


def test_an_existing_world_readable_key_is_restricted_before_it_is_rewritten(tmp_path, monkeypatch):
    key = tmp_path / tls.KEY_FILE
    key.write_text("old secret")
    key.chmod(0o644)
    seen = []
    real_fchmod = os.fchmod

    def watch(fd, mode):
        seen.append(os.fstat(fd).st_size)  # the old content is still there: nothing new yet
        real_fchmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", watch)
    tls.make_certificates(tmp_path)
    assert seen and seen[0] == len("old secret")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_text().startswith("-----BEGIN PRIVATE KEY-----")
