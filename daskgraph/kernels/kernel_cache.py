"""The kernel cache on disk: generated kernels as module files that Numba caches across processes.

Its one job is to turn a kernel's module text into its compiled functions so that a second
process (a restarted worker, the next run of a test suite) loads them in milliseconds
instead of compiling them again. A text is written once, as ``k<key>.py`` in the ``numba``
folder of the cache folder (``daskgraph.cache-dir``), ``<key>`` the hash of the text and
of what compiled code depends on (Python, NumPy, Numba and llvmlite's versions, the CPU's
name and features: :func:`fingerprint`); importing it from there, its functions decorated
with ``numba.njit(..., cache=CACHE)`` load from Numba's own cache beside it, or compile and
save there for the next process.

**Trust.** Numba's cache files are pickles: they are read only from a folder that its user
made, made ``0700`` and that nobody else can write (:func:`trusted`); a folder that fails that
check (or cannot be made) is not used, and kernels compile in memory, as does every kernel of
a cache folder that cannot be written. An entry that fails to load (truncated, corrupt) is
deleted and compiled again; one of another Numba version lives under another key, and Numba
ignores an index of another version.

**Several processes at once.** A module file is written to a temporary name and linked to its
final one, which fails where another process was first (their texts are the same): a file
once published is never rewritten, so the source stamp Numba's index keeps stays valid.
Numba writes its index and data files to temporary names then renames them: two processes
compiling one kernel at once both end with a working loop, the last one's files kept.

A kernel module's text names its own signatures and options; ``CACHE`` is provided by the
loader (True where the module is imported from the cache folder)::

    import numba
    from numba import types

    @numba.njit(types.float64(types.float64), cache=CACHE, nogil=True)
    def twice(x):
        return 2 * x

>>> module = load_module("def twice(x):\\n    return 2 * x\\n", "doctest")
>>> module.twice(21)
42
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import pathlib
import platform
import stat
import sys
import tempfile
import threading
import types
from typing import Any

__all__ = [
    "COUNTS",
    "cache_folder",
    "configure_cupy_cache",
    "entry_path",
    "fingerprint",
    "install_locator",
    "is_cached",
    "load_module",
    "trusted",
]

logger = logging.getLogger("daskgraph.kernels.cache")

#: marks a module whose functions compiled and saved their cache files (its Numba entries
#: are complete): a process that finds it loads the module at once (see fused.py)
_DONE = ".done"

_lock = threading.Lock()
_warned: set[str] = set()
_fingerprint: list[str] = []


def default_cache_dir() -> str:
    """The user's cache folder for daskgraph: ``$XDG_CACHE_HOME/daskgraph``, else
    ``~/.cache/daskgraph``.

    >>> default_cache_dir().endswith("daskgraph")
    True
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "daskgraph")


def cache_folder(create: bool = True) -> pathlib.Path | None:
    """The cache folder (``daskgraph.cache-dir``, env ``DASK_DASKGRAPH__CACHE_DIR``; empty or
    null: :func:`default_cache_dir`), made ``0700`` if missing; None where it is turned off
    (``false``) or fails :func:`trusted` (said once at WARNING, logger
    ``daskgraph.kernels.cache``)."""
    import dask.config

    setting = dask.config.get("daskgraph.cache-dir", None)
    if setting is False or (isinstance(setting, str) and setting.lower() in ("false", "off")):
        return None
    folder = pathlib.Path(os.path.expanduser(str(setting or default_cache_dir())))
    return checked_folder(folder, create)


def checked_folder(folder: pathlib.Path, create: bool = True) -> pathlib.Path | None:
    """``folder`` (made ``0700`` with its parents if missing and ``create``), or None where it
    cannot be made or is not :func:`trusted`."""
    try:
        if create and not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if trusted(folder):
            return folder
        _warn_once(
            str(folder),
            "daskgraph's kernel cache folder %s is not used: it must be a folder owned by you"
            " that no one else can write (chmod 700); kernels compile in memory",
            folder,
        )
    except OSError as exc:
        _warn_once(str(folder), "daskgraph's kernel cache folder %s is not used: %s", folder, exc)
    return None


def trusted(folder: pathlib.Path | str) -> bool:
    """Whether ``folder`` is a folder (not a link to one) owned by this process's user that
    neither its group nor others may write: only such a folder's pickles are read.

    >>> with tempfile.TemporaryDirectory() as folder:
    ...     trusted(folder)
    True
    """
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    owner = os.getuid() if hasattr(os, "getuid") else st.st_uid
    return stat.S_ISDIR(st.st_mode) and st.st_uid == owner and not st.st_mode & 0o022


