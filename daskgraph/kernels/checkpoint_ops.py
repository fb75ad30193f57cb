"""Checkpoint kernels: ``RestoreV2`` reads one saved tensor by name when its op runs.

The kernel of :mod:`daskgraph.ops.checkpoint_ops`'s op, ``kernel(xp, **attrs)``: it reads a
checkpoint (TensorFlow's V2 format or daskgraph's older ``.npz``:
:mod:`daskgraph.kernels.checkpoint_files`) on the worker that runs it. A missing file or key
raises :class:`~daskgraph.errors.NotFoundError`, a saved dtype other than the one asked
:class:`~daskgraph.errors.InvalidArgumentError`, in TensorFlow's words.

>>> import os, tempfile
>>> from daskgraph.kernels.checkpoint_files import write_checkpoint
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> write_checkpoint(prefix, {"w": np.array([1.5, 2.5], np.float32)})
>>> _restore_kernel(np, prefix=prefix, tensor_name="w", dtype="<f4").tolist()
[1.5, 2.5]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from daskgraph.errors import InvalidArgumentError
from daskgraph.framework import dtypes
from daskgraph.kernels.checkpoint_files import read_checkpoint

__all__ = ["tf_dtype_name"]

#: TensorFlow's names of dtypes in messages (``DT_FLOAT`` without its ``DT_``, lower case)
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def tf_dtype_name(dtype: Any) -> str:
    """TensorFlow's short name of a dtype, as its messages print it (``float``, ``int32``).

    Dtypes a checkpoint holds that daskgraph's tensors do not (``bfloat16``, complex,
    unsigned 32 and 64 bits) are named too, as TensorFlow names them.

    >>> tf_dtype_name(np.float32), tf_dtype_name("int64"), tf_dtype_name(np.float64)
    ('float', 'int64', 'double')
    >>> tf_dtype_name("bfloat16"), tf_dtype_name(np.complex64)
    ('bfloat16', 'complex64')
    """
    if isinstance(dtype, dtypes.DType):
        name = dtype.name
    else:
        try:
            name = dtypes.as_dtype(np.dtype(dtype)).name
        except TypeError:  # (one daskgraph's tensors do not hold)
            name = np.dtype(dtype).name
    return _TF_NAMES.get(name, name)


def _restore_kernel(xp, *, prefix, tensor_name, dtype):
    value = read_checkpoint(prefix, [tensor_name])[tensor_name]
    if value.dtype != np.dtype(dtype):
        raise InvalidArgumentError(
            f"tensor_name = {tensor_name}; expected dtype {tf_dtype_name(dtype)} does not equal "
            f"original dtype {tf_dtype_name(value.dtype)}",
            op=None,
        )
    return value if xp is np else xp.asarray(value)
