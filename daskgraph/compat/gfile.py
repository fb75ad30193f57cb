"""``tf.gfile``: TensorFlow 1's file functions and ``GFile``, over fsspec's file systems.

Its one job is that namespace with TensorFlow's behaviour: any path fsspec understands works
(local paths, ``memory://``, ``s3://``, ``gs://`` where their packages are installed), and
where TensorFlow raises its errors so does this module, with TensorFlow's words:
``NotFoundError`` for a missing file (``"<path>; No such file or directory"``),
``AlreadyExistsError`` for a ``Copy``/``Rename`` onto an existing file without
``overwrite``, ``FailedPreconditionError`` for ``Remove`` of a directory or ``MakeDirs``
under a file, ``PermissionDeniedError`` for reading a file opened for writing. As in
TensorFlow, a ``GFile`` opens its file at the first read or write (a missing file fails
then, and a file opened for writing and closed unwritten is not created), text modes read
and write UTF-8 without translating newlines, and ``MkDir``/``MakeDirs`` of an existing
directory succeed.

>>> import tempfile, os
>>> folder = tempfile.mkdtemp()
>>> with GFile(os.path.join(folder, "a.txt"), "w") as f:
...     f.write("one\\ntwo\\n")
>>> ListDirectory(folder), GFile(os.path.join(folder, "a.txt")).readlines()
(['a.txt'], ['one\\n', 'two\\n'])
>>> DeleteRecursively(folder); Exists(folder)
False
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from daskgraph import errors

__all__ = [
    "Copy",
    "DeleteRecursively",
    "Exists",
    "FastGFile",
    "FileStatistics",
    "GFile",
    "Glob",
    "IsDirectory",
    "ListDirectory",
    "MakeDirs",
    "MkDir",
    "Open",
    "Remove",
    "Rename",
    "Stat",
    "Walk",
]

_MODES = ("r", "w", "a", "r+", "w+", "a+")


def _path(path: Any) -> str:
    """A path (str, bytes or ``os.PathLike``) as a str."""
    path = os.fspath(path)
    return path.decode("utf-8") if isinstance(path, bytes) else path


def _fs(path: str) -> tuple[Any, str]:
    """The fsspec file system of ``path`` and the path as it names it."""
    return fsspec.core.url_to_fs(path)


def _missing(path: str) -> errors.NotFoundError:
    return errors.NotFoundError(f"{path}; No such file or directory")


@contextlib.contextmanager
def _tf_errors(path: str) -> Iterator[None]:
    """Turn the OSErrors of a file operation on ``path`` into TensorFlow's errors."""
    try:
        yield
    except FileNotFoundError as exc:
        raise _missing(path) from exc
    except FileExistsError as exc:
        raise errors.AlreadyExistsError(f"{path}; File exists") from exc
    except IsADirectoryError as exc:
        raise errors.FailedPreconditionError(f"{path}; Is a directory") from exc
    except NotADirectoryError as exc:
        raise errors.FailedPreconditionError(f"{path}; Not a directory") from exc
    except PermissionError as exc:
        raise errors.PermissionDeniedError(f"{path}; Permission denied") from exc


# -- questions ----------------------------------------------------------------------------------
def Exists(filename: Any) -> bool:
    """Whether ``filename`` (a file or a directory) exists."""
    filename = _path(filename)
    if not filename:
        return False
    fs, path = _fs(filename)
    return bool(fs.exists(path))


def IsDirectory(dirname: Any) -> bool:
    """Whether ``dirname`` is a directory (False when it does not exist)."""
    fs, path = _fs(_path(dirname))
    return bool(fs.isdir(path))


@dataclass(frozen=True)
class FileStatistics:
    """What :func:`Stat` says of a file: its size in bytes, modification time (nanoseconds
    since the epoch) and whether it is a directory."""

    length: int
    mtime_nsec: int
    is_directory: bool


def _mtime_nsec(fs: Any, path: str, info: dict[str, Any]) -> int:
    if isinstance(fs, LocalFileSystem):
        return os.stat(path).st_mtime_ns
    for key in ("mtime", "LastModified", "updated", "modified", "created"):
        value = info.get(key)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1e9)
        if isinstance(value, (int, float)):
            return int(value * 1e9)
    return 0


def Stat(filename: Any) -> FileStatistics:
    """The :class:`FileStatistics` of ``filename``; ``NotFoundError`` when it is missing."""
    filename = _path(filename)
    fs, path = _fs(filename)
    with _tf_errors(filename):
        info = fs.info(path)
    is_directory = info.get("type") == "directory"
    return FileStatistics(int(info.get("size") or 0), _mtime_nsec(fs, path, info), is_directory)


