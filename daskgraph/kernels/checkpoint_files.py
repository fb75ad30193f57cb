"""The files of a checkpoint: TensorFlow's V2 format, and daskgraph's older ``.npz`` files.

Its one job is to say which files a checkpoint prefix (``dir/model-7``) is and to read and
write them. New checkpoints are TensorFlow's V2 tensor bundles (``<prefix>.index`` and
``<prefix>.data-00000-of-00001``, :mod:`daskgraph.kernels.tensor_bundle`), so that TensorFlow
restores them and daskgraph restores TensorFlow's; a prefix whose index is not there but
whose ``<prefix>.npz`` is (written by daskgraph before) is read from that.

>>> import os, tempfile
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> write_checkpoint(prefix, {"w": np.ones(2, np.float32)})
>>> [os.path.basename(p) for p in checkpoint_files(prefix)]
['model.index', 'model.data-00000-of-00001']
>>> read_checkpoint(prefix)["w"].tolist(), checkpoint_shapes(prefix)["w"][0]
([1.0, 1.0], (2,))
"""

from __future__ import annotations

import glob
import os
import zipfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from daskgraph.errors import DataLossError, NotFoundError
from daskgraph.kernels import tensor_bundle

__all__ = [
    "NPZ_SUFFIX",
    "checkpoint_exists",
    "checkpoint_files",
    "checkpoint_shapes",
    "read_checkpoint",
    "write_checkpoint",
]

#: the suffix of the data file of daskgraph's older checkpoints (``<prefix>.npz``)
NPZ_SUFFIX = ".npz"


def _npz(prefix: str) -> str:
    return prefix if prefix.endswith(NPZ_SUFFIX) else prefix + NPZ_SUFFIX


def checkpoint_files(prefix: str) -> list[str]:
    """The files of the checkpoint ``prefix`` as they are on disk: its index and data files
    (TensorFlow's format: one per shard), or its ``.npz`` file; empty when there is none."""
    if tensor_bundle.bundle_exists(prefix):
        try:
            data = tensor_bundle.data_files(prefix)
        except DataLossError:  # (an index too damaged to say: the files named like its shards)
            data = sorted(glob.glob(glob.escape(prefix) + ".data-*-of-*"))
        older = [_npz(prefix)]  # (an older checkpoint at the same prefix, if any)
        files = (prefix + tensor_bundle.INDEX_SUFFIX, *data, *older)
        return [p for p in files if os.path.exists(p)]
    return [_npz(prefix)] if os.path.isfile(_npz(prefix)) else []


def checkpoint_exists(prefix: str) -> bool:
    """Whether a checkpoint was written at ``prefix`` (its index, or its ``.npz`` file)."""
    return bool(checkpoint_files(prefix))


def _not_found(prefix: str) -> NotFoundError:
    return NotFoundError(
        "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for "
        f"{prefix}",
        op=None,
        path=prefix,
    )


def read_checkpoint(prefix: str, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """The tensors of the checkpoint ``prefix`` by name (those of ``names``, all by default);
    NotFoundError when there is no checkpoint, or it does not hold one of ``names``."""
    if tensor_bundle.bundle_exists(prefix):
        return tensor_bundle.read_bundle(prefix, names)
    try:
        with np.load(_npz(prefix), allow_pickle=False) as data:
            wanted = data.files if names is None else list(names)
            for name in wanted:
                if name not in data.files:
                    raise NotFoundError(
                        f"Key {name} not found in checkpoint", op=None, variable=name
                    )
            return {name: data[name] for name in wanted}
    except FileNotFoundError:
        raise _not_found(prefix) from None


def checkpoint_shapes(prefix: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every tensor of the checkpoint, without reading the values."""
    if tensor_bundle.bundle_exists(prefix):
        return tensor_bundle.bundle_shapes(prefix)
    try:
        return _npz_headers(_npz(prefix))
    except FileNotFoundError:
        raise _not_found(prefix) from None


def _npz_headers(path: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Name -> (shape, dtype) of every array of an ``.npz`` file, from the headers only."""
    found = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                continue
            with archive.open(member) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, _, dtype = np.lib.format.read_array_header_2_0(f)
            found[member[: -len(".npy")]] = (tuple(shape), dtype)
    return found


def write_checkpoint(
    prefix: str, arrays: dict[str, Any], opener: Callable[[str], Any] | None = None
) -> None:
    """Write ``arrays`` as the checkpoint ``prefix`` in TensorFlow's V2 format (the data file,
    then the index: a checkpoint is there once its index is); ``opener(path)`` gives each
    file to write (the Saver's atomic files). An older ``.npz`` checkpoint at the same prefix
    is removed once the new one is whole."""
    tensor_bundle.write_bundle(prefix, arrays, opener)
    if os.path.exists(_npz(prefix)):
        os.remove(_npz(prefix))
