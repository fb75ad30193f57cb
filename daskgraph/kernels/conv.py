"""Convolution kernels: 2-D convolution and max pooling over ``NHWC`` images, and backward.

The kernels of :mod:`daskgraph.ops.conv`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


# -- padding and windows --------------------------------------------------------------------------
def output_size(size: int, k: int, stride: int, padding: str) -> tuple[int, int, int]:
    """``(out, pad_before, pad_after)`` along one spatial axis, as TensorFlow computes them.

    >>> output_size(8, 3, 2, "SAME"), output_size(8, 3, 2, "VALID"), output_size(5, 2, 1, "SAME")
    ((4, 0, 1), (3, 0, 0), (5, 0, 1))
    """
    if padding == "VALID":
        return (size - k) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return out, total // 2, total - total // 2


def _windows(xp, x, kh, kw, sh, sw, padding, fill):
    """A view of ``x`` (N, H, W, C) as windows (N, OH, OW, KH, KW, C), after padding with
    ``fill``; also the padding ``(top, left)``."""
    n, h, w, c = x.shape
    oh, top, bottom = output_size(h, kh, sh, padding)
    ow, left, right = output_size(w, kw, sw, padding)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"the {kh}x{kw} window does not fit the {h}x{w} input with VALID padding")
    if top or bottom or left or right:
        x = xp.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    s0, s1, s2, s3 = x.strides
    view = xp.lib.stride_tricks.as_strided(
        x, shape=(n, oh, ow, kh, kw, c), strides=(s0, s1 * sh, s2 * sw, s1, s2, s3)
    )
    return view, (top, left)


def _scatter_windows(xp, tap, shape, out_hw, window, strides, offsets, dtype):
    """The adjoint of :func:`_windows`: ``tap(i, j)``, the values (N, OH, OW, C) that window
    position ``(i, j)`` saw, added back where they came from, in an array of the input's
    ``shape`` (what fell on the padding dropped). One strided add per filter tap."""
    (oh, ow), (kh, kw), (sh, sw), (top, left) = out_hw, window, strides, offsets
    height = max(shape[1] + top, (oh - 1) * sh + kh)
    width = max(shape[2] + left, (ow - 1) * sw + kw)
    out = xp.zeros((shape[0], height, width, shape[3]), dtype=dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, i : i + (oh - 1) * sh + 1 : sh, j : j + (ow - 1) * sw + 1 : sw] += tap(i, j)
    return out[:, top : top + shape[1], left : left + shape[2]]


def _check_channels(x_channels, filter_channels):
    if x_channels != filter_channels:
        raise ValueError(
            f"the input has {x_channels} channels but the filter expects {filter_channels} "
            "(filter shape [height, width, in_channels, out_channels])"
        )


# -- kernels --------------------------------------------------------------------------------------
def _conv2d(xp, x, w, *, strides, padding):
    _check_channels(x.shape[3], w.shape[2])
    view, _ = _windows(xp, x, w.shape[0], w.shape[1], strides[0], strides[1], padding, 0)
    n, oh, ow, kh, kw, c = view.shape
    cols = view.reshape(n * oh * ow, kh * kw * c)  # im2col: the one copy
    return xp.matmul(cols, w.reshape(kh * kw * c, -1)).reshape(n, oh, ow, -1)


def _conv2d_backprop_input(xp, input_sizes, w, grad, *, strides, padding):
    shape = [int(s) for s in input_sizes.tolist()]
    if shape[0] < 0:  # a batch size left open: the gradient's
        shape[0] = grad.shape[0]
    _check_channels(shape[3], w.shape[2])
    kh, kw, c, o = w.shape
    n, oh, ow, _ = grad.shape
    top = output_size(shape[1], kh, strides[0], padding)[1]
    left = output_size(shape[2], kw, strides[1], padding)[1]
    rows = grad.reshape(n * oh * ow, o)

    def tap(i, j):  # one matmul per tap, added at once: no (N, OH, OW, KH, KW, C) temporary
        return xp.matmul(rows, w[i, j].T).reshape(n, oh, ow, c)

    return _scatter_windows(xp, tap, shape, (oh, ow), (kh, kw), strides, (top, left), grad.dtype)


def _conv2d_backprop_filter(xp, x, filter_sizes, grad, *, strides, padding):
    kh, kw = (int(s) for s in filter_sizes.tolist()[:2])
    view, _ = _windows(xp, x, kh, kw, strides[0], strides[1], padding, 0)
    n, oh, ow, _, _, c = view.shape
    cols = view.reshape(n * oh * ow, kh * kw * c)
    out = xp.matmul(cols.T, grad.reshape(n * oh * ow, -1))
    return out.reshape(kh, kw, c, -1)


def _max_pool(xp, x, *, ksize, strides, padding):
    view, _ = _windows(xp, x, ksize[0], ksize[1], strides[0], strides[1], padding, -xp.inf)
    return view.max(axis=(3, 4))


def _max_pool_grad(xp, x, y, grad, *, ksize, strides, padding):
    """Each window's gradient goes to its first element equal to the window's maximum ``y``
    (the forward output), as TensorFlow's CPU kernel routes it to the first maximum."""
    kh, kw = ksize
    view, offsets = _windows(xp, x, kh, kw, strides[0], strides[1], padding, -xp.inf)
    n, oh, ow, _, _, c = view.shape
    free = xp.ones((n, oh, ow, c), dtype=bool)  # windows whose maximum is not found yet
    hits = []
    for i in range(kh):
        for j in range(kw):
            hit = (view[:, :, :, i, j] == y) & free
            free &= ~hit
            hits.append(hit)

    def tap(i, j):
        return grad * hits[i * kw + j]

    return _scatter_windows(xp, tap, x.shape, (oh, ow), (kh, kw), strides, offsets, grad.dtype)
