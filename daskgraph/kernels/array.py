"""Array kernels: constants, identities, reshapes, transposes and casts.

The kernels of :mod:`daskgraph.ops.array`'s ops, each ``kernel(xp, *inputs, **attrs)``.
"""

from __future__ import annotations

import numpy as np

from daskgraph.errors import InvalidArgumentError


# -- kernels ------------------------------------------------------------------------------------
def _const_kernel(xp, *, value):
    return value if xp is np else xp.asarray(value)


def _identity_kernel(xp, x):
    return x


def _reshape_kernel(xp, x, *, shape):
    return xp.reshape(x, shape)


def _shape_from_parts_kernel(xp, *parts, template):
    sizes, given = [], iter(parts)
    for size in template:
        sizes.append(int(xp.asarray(next(given)).reshape(()).tolist()) if size is None else size)
    return xp.asarray(sizes, dtype=xp.int32)


def _reshape_to_kernel(xp, x, shape):
    dims = tuple(int(d) for d in xp.asarray(shape).reshape(-1).tolist())
    known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
    size = int(np.prod(x.shape, dtype=np.int64))
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise InvalidArgumentError(f"reshape: at most one dimension may be -1, got {list(dims)}")
    if -1 not in dims and known != size:
        raise InvalidArgumentError(
            f"Input to reshape is a tensor with {size} values, but the requested shape has {known}"
        )
    if -1 in dims and (known == 0 or size % known):
        raise InvalidArgumentError(
            f"Input to reshape is a tensor with {size} values, but the requested shape requires "
            f"a multiple of {known}"
        )
    return xp.reshape(x, dims)


def _transpose_kernel(xp, x, *, perm):
    return xp.transpose(x, perm)


def _cast_kernel(xp, x, *, dtype):
    return xp.asarray(x).astype(dtype)


def _no_op_kernel(xp):
    return None


def _placeholder_kernel(xp):  # the executor fills placeholders from feeds; never called
    raise AssertionError("placeholder kernels are not executed")