def ListDirectory(dirname: Any) -> list[str]:
    """The names (not paths) of the entries of directory ``dirname``, sorted.

    Raises ``NotFoundError`` ("Could not find directory ...") when it is not a directory.
    """
    dirname = _path(dirname)
    fs, path = _fs(dirname)
    if not fs.isdir(path):
        raise errors.NotFoundError(f"Could not find directory {dirname}")
    own = path.rstrip("/")
    names = {
        entry.rstrip("/").rsplit("/", 1)[-1]
        for entry in fs.ls(path, detail=False)
        if entry.rstrip("/") != own
    }
    return sorted(names)


def Glob(filename: Any) -> list[str]:
    """The paths matching the pattern ``filename`` (or any of a list of patterns), as
    TensorFlow writes them: a relative local pattern gives relative paths (``./a.txt``
    for ``*.txt``), a URL gives URLs; [] when nothing matches."""
    patterns = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else filename
    found: list[str] = []
    for pattern in map(_path, patterns):
        if not any(c in pattern for c in "*?["):  # no wildcard: the path itself if it exists
            found += [pattern] if Exists(pattern) else []
            continue
        fs, path = _fs(pattern)
        matches = sorted(fs.glob(path))
        if not isinstance(fs, LocalFileSystem):
            found += [fs.unstrip_protocol(m) for m in matches]
        elif os.path.isabs(pattern):
            found += [os.path.normpath(m) for m in matches]
        else:
            relative = [os.path.relpath(m) for m in matches]
            found += relative if os.path.dirname(pattern) else [f"./{m}" for m in relative]
    return found


def Walk(top: Any, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirname, subdirectories, files)`` for ``top`` and every directory below it, parents
    first (``in_order``) or last; nothing for a missing ``top``, as TensorFlow's."""
    yield from _walk(_path(top), in_order, None)


def _walk(top: str, topdown: bool, onerror: Any) -> Iterator[tuple[str, list[str], list[str]]]:
    try:
        listing = ListDirectory(top)
    except errors.NotFoundError as err:
        if onerror:
            onerror(err)
        return
    subdirs: list[str] = []
    files: list[str] = []
    for item in listing:
        (subdirs if IsDirectory(os.path.join(top, item)) else files).append(item)
    here = (top, subdirs, files)
    if topdown:
        yield here
    for subdir in subdirs:
        yield from _walk(os.path.join(top, subdir), topdown, onerror)
    if not topdown:
        yield here


# -- changes ------------------------------------------------------------------------------------
def MkDir(dirname: Any) -> None:
    """Create directory ``dirname`` (nothing when it exists); ``NotFoundError`` when its
    parent does not exist."""
    dirname = _path(dirname)
    fs, path = _fs(dirname)
    if fs.exists(path):
        return
    if not fs.isdir(fs._parent(path)):
        raise _missing(dirname)
    with _tf_errors(dirname):
        fs.mkdir(path, create_parents=False)


def MakeDirs(dirname: Any) -> None:
    """Create directory ``dirname`` and its missing parents (nothing when it exists);
    ``FailedPreconditionError`` when it or a parent is a file."""
    dirname = _path(dirname)
    fs, path = _fs(dirname)
    parent = path
    while parent and not fs.exists(parent):
        up = fs._parent(parent)
        parent = up if up != parent else ""
    if parent and not fs.isdir(parent):
        raise errors.FailedPreconditionError(f"{parent} is not a directory")
    with _tf_errors(dirname):
        fs.makedirs(path, exist_ok=True)


def Remove(filename: Any) -> None:
    """Delete file ``filename``; ``NotFoundError`` when missing, ``FailedPreconditionError``
    for a directory."""
    filename = _path(filename)
    fs, path = _fs(filename)
    if not fs.exists(path):
        raise _missing(filename)
    if fs.isdir(path):
        raise errors.FailedPreconditionError(f"{filename}; Is a directory")
    with _tf_errors(filename):
        fs.rm_file(path)


def DeleteRecursively(dirname: Any) -> None:
    """Delete ``dirname`` and everything below it (a file too); ``NotFoundError`` when it
    does not exist."""
    dirname = _path(dirname)
    fs, path = _fs(dirname)
    if not fs.exists(path):
        raise errors.NotFoundError(f"{dirname} not found")
    with _tf_errors(dirname):
        fs.rm(path, recursive=True)


def Copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:
    """Copy file ``oldpath`` to ``newpath`` (across file systems too); ``AlreadyExistsError``
    when ``newpath`` exists and not ``overwrite``, ``NotFoundError`` for a missing source or
    target directory."""
    oldpath, newpath = _path(oldpath), _path(newpath)
    if not overwrite and Exists(newpath):
        raise errors.AlreadyExistsError("file already exists")
    if not Exists(oldpath):
        raise _missing(oldpath)
    if IsDirectory(oldpath):
        raise errors.InvalidArgumentError(f"{newpath}; Invalid argument")
    with _tf_errors(oldpath), fsspec.open(oldpath, "rb", auto_mkdir=False) as source:
        with _tf_errors(newpath), fsspec.open(newpath, "wb", auto_mkdir=False) as target:
            shutil.copyfileobj(source, target)


def Rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:
    """Move ``oldname`` (a file or a directory) to ``newname`` on the same file system;
    ``AlreadyExistsError`` when ``newname`` exists and not ``overwrite``."""
    oldname, newname = _path(oldname), _path(newname)
    fs, old = _fs(oldname)
    other, new = _fs(newname)
    if type(fs) is not type(other):
        raise errors.UnimplementedError(
            f"Rename of {oldname} to {newname}: both paths must be on the same file system"
        )
    if not overwrite and fs.exists(new):
        raise errors.AlreadyExistsError("file already exists")
    if not fs.exists(old):
        raise _missing(oldname)
    if fs.isdir(new) and not fs.isdir(old):
        raise errors.FailedPreconditionError(f"{oldname}; Is a directory")
    with _tf_errors(oldname):
        fs.mv(old, new, recursive=True)


# -- files --------------------------------------------------------------------------------------
class _FileIO:
    """A file of any fsspec file system with TensorFlow's ``GFile`` interface: opened at
    the first read or write, text modes as UTF-8 with no newline translation."""

    def __init__(self, name: Any, mode: str = "r") -> None:
        self._name = _path(name)
        self._mode = mode
        self._binary = "b" in mode
        plain = mode.replace("b", "")
        if plain not in _MODES:
            raise errors.InvalidArgumentError(
                "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'"
            )
        self._readable = plain in ("r", "r+", "w+", "a+")
        self._writable = plain != "r"
        self._open_mode = plain[0] + "b" + plain[1:]
        self._file: Any = None

    @property
    def name(self) -> str:
        """The file's path, as given."""
        return self._name

    @property
    def mode(self) -> str:
        """The mode it was opened with."""
        return self._mode

    def _opened(self) -> Any:
        if self._file is None:
            with _tf_errors(self._name):
                self._file = fsspec.open(self._name, self._open_mode, auto_mkdir=False).open()
        return self._file

    def _for_reading(self) -> Any:
        if not self._readable:
            raise errors.PermissionDeniedError("File isn't open for reading")
        return self._opened()

    def _value(self, data: bytes) -> str | bytes:
        return data if self._binary else data.decode("utf-8")

    def read(self, n: int = -1) -> str | bytes:
        """``n`` bytes (all that is left for -1), decoded in text modes."""
        source = self._for_reading()
        return self._value(source.read() if n == -1 else source.read(n))

    def readline(self) -> str | bytes:
        """The next line with its newline ('' or b'' at the end)."""
        return self._value(self._for_reading().readline())

    def readlines(self) -> list[str | bytes]:
        """The lines that are left."""
        return list(self)

    def __iter__(self) -> _FileIO:
        return self

    def __next__(self) -> str | bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def write(self, file_content: str | bytes) -> None:
        """Write ``file_content`` (str as UTF-8, or bytes, in any mode)."""
        if not self._writable:
            raise errors.PermissionDeniedError("File isn't open for writing")
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        elif not isinstance(file_content, (bytes, bytearray)):
            raise TypeError(f"Expected binary or unicode string, got {file_content!r}")
        self._opened().write(bytes(file_content))

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None):
        """Move the read position to ``offset`` from the start (``whence`` 0), the current
        position (1) or the end (2); ``position`` is TensorFlow's older name of ``offset``."""
        source = self._for_reading()
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        offset = position if offset is None else offset
        if whence not in (0, 1, 2):
            raise errors.InvalidArgumentError(
                f"Invalid whence argument: {whence}. Valid values are 0, 1, or 2."
            )
        source.seek(offset, whence)

    def tell(self) -> int:
        """The current position in bytes."""
        return self._opened().tell()

    def size(self) -> int:
        """The file's size in bytes, as stored now."""
        return Stat(self._name).length

    def seekable(self) -> bool:
        """True: GFiles can seek."""
        return True

    def flush(self) -> None:
        """Write what is buffered to the file."""
        if self._file is not None and self._writable:
            self._file.flush()

    def close(self) -> None:
        """Close the file (a later read opens it again from the start)."""
        if self._file is not None:
            file, self._file = self._file, None
            file.close()

    def __enter__(self) -> _FileIO:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class GFile(_FileIO):
    """TensorFlow's file object (``tf.gfile.GFile(name, mode='r')``, also ``tf.gfile.Open``):
    modes ``r``, ``w``, ``a``, ``r+``, ``w+``, ``a+``, each with ``b`` for bytes."""


class FastGFile(_FileIO):
    """TensorFlow 1's deprecated ``FastGFile``: the same file object as :class:`GFile`."""


Open = GFile


def __getattr__(name: str) -> object:
    """A name tf.gfile does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.gfile", name, globals())
