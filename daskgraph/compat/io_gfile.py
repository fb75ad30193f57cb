"""``tf.io.gfile``: the file functions under their TensorFlow 1.13+/2 names.

Its one job is those names (``exists``, ``listdir``, ``rmtree``, ``walk(topdown, onerror)``,
``join``, ...), each the :mod:`daskgraph.compat.gfile` function of the older name, with the
same errors.

>>> join("gs://bucket/", "a", "b.txt"), join("folder", "file.py")
('gs://bucket/a/b.txt', 'folder/file.py')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import fsspec

from daskgraph.compat import gfile as _gfile
from daskgraph.compat.gfile import GFile

__all__ = [
    "GFile",
    "copy",
    "exists",
    "get_registered_schemes",
    "glob",
    "isdir",
    "join",
    "listdir",
    "makedirs",
    "mkdir",
    "remove",
    "rename",
    "rmtree",
    "stat",
    "walk",
]

copy = _gfile.Copy
exists = _gfile.Exists
glob = _gfile.Glob
isdir = _gfile.IsDirectory
listdir = _gfile.ListDirectory
makedirs = _gfile.MakeDirs
mkdir = _gfile.MkDir
remove = _gfile.Remove
rename = _gfile.Rename
rmtree = _gfile.DeleteRecursively
stat = _gfile.Stat


def walk(
    top: Any, topdown: bool = True, onerror: Callable[[Exception], Any] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirname, subdirectories, files)`` for ``top`` and every directory below it, parents
    first when ``topdown``; a directory that cannot be listed goes to ``onerror``."""
    yield from _gfile._walk(_gfile._path(top), topdown, onerror)


def join(path: Any, *paths: Any) -> str:
    """Join path components: with ``/`` for a URL (``scheme://...``), else as
    ``os.path.join``."""
    path = _gfile._path(path)
    if "://" in path[1:]:
        return "/".join([path.rstrip("/"), *(_gfile._path(p).strip("/") for p in paths)])
    return os.path.join(path, *paths)


def get_registered_schemes() -> list[str]:
    """The URL schemes fsspec knows (their packages may still need installing)."""
    return list(fsspec.available_protocols())
