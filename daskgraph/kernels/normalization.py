"""Normalization kernels: ``l2_normalize``, moments and batch normalization.

The kernels of :mod:`daskgraph.ops.normalization`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


# -- kernels --------------------------------------------------------------------------------------
def _window_sum(xp, x, *, depth_radius):
    """The sum of each channel's neighbours ``d - r .. d + r`` along the last axis."""
    depth = x.shape[-1]
    out = x.copy()
    for offset in range(1, min(depth_radius, depth - 1) + 1):
        out[..., offset:] += x[..., :-offset]
        out[..., :-offset] += x[..., offset:]
    return out


def _lrn(xp, x, *, depth_radius, bias, alpha, beta):
    scale = bias + alpha * _window_sum(xp, x * x, depth_radius=depth_radius)
    return (x * scale ** (-beta)).astype(x.dtype)
