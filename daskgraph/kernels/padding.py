"""Padding kernels: constant and mirror padding, and their backward op.

The kernels of :mod:`daskgraph.ops.padding`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations


# -- kernels --------------------------------------------------------------------------------------
def _pad_kernel(xp, x, value, *, paddings):
    return xp.pad(x, paddings, mode="constant", constant_values=value)


def _mirror_pad_kernel(xp, x, *, paddings, mode):
    return xp.pad(x, paddings, mode=mode)


def _pad_grad_kernel(xp, grad, *, paddings):
    """The middle of ``grad``: what the padded input contributed."""
    index = tuple(
        slice(before, n - after) for (before, after), n in zip(paddings, grad.shape, strict=True)
    )
    return grad[index]


def _mirror_pad_grad_kernel(xp, grad, *, paddings, mode):
    """Fold the mirrored borders of ``grad`` back onto the elements they copied, axis by axis
    (``REFLECT`` leaves the edge out of the mirror, ``SYMMETRIC`` repeats it)."""
    skip = 1 if mode == "reflect" else 0
    for axis, (before, after) in enumerate(paddings):
        n = grad.shape[axis]
        m = n - before - after

        def at(start, stop, axis=axis):
            return (slice(None),) * axis + (slice(start, stop),)

        middle = grad[at(before, n - after)].copy()
        if before:
            middle[at(skip, skip + before)] += xp.flip(grad[at(0, before)], axis=axis)
        if after:
            middle[at(m - skip - after, m - skip)] += xp.flip(grad[at(n - after, n)], axis=axis)
        grad = middle
    return grad
