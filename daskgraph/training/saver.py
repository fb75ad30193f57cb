"""Checkpoints: ``tf.train.Saver`` writes variables' values to disk and restores them.

``Saver.save(sess, "dir/model", global_step=n)`` fetches the variables with ``sess.run`` and
writes them, by variable name, as TensorFlow's V2 checkpoint ``dir/model-n``
(``dir/model-n.data-00000-of-00001``, then ``dir/model-n.index``:
:mod:`daskgraph.kernels.checkpoint_files`), which TensorFlow restores too, then records it in
``dir/checkpoint`` (TensorFlow's CheckpointState text: ``model_checkpoint_path: "model-n"``
and one ``all_model_checkpoint_paths`` line per kept checkpoint) and deletes the oldest beyond
``max_to_keep``. Every file is written atomically (a temporary file in the same directory,
flushed and ``fsync``-ed, then ``os.replace``-d into place), the index after the data and the
state after both, so a crash mid-save leaves the previous checkpoint and state intact; the
temporary file a killed save leaves behind is removed by the next save or restore in that
directory. ``restore`` reads the checkpoint back (TensorFlow's, or daskgraph's older
``.npz`` files) and assigns every variable, in a fresh process and graph too, whatever
devices the variables are on now.

>>> import tempfile, os
>>> import daskgraph as dg
>>> directory = tempfile.mkdtemp()
>>> with dg.Graph().as_default():
...     w = dg.Variable([1.0, 2.0], name="w")
...     saver = Saver()
...     with dg.Session() as sess:
...         sess.run(w.initializer)
...         path = saver.save(sess, os.path.join(directory, "model"), global_step=7)
>>> os.path.basename(path), os.path.basename(latest_checkpoint(directory))
('model-7', 'model-7')
>>> with dg.Graph().as_default():
...     w = dg.Variable([0.0, 0.0], name="w")
...     with dg.Session() as sess:
...         Saver().restore(sess, latest_checkpoint(directory))
...         sess.run(w).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

try:
    import fcntl
except ImportError:  # not POSIX: temporary files are not locked, and never swept
    fcntl = None  # type: ignore[assignment]

from daskgraph.errors import InvalidArgumentError, NotFoundError
from daskgraph.framework import scopes
from daskgraph.framework.graph import Operation, Tensor, get_default_graph
from daskgraph.kernels.checkpoint_files import (
    checkpoint_exists as _exists,
)
from daskgraph.kernels.checkpoint_files import (
    checkpoint_files,
    read_checkpoint,
    write_checkpoint,
)
from daskgraph.ops.array import group, placeholder
from daskgraph.ops.checkpoint_ops import CHECKPOINT_SUFFIX
from daskgraph.ops.state import Variable, assign, global_variables

__all__ = [
    "CheckpointState",
    "Saver",
    "checkpoint_exists",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "latest_checkpoint",
    "remove_checkpoint",
    "update_checkpoint_state",
]

SUFFIX = CHECKPOINT_SUFFIX
STATE_FILE = "checkpoint"


@dataclass
class CheckpointState:
    """The ``checkpoint`` state file: the latest checkpoint and every one kept (paths as
    written: relative to the state file's directory when they are in it), and optionally
    when each was written (seconds since the Epoch) and when the last one kept for
    ``keep_checkpoint_every_n_hours`` was."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: list[str] = field(default_factory=list)
    all_model_checkpoint_timestamps: list[float] = field(default_factory=list)
    last_preserved_timestamp: float | None = None

    def to_text(self) -> str:
        """TensorFlow's text format of a ``CheckpointState`` proto.

        >>> print(CheckpointState("m-2", ["m-1", "m-2"]).to_text(), end="")
        model_checkpoint_path: "m-2"
        all_model_checkpoint_paths: "m-1"
        all_model_checkpoint_paths: "m-2"
        """
        lines = [f"model_checkpoint_path: {_quote(self.model_checkpoint_path)}"]
        lines += [
            f"all_model_checkpoint_paths: {_quote(p)}" for p in self.all_model_checkpoint_paths
        ]
        lines += [
            f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps
        ]
        if self.last_preserved_timestamp is not None:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    __str__ = to_text

    @classmethod
    def from_text(cls, text: str) -> CheckpointState:
        """Parse :meth:`to_text`'s format; ValueError when it is not that."""
        latest, kept, times, preserved = None, [], [], None
        for line in text.splitlines():
            if not line.strip():
                continue
            match = _LINE.fullmatch(line.strip()) or _NUMBER_LINE.fullmatch(line.strip())
            if match is None:
                raise ValueError(f"Not a checkpoint state line: {line!r}")
            key, value = match.group(1), match.group(2)
            if key == "model_checkpoint_path":
                latest = _unquote(value)
            elif key == "all_model_checkpoint_paths":
                kept.append(_unquote(value))
            elif key == "all_model_checkpoint_timestamps":
                times.append(float(value))
            else:
                preserved = float(value)
        if latest is None:
            raise ValueError("The checkpoint state names no model_checkpoint_path")
        return cls(latest, kept, times, preserved)


_LINE = re.compile(r'(model_checkpoint_path|all_model_checkpoint_paths):\s*"((?:[^"\\]|\\.)*)"')
_NUMBER_LINE = re.compile(
    r"(all_model_checkpoint_timestamps|last_preserved_timestamp):\s*([-+0-9.eE]+|inf|nan)"
)


def _quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


# -- atomic files ----------------------------------------------------------------------------------
# A file being written is named ``.<final name>.daskgraph-partial-<random>.tmp`` (hidden, in the
# final file's directory, so that the rename stays within one file system) and holds an
# exclusive ``flock`` for as long as it is written. The marker keeps the sweep below away from
# user files; the lock keeps it away from files that a live writer (another Saver, another
# process, another host on a shared file system) is still writing.
_PARTIAL_MARKER = ".daskgraph-partial-"
_PARTIAL = re.compile(r"\..+" + re.escape(_PARTIAL_MARKER) + r"[A-Za-z0-9_]+\.tmp")


@contextmanager
def _atomic_file(path: str) -> Iterator[IO[bytes]]:
    """A file that appears at ``path`` whole or not at all: written as a hidden, locked
    temporary file in the same directory, flushed and fsync-ed, then renamed over ``path``;
    removed if the block raises. A process killed mid-write leaves its temporary file, which
    :func:`_sweep_partial_files` removes at the next save or restore in that directory."""
    directory = os.path.dirname(path) or "."
    handle, temporary = _locked_temporary(directory, os.path.basename(path))
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
            os.replace(temporary, path)  # still locked: no sweep takes it before the rename
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _locked_temporary(directory: str, name: str) -> tuple[int, str]:
    """A new temporary file for ``name`` in ``directory`` (descriptor and path), locked.

    A sweep may take the file in the instant between its creation and its lock (it looks
    abandoned then): the path is checked to still name the locked file, else a new one is
    made."""
    while True:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{name}{_PARTIAL_MARKER}", suffix=".tmp", dir=directory
        )
        _lock(handle, blocking=True)
        if _names_file(temporary, handle):
            return handle, temporary
        os.close(handle)  # swept before it was locked: its name is gone


