"""The bytes compiled steps' messages carry, counted where tensors are packed
(daskgraph.runtime.worker.wire.packed_bytes): host arrays and CuPy arrays apart, so that
``make gpu-check`` can tell what crossed host memory between two GPU workers."""

from __future__ import annotations

import numpy as np

from daskgraph.runtime.worker.wire import PACK_BYTES, pack, packed_bytes, unpack


class FakeCupyArray:
    """A CuPy array as far as packing reads one: its module and its size in bytes."""

    __module__ = "cupy._core.core"

    def __init__(self, nbytes: int) -> None:
        self.nbytes = nbytes


def test_pack_counts_host_and_cuda_bytes_apart_until_reset() -> None:
    packed_bytes(reset=True)
    small = pack({0: np.zeros(4, np.float32), 1: 3.0})  # pickled: host bytes
    big = pack({0: np.zeros(PACK_BYTES, np.uint8)})  # frames: host bytes
    on_gpu = pack((FakeCupyArray(1000), np.zeros(2, np.float64)))  # CUDA serializers
    assert unpack(small)[0].nbytes == 16 and unpack(big)[0].nbytes == PACK_BYTES
    assert unpack(on_gpu)[0].nbytes == 1000
    assert packed_bytes(reset=True) == {"host": 16 + PACK_BYTES + 16, "cuda": 1000}
    assert packed_bytes() == {"host": 0, "cuda": 0}