def fingerprint() -> str:
    """What compiled code depends on besides its text: the versions of Python, NumPy, Numba
    and llvmlite (as installed: without importing them, so that a run's thread can look an
    entry up in microseconds), and the CPU (:func:`cpu`). Numba's index keys each entry by
    llvmlite's host CPU name and features too, and by its own version: what slips through
    this key (a CPU that reads the same here) is compiled again, never run."""
    if not _fingerprint:
        parts = [sys.version, platform.machine(), cpu()]
        parts += [_installed(name) for name in ("numpy", "numba", "llvmlite")]
        _fingerprint.append("\n".join(parts))
    return _fingerprint[0]


def _installed(name: str) -> str:
    """Which ``name`` is installed, without importing it: its ``dist-info`` folder (name and
    version), else where it is and when it was written."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return f"{name} -"
    origin = pathlib.Path(spec.origin)
    found = sorted(origin.parent.parent.glob(f"{name}-*.dist-info"))
    if found:
        return found[-1].name
    return f"{origin} {origin.stat().st_mtime_ns}"


def cpu() -> str:
    """The CPU's model and features (Linux: ``/proc/cpuinfo``'s first ``model name`` and
    ``flags``; elsewhere Python's ``platform.processor()``).

    >>> isinstance(cpu(), str)
    True
    """
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read(1 << 16)
    except OSError:
        return platform.processor()
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name in ("model name", "flags", "Features", "CPU part") and name not in found:
            found[name] = value.strip()
    return repr(sorted(found.items())) or platform.processor()


def key_of(source: str) -> str:
    """The cache key of a module's text (with :func:`fingerprint`)."""
    return hashlib.sha256(f"{fingerprint()}\0{source}".encode()).hexdigest()[:40]


def entry_path(source: str, folder: pathlib.Path | None = None) -> pathlib.Path | None:
    """Where the module of ``source`` lives in the cache folder (None: no cache folder)."""
    folder = folder or cache_folder()
    return None if folder is None else folder / "numba" / f"k{key_of(source)}.py"


def is_cached(source: str) -> bool:
    """Whether the cache folder holds the compiled functions of ``source`` (a process
    compiled and saved them: loading it now takes milliseconds, not a compile)."""
    path = entry_path(source)
    return path is not None and os.path.exists(str(path) + _DONE)


def load_module(
    source: str, label: str = "kernel", folder: pathlib.Path | None = None
) -> types.ModuleType:
    """The module of ``source`` (its functions compiled), imported from the cache folder
    (``folder``, else :func:`cache_folder`): loading Numba's cache there, or compiling and
    saving to it; else compiled in memory (no usable cache folder, or an entry that fails
    twice). ``CACHE`` is a global of the module: whether its ``njit`` functions may use
    Numba's cache (``cache=CACHE``). :data:`COUNTS` counts what compiled and what loaded."""
    path = entry_path(source, folder)
    if path is not None and _published(path, source):
        for attempt in range(2):
            try:
                module = _import(path)
            except Exception as exc:  # (a truncated or corrupt entry, a folder gone read-only)
                logger.info("kernel cache entry %s not loaded (%s): deleting it", path.name, exc)
                if attempt or not _discard(path):
                    break
            else:
                _count(module)
                _mark_done(path)
                return module
    module = _in_memory(source, label)
    _count(module)
    return module


#: functions compiled ("compiled", those of them in the compile server: "compiled elsewhere")
#: and loaded from the cache folder ("loaded") for this process so far (tests count with it)
COUNTS = {"compiled": 0, "loaded": 0, "compiled elsewhere": 0}


def _count(module: types.ModuleType) -> None:
    """Add the module's Numba functions to :data:`COUNTS` (compiled: a cache miss or no
    cache; loaded: every signature a cache hit)."""
    for value in list(vars(module).values()):
        stats = getattr(value, "stats", None)
        if stats is None or not hasattr(stats, "cache_misses"):
            continue
        hits, misses = sum(stats.cache_hits.values()), sum(stats.cache_misses.values())
        with _lock:
            if misses or not module.CACHE:
                COUNTS["compiled"] += 1
            elif hits:
                COUNTS["loaded"] += 1


