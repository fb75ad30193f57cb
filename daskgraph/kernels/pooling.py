"""Average-pooling kernels over ``NHWC`` images and their backward op.

The kernels of :mod:`daskgraph.ops.pooling`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

from daskgraph.kernels.conv import _scatter_windows, _windows, output_size


# -- kernels --------------------------------------------------------------------------------------
def _counts(xp, height, width, ksize, strides, padding, dtype):
    """How many input elements (not padding) each window covers: (1, OH, OW, 1)."""
    ones = xp.ones((1, height, width, 1), dtype=dtype)
    view, _ = _windows(xp, ones, ksize[0], ksize[1], strides[0], strides[1], padding, 0)
    return view.sum(axis=(3, 4))


def _avg_pool(xp, x, *, ksize, strides, padding):
    view, _ = _windows(xp, x, ksize[0], ksize[1], strides[0], strides[1], padding, 0)
    counts = _counts(xp, x.shape[1], x.shape[2], ksize, strides, padding, x.dtype)
    return view.sum(axis=(3, 4)) / counts


def _avg_pool_grad(xp, orig_input_shape, grad, *, ksize, strides, padding):
    shape = [int(s) for s in orig_input_shape.tolist()]
    if shape[0] < 0:  # a batch size left open: the gradient's
        shape[0] = grad.shape[0]
    counts = _counts(xp, shape[1], shape[2], ksize, strides, padding, grad.dtype)
    share = grad / counts
    top = output_size(shape[1], ksize[0], strides[0], padding)[1]
    left = output_size(shape[2], ksize[1], strides[1], padding)[1]

    def tap(i, j):
        return share

    out_hw = grad.shape[1:3]
    return _scatter_windows(xp, tap, shape, out_hw, ksize, strides, (top, left), grad.dtype)