def _lock(handle: int, blocking: bool) -> bool:
    """Take the exclusive lock of an open file; False if another process holds it (only
    when not ``blocking``). Where the platform has no ``flock``, always True."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _names_file(path: str, handle: int) -> bool:
    """Whether ``path`` still names the open file ``handle``."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(handle))
    except FileNotFoundError:
        return False


def _sweep_partial_files(directory: str) -> list[str]:
    """Remove the temporary files that saves killed mid-write left in ``directory`` (those of
    daskgraph's naming that no live writer holds locked); returns their paths. Without
    ``flock`` (not POSIX) nothing is removed: a writer could not be told from a leftover."""
    removed = []
    try:
        names = [n for n in os.listdir(directory or ".") if _PARTIAL.fullmatch(n)]
    except OSError:
        return removed
    if fcntl is None:
        return removed
    for name in names:
        path = os.path.join(directory, name)
        try:
            handle = os.open(path, os.O_RDONLY)
        except OSError:
            continue  # gone already (its writer renamed it, or another sweep took it)
        try:
            if _lock(handle, blocking=False) and _names_file(path, handle):
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass  # unlocked by a writer that just renamed it, or not ours to remove
        finally:
            os.close(handle)
    return removed


def _fsync_directory(directory: str) -> None:
    """Make the rename durable (where the platform lets a directory be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_checkpoint(prefix: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the checkpoint ``prefix``, each of its files atomically (the index last)."""
    write_checkpoint(prefix, arrays, _atomic_file)


# -- the state file --------------------------------------------------------------------------------
def _state_path(directory: str, latest_filename: str | None) -> str:
    return os.path.join(directory, latest_filename or STATE_FILE)


