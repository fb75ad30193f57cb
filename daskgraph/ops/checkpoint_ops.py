"""Reading a checkpoint in a run: the ``RestoreV2`` op, one saved tensor by name (its kernel:
:mod:`daskgraph.kernels.checkpoint_ops`).

A checkpoint written by :class:`daskgraph.training.saver.Saver` (TensorFlow's V2 format, or
daskgraph's older ``<prefix>.npz``: :mod:`daskgraph.kernels.checkpoint_files`) holds each
variable's value under its checkpoint name. ``restore_v2(prefix, name, dtype)``
is an op (CPU only, as TensorFlow's) that reads one of them each time it runs, so that an
initializer built from it (``tf.train.init_from_checkpoint``) loads the checkpoint when the
initializer runs, not when the graph is built. A missing file or key raises
:class:`~daskgraph.errors.NotFoundError`, a saved dtype other than ``dtype``
:class:`~daskgraph.errors.InvalidArgumentError`, in TensorFlow's words.

>>> import os, tempfile
>>> import numpy as np
>>> import daskgraph as dg
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> from daskgraph.kernels.checkpoint_files import write_checkpoint
>>> write_checkpoint(prefix, {"w": np.array([1.5, 2.5], np.float32)})
>>> with dg.Graph().as_default():
...     value = restore_v2(prefix, "w", dg.float32)
...     with dg.Session() as sess:
...         sess.run(value).tolist(), value.device
([1.5, 2.5], '/device:CPU:0')
"""

from __future__ import annotations

from typing import Any

from daskgraph.framework import dtypes, scopes
from daskgraph.framework.gradient_registry import no_gradient
from daskgraph.framework.graph import Tensor, get_default_graph
from daskgraph.framework.op_registry import register
from daskgraph.kernels.checkpoint_files import NPZ_SUFFIX
from daskgraph.kernels.checkpoint_ops import _restore_kernel, tf_dtype_name

__all__ = ["CHECKPOINT_SUFFIX", "checkpoint_data_path", "restore_v2", "tf_dtype_name"]

#: the suffix of the data file of daskgraph's older checkpoints: ``<prefix>.npz``
CHECKPOINT_SUFFIX = NPZ_SUFFIX


def checkpoint_data_path(prefix: str) -> str:
    """The data file of the checkpoint ``prefix`` (``dir/model-7`` -> ``dir/model-7.npz``).

    >>> checkpoint_data_path("dir/model-7"), checkpoint_data_path("dir/model-7.npz")
    ('dir/model-7.npz', 'dir/model-7.npz')
    """
    return prefix if prefix.endswith(CHECKPOINT_SUFFIX) else prefix + CHECKPOINT_SUFFIX


register("RestoreV2", _restore_kernel, cpu=dtypes.ALL - {dtypes.string}, gpu=None)
no_gradient("RestoreV2")


def restore_v2(
    prefix: str, tensor_name: str, dtype: Any, shape: Any = None, name: str = "RestoreV2"
) -> Tensor:
    """The tensor ``tensor_name`` of the checkpoint ``prefix``, read each time the op runs, on
    the CPU of the device in force (TensorFlow's ``RestoreV2`` for one tensor).

    Parameters
    ----------
    prefix
        The checkpoint (``dir/model-7``), as :meth:`daskgraph.training.saver.Saver.save` returns it.
    tensor_name
        The name it was saved under (a variable's ``op.name`` by default).
    dtype
        The dtype expected; another saved dtype fails the run.
    shape
        The static shape of the output (unknown when None).
    """
    dtype = dtypes.as_dtype(dtype)
    if dtype == dtypes.string:
        raise TypeError("restore_v2: string tensors are not saved in daskgraph's checkpoints")
    attrs = {"prefix": str(prefix), "tensor_name": str(tensor_name), "dtype": dtype.numpy.str}
    shape = None if shape is None else tuple(shape)
    with scopes.device("/device:CPU:0"):
        op = get_default_graph().create_op(
            "RestoreV2", [], dtype=dtype, shape=shape, attrs=attrs, name=name
        )
    return op.outputs[0]