def _published(path: pathlib.Path, source: str) -> bool:
    """Whether ``path`` holds ``source``, writing it there if not (False where it cannot)."""
    folder = path.parent
    try:
        if not folder.exists():
            folder.mkdir(mode=0o700, exist_ok=True)
        if not trusted(folder):
            return False
        if path.exists():
            if path.read_text() == source:
                return True
            path.unlink()  # (not what its name says: truncated, or written by someone else)
        fd, temp = tempfile.mkstemp(prefix=".k", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(source)
            try:
                os.link(temp, path)  # (fails where another process published it first)
            except FileExistsError:
                pass
        finally:
            os.unlink(temp)
        return path.read_text() == source
    except OSError as exc:
        logger.debug("kernel cache entry %s not written: %s", path.name, exc)
        return path.exists() and path.read_text() == source


def _import(path: pathlib.Path) -> types.ModuleType:
    """Import the module at ``path`` (its Numba cache files from its folder's ``__pycache__``,
    which must be trusted too)."""
    pycache = path.parent / "__pycache__"
    try:
        pycache.mkdir(mode=0o700, exist_ok=True)
    except OSError:  # (a read-only cache folder: what is there still loads)
        pass
    if pycache.exists() and not trusted(pycache):
        raise PermissionError(f"{pycache} is not a folder only you can write")
    _install_locator()
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None  # (a .py path always has both)
    module = importlib.util.module_from_spec(spec)
    module.CACHE = True  # type: ignore[attr-defined]
    # (registered first: Numba's cache files name the module, which loading them imports)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return module


def _discard(path: pathlib.Path) -> bool:
    """Delete the Numba cache files of the module at ``path``; whether any were."""
    found = False
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*"):
        try:
            cached.unlink()
            found = True
        except OSError:
            return False
    return found


def _mark_done(path: pathlib.Path) -> None:
    """Mark the module at ``path`` as compiled into the cache (where Numba saved an index)."""
    done = pathlib.Path(str(path) + _DONE)
    saved = any((path.parent / "__pycache__").glob(f"{path.stem}.*.nbi"))
    if saved and not done.exists():
        try:
            done.touch(mode=0o600)
        except OSError:
            pass


def _in_memory(source: str, label: str) -> types.ModuleType:
    """The module of ``source`` compiled in this process only (``CACHE`` False)."""
    module = types.ModuleType(f"daskgraph_kernel_{label}")
    module.CACHE = False  # type: ignore[attr-defined]
    exec(compile(source, f"<daskgraph {label}>", "exec"), module.__dict__)
    return module


def install_locator() -> None:
    """Have Numba keep the cache files of daskgraph's kernels in the cache folder, ahead of
    its own places (``NUMBA_CACHE_DIR``, ``__pycache__`` beside the source, ``~/.cache``),
    through its extension point (``CacheImpl._locator_classes``): a generated module's
    beside it (:func:`load_module`), and those of the ``cache=True`` functions of
    daskgraph's own modules in ``numba/<module>`` there (where the cache folder is unusable:
    a folder of this process only, so that no pickle of an unchecked folder is read). A
    module of daskgraph calls it before its ``njit(cache=True)`` decorators run."""
    from numba.core import caching

    with _lock:
        if _KernelLocator[0] is None:
            _KernelLocator[0] = _make_locator(caching)
            impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # (Numba < 0.61)
            impl._locator_classes.insert(0, _KernelLocator[0])


_install_locator = install_locator
_KernelLocator: list[Any] = [None]
_private: list[str] = []  # (the folder of this process's cache files where none is usable)


def _make_locator(caching: Any) -> type:
    class KernelCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """Numba's cache files of a daskgraph kernel: see :func:`install_locator`."""

        def __init__(self, py_func: Any, py_file: str, path: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._path = path

        def get_cache_path(self) -> str:
            return self._path

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if py_func.__globals__.get("CACHE") is True:  # (a module of load_module's)
                return cls(py_func, py_file, os.path.join(os.path.dirname(py_file), "__pycache__"))
            module = getattr(py_func, "__module__", None) or ""
            if not module.startswith("daskgraph.") or not os.path.exists(py_file):
                return None
            folder = cache_folder()
            if folder is not None:
                self = cls(py_func, py_file, str(folder / "numba" / module))
                try:
                    os.makedirs(self._path, mode=0o700, exist_ok=True)
                    if trusted(self._path):
                        self.ensure_cache_path()
                        return self
                except OSError:
                    pass
            with _lock:
                if not _private:
                    _private.append(tempfile.mkdtemp(prefix="daskgraph-numba-"))
            return cls(py_func, py_file, _private[0])

    return KernelCacheLocator


def configure_cupy_cache() -> str | None:
    """Point CuPy's kernel cache (``CUPY_CACHE_DIR``, read when CuPy compiles) at the ``cupy``
    folder of the cache folder, where the environment does not name one already; the folder
    used (None: CuPy's own default stays)."""
    if os.environ.get("CUPY_CACHE_DIR"):
        return os.environ["CUPY_CACHE_DIR"]
    folder = cache_folder()
    cupy = None if folder is None else checked_folder(folder / "cupy")
    if cupy is not None:
        os.environ["CUPY_CACHE_DIR"] = str(cupy)
        return str(cupy)
    return None


def _warn_once(key: str, message: str, *args: Any) -> None:
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    logger.warning(message, *args)