def get_checkpoint_state(
    checkpoint_dir: str, latest_filename: str | None = None
) -> CheckpointState | None:
    """The state file of ``checkpoint_dir``, its relative paths made relative to the current
    directory (joined to ``checkpoint_dir``), or None when there is none."""
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    state = CheckpointState.from_text(text)
    return CheckpointState(
        _resolve(checkpoint_dir, state.model_checkpoint_path),
        [_resolve(checkpoint_dir, p) for p in state.all_model_checkpoint_paths],
        state.all_model_checkpoint_timestamps,
        state.last_preserved_timestamp,
    )


def _resolve(directory: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(directory, path)


def generate_checkpoint_state_proto(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    all_model_checkpoint_timestamps: list[float] | None = None,
    last_preserved_timestamp: float | None = None,
) -> CheckpointState:
    """A :class:`CheckpointState` naming ``model_checkpoint_path`` as the latest checkpoint
    (added to ``all_model_checkpoint_paths`` when it is not their last); with a relative
    ``save_dir``, relative paths are made relative to it (TensorFlow's function).

    >>> print(generate_checkpoint_state_proto("train", "train/model-3"), end="")
    model_checkpoint_path: "model-3"
    all_model_checkpoint_paths: "model-3"
    """
    kept = list(all_model_checkpoint_paths or [])
    if not kept or kept[-1] != model_checkpoint_path:
        kept.append(model_checkpoint_path)
    times = list(all_model_checkpoint_timestamps or [])
    if times and len(times) != len(kept):
        raise ValueError(
            "Checkpoint timestamps, if provided, must match checkpoint paths (got paths "
            f"{kept} and timestamps {times})"
        )
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        kept = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in kept]
    return CheckpointState(model_checkpoint_path, kept, times, last_preserved_timestamp)


def update_checkpoint_state(
    save_dir: str,
    model_checkpoint_path: str,
    all_model_checkpoint_paths: list[str] | None = None,
    latest_filename: str | None = None,
    all_model_checkpoint_timestamps: list[float] | None = None,
    last_preserved_timestamp: float | None = None,
) -> None:
    """Write ``save_dir``'s state file atomically; paths inside ``save_dir`` are written
    relative to it (so the directory can be moved)."""
    kept = list(all_model_checkpoint_paths or [])
    if not kept or kept[-1] != model_checkpoint_path:
        kept = [p for p in kept if p != model_checkpoint_path] + [model_checkpoint_path]
    times = list(all_model_checkpoint_timestamps or [])
    if times and len(times) != len(kept):
        raise ValueError(
            "Checkpoint timestamps, if provided, must match checkpoint paths (got paths "
            f"{kept} and timestamps {times})"
        )
    state = CheckpointState(
        _relative(save_dir, model_checkpoint_path),
        [_relative(save_dir, p) for p in kept],
        times,
        last_preserved_timestamp,
    )
    with _atomic_file(_state_path(save_dir, latest_filename)) as out:
        out.write(state.to_text().encode("utf-8"))


def _relative(directory: str, path: str) -> str:
    if os.path.dirname(os.path.abspath(path)) == os.path.abspath(directory):
        return os.path.basename(path)
    return path


def checkpoint_exists(checkpoint_prefix: str) -> bool:
    """Whether a checkpoint was written at ``checkpoint_prefix`` (``dir/model-7``)."""
    return _exists(checkpoint_prefix)


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The path of the latest checkpoint recorded in ``checkpoint_dir``, or None when none
    was saved there (or its file is gone)."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state is None or not checkpoint_exists(state.model_checkpoint_path):
        return None
    return state.model_checkpoint_path


def get_checkpoint_mtimes(checkpoint_prefixes: list[str]) -> list[float]:
    """When each checkpoint of ``checkpoint_prefixes`` was written (seconds since the
    Epoch), for those that exist: the list is shorter when some do not (as TensorFlow's)."""
    mtimes = []
    for prefix in checkpoint_prefixes:
        files = checkpoint_files(prefix)  # (the index is written last)
        try:
            mtimes.append(os.stat(files[0]).st_mtime_ns / 1e9)
        except (OSError, IndexError):
            continue
    return mtimes


def remove_checkpoint(
    checkpoint_prefix: str, checkpoint_format_version: int = 2, meta_graph_suffix: str = "meta"
) -> None:
    """Delete the checkpoint ``checkpoint_prefix`` (its index first, then its data file, or
    its ``.npz`` file, and a meta graph file ``<prefix>.<meta_graph_suffix>`` if there is
    one); nothing when it is not there."""
    for path in (*checkpoint_files(checkpoint_prefix), f"{checkpoint_prefix}.{meta_graph_suffix}"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


# -- the saver -------------------------------------------------------------------------------------
class Saver:
    """Saves and restores variables.

    Parameters
    ----------
    var_list
        The variables: a list (each saved under its name, ``var.op.name``) or a dict from
        checkpoint name to variable. Default: every global variable of the default graph when
        the Saver is made.
    max_to_keep
        How many recent checkpoints to keep (older files are deleted); None or 0 keeps every
        file and lists only the latest in the state file (as TensorFlow).
    keep_checkpoint_every_n_hours
        Of the checkpoints beyond ``max_to_keep``, keep one every that many hours of
        training (not deleted, no longer listed in the state file).
    """

    def __init__(
        self,
        var_list: Any = None,
        reshape: bool = False,
        sharded: bool = False,
        max_to_keep: int | None = 5,
        keep_checkpoint_every_n_hours: float = 10000.0,
        name: str | None = None,
        restore_sequentially: bool = False,
        saver_def: Any = None,
        builder: Any = None,
        defer_build: bool = False,
        allow_empty: bool = False,
        write_version: Any = None,
        pad_step_number: bool = False,
        save_relative_paths: bool = False,
        filename: str | None = None,
    ) -> None:
        self._variables = _named_variables(var_list)
        if not self._variables and not allow_empty:
            raise ValueError("No variables to save")
        self._max_to_keep = max_to_keep
        self._keep_every_secs = keep_checkpoint_every_n_hours * 3600
        self._next_checkpoint_time = time.time() + self._keep_every_secs
        self._pad_step_number = pad_step_number
        self._last_checkpoints: list[tuple[str, float]] = []
        self._name = name or "save"
        self._restore_op: Operation | None = None
        self._restore_feeds: dict[str, Tensor] = {}

    @property
    def last_checkpoints(self) -> list[str]:
        """The checkpoints this Saver keeps, oldest first."""
        return [path for path, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        """Take over ``last_checkpoints`` (e.g. from :func:`get_checkpoint_state`), so that
        ``max_to_keep`` also deletes checkpoints of an earlier process (never kept for
        ``keep_checkpoint_every_n_hours``: their time is unknown)."""
        if not isinstance(last_checkpoints, list):
            raise TypeError("last_checkpoints must be a list.")
        self._last_checkpoints = [(path, float("inf")) for path in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[tuple]) -> None:
        """Take over ``[(path, seconds since the Epoch), ...]``, oldest first."""
        if not isinstance(last_checkpoints_with_time, list):
            raise TypeError("last_checkpoints_with_time must be a list.")
        self._last_checkpoints = [(str(p), float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Take over the checkpoints of an earlier process that still exist, with the times
        their files were written."""
        found = [(p, get_checkpoint_mtimes([p])) for p in checkpoint_paths]
        self.set_last_checkpoints_with_time([(p, times[0]) for p, times in found if times])

    def save(
        self,
        sess: Any,
        save_path: str,
        global_step: Any = None,
        latest_filename: str | None = None,
        meta_graph_suffix: str = "meta",
        write_meta_graph: bool = True,
        write_state: bool = True,
        strip_default_attrs: bool = False,
        save_debug_info: bool = False,
    ) -> str:
        """Write the variables' values to ``save_path-<global_step>`` (or ``save_path``);
        returns that path (the checkpoint's prefix: TensorFlow's V2 format, ``<path>.index``
        and ``<path>.data-00000-of-00001``, which TensorFlow restores too). No meta
        graph is written (daskgraph has no ``MetaGraphDef``): ``write_meta_graph`` and the
        arguments about it are accepted and ignored."""
        names = list(self._variables)
        fetches = [self._variables[n] for n in names]
        step = global_step
        if global_step is not None and not isinstance(global_step, (int, np.integer)):
            fetches.append(global_step)  # in the same run as the values: they match
        values = sess.run(fetches) if fetches else []
        if len(values) > len(names):
            step = values.pop()
        prefix = save_path if step is None else self._with_step(save_path, int(step))
        directory = os.path.dirname(prefix) or "."
        if not os.path.isdir(directory):
            # as TensorFlow: the checkpoint's own folder is made, not a missing chain of them
            if not os.path.isdir(os.path.dirname(os.path.abspath(directory))):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
            os.makedirs(directory, exist_ok=True)
        arrays = {name: np.asarray(value) for name, value in zip(names, values, strict=True)}
        _sweep_partial_files(directory)  # what saves killed mid-write left here
        _write_checkpoint(prefix, arrays)
        old = self._record(prefix)
        if write_state:
            update_checkpoint_state(directory, prefix, self.last_checkpoints, latest_filename)
        for path in old:  # once the state no longer names them
            remove_checkpoint(path, meta_graph_suffix=meta_graph_suffix)
        return prefix

    def _with_step(self, save_path: str, step: int) -> str:
        return f"{save_path}-{step:08d}" if self._pad_step_number else f"{save_path}-{step}"

    def _record(self, prefix: str) -> list[str]:
        """Add ``prefix`` as the latest checkpoint; returns those to delete: beyond
        ``max_to_keep``, but for one kept every ``keep_checkpoint_every_n_hours``."""
        if not self._max_to_keep:
            return []
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, time.time()))
        old = []
        while len(self._last_checkpoints) > self._max_to_keep:
            path, written = self._last_checkpoints.pop(0)
            if written > self._next_checkpoint_time:  # kept: one for these n hours
                self._next_checkpoint_time += self._keep_every_secs
                continue
            old.append(path)
        return old

    def restore(self, sess: Any, save_path: str) -> None:
        """Assign every variable its value in the checkpoint ``save_path``.

        Raises
        ------
        ValueError
            When there is no checkpoint ``save_path`` (TensorFlow's "not a valid checkpoint").
        NotFoundError
            When the checkpoint lacks a variable.
        InvalidArgumentError
            When a saved value's shape differs from its variable's.
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not checkpoint_exists(save_path):
            raise ValueError(f"The passed save_path is not a valid checkpoint: {save_path}")
        _sweep_partial_files(os.path.dirname(save_path) or ".")
        arrays = _read(save_path)
        feeds = self._restore_ops()
        feed_dict = {}
        for name, variable in self._variables.items():
            if name not in arrays:
                raise NotFoundError(
                    f"Key {name} not found in checkpoint {save_path}: the variable "
                    f"{variable.op.name!r} was not saved there (it has: "
                    f"{', '.join(sorted(arrays)) or 'nothing'})",
                    op=variable.op.name,
                    variable=name,
                )
            feed_dict[feeds[name]] = _checked(arrays[name], name, variable, save_path)
        if feed_dict:
            sess.run(self._restore_op, feed_dict)

    def _restore_ops(self) -> dict[str, Tensor]:
        """The placeholders fed on restore, and the one op assigning them; made once (on the
        first restore, in the variables' graph), each next to its variable."""
        if self._restore_op is None:
            graph = next(iter(self._variables.values())).graph
            assigns = []
            with graph.as_default(), graph.name_scope(self._name):
                for name, variable in self._variables.items():
                    with scopes.colocate_with(variable):
                        value = placeholder(variable.dtype, variable.shape, name="restore_value")
                        assigns.append(assign(variable, value))
                    self._restore_feeds[name] = value
                self._restore_op = group(*assigns, name="restore_all")
        return self._restore_feeds

    def build(self) -> None:
        """Make the restore ops now (else the first :meth:`restore` makes them), so that the
        graph can be finalized before restoring, as TensorFlow's ``Saver.build``."""
        if self._variables:
            self._restore_ops()

    def as_saver_def(self) -> None:
        """Not supported: daskgraph has no protocol buffers."""
        raise NotImplementedError("Saver.as_saver_def: daskgraph has no SaverDef protos")


def _named_variables(var_list: Any) -> dict[str, Variable]:
    if var_list is None:
        var_list = global_variables(get_default_graph())
    if isinstance(var_list, dict):
        named = dict(var_list)
        seen: set[int] = set()
        for name, var in named.items():
            if id(var) in seen:
                raise ValueError(f"The same saveable will be restored with two names: {name}")
            seen.add(id(var))
    else:
        named = {}
        for var in var_list:
            if not isinstance(var, Variable):
                raise TypeError(f"Saver: var_list must hold Variables; got {var!r}")
            name = var.op.name
            if name in named and named[name] is not var:
                raise ValueError(f"At least two variables have the same name: {name}")
            named[name] = var
    for name, var in named.items():
        if not isinstance(var, Variable):
            raise TypeError(f"Saver: variable {name!r} is not a Variable: {var!r}")
    return named


def _read(save_path: str) -> dict[str, np.ndarray]:
    return read_checkpoint(save_path)


def _checked(value: np.ndarray, name: str, variable: Variable, save_path: str) -> np.ndarray:
    shape = variable.shape
    if shape is not None and (
        len(shape) != value.ndim
        or any(d is not None and d != s for d, s in zip(shape, value.shape, strict=True))
    ):
        raise InvalidArgumentError(
            f"tensor_name = {name}; shape in shape_and_slice spec {list(shape)} does not match "
            f"the shape stored in checkpoint {save_path}: {list(value.shape)}",
            op=variable.op.name,
            variable=name,
        )
    return value.astype(variable.dtype.numpy, copy=False)
