"""BLAS threads per matrix product (``daskgraph.kernels.blas_threads``): small NumPy products run
with one BLAS thread and put the count back, large ones keep every thread and are never
lowered by a small product of another thread, results are NumPy's bit for bit, and the
process's BLAS stays settable by the user (``threadpoolctl``) afterwards."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import daskgraph as dg
from daskgraph.kernels import blas_threads
from daskgraph.kernels.blas_threads import SMALL_PRODUCT, BlasThreads, product_size


class FakeBlas:
    """A library controller that records every thread count it is given."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.history: list[int] = []

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, threads: int) -> None:
        self.threads = threads
        self.history.append(threads)


def test_small_product_runs_with_one_thread_and_puts_the_count_back():
    blas = FakeBlas(4)
    policy = BlasThreads([blas])
    assert policy.small(lambda: blas.threads) == 1
    assert blas.threads == 4
    assert blas.history == [1, 4]


def test_small_product_leaves_one_thread_alone():
    blas = FakeBlas(1)  # a worker started with OPENBLAS_NUM_THREADS=1, or a user's limit
    assert BlasThreads([blas]).small(lambda: blas.threads) == 1
    assert blas.history == []


def test_count_is_put_back_when_the_product_raises():
    blas = FakeBlas(2)
    policy = BlasThreads([blas])
    with pytest.raises(ValueError, match="mismatch"):
        policy.small(lambda: np.matmul(np.ones((2, 3)), np.ones((2, 3))))
    assert blas.threads == 2
    assert policy.small(lambda: blas.threads) == 1  # the lock was released


def test_small_product_does_not_lower_while_a_large_one_runs():
    blas = FakeBlas(2)
    policy = BlasThreads([blas])
    started, finish = threading.Event(), threading.Event()

    def large() -> int:
        started.set()
        finish.wait(10)
        return blas.threads

    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(policy.large(large)))
    thread.start()
    try:
        assert started.wait(10)
        assert policy.small(lambda: blas.threads) == 2  # unchanged: the large one keeps both
    finally:
        finish.set()
        thread.join(10)
    assert result == [2]
    assert blas.history == []


def test_large_product_waits_for_a_small_one_to_put_the_count_back():
    blas = FakeBlas(2)
    policy = BlasThreads([blas])
    inside, finish = threading.Event(), threading.Event()

    def small() -> None:
        inside.set()
        finish.wait(10)

    seen: list[int] = []
    thread = threading.Thread(target=policy.small, args=(small,))
    large = threading.Thread(target=lambda: seen.append(policy.large(lambda: blas.threads)))
    thread.start()
    try:
        assert inside.wait(10)
        assert blas.threads == 1
        large.start()
        large.join(0.05)
        assert large.is_alive()  # waiting for the small product
        # another small product meanwhile runs as it is, without touching the count
        assert policy.small(lambda: blas.threads) == 1
    finally:
        finish.set()
        thread.join(10)
        large.join(10)
    assert seen == [2]
    assert blas.history == [1, 2]


@pytest.mark.parametrize(
    ("a", "b", "size"),
    [((256, 64), (64, 128), 256 * 64 * 128), ((5, 3, 4), (4,), 12), ((4,), (4, 6), 24)],
)
def test_product_size(a, b, size):
    assert product_size(np.ones(a), np.ones(b)) == size


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "dtype"),
    [
        ((256, 64), (64, 128), np.float32),  # small: one thread
        ((64, 1000), (1000, 64), np.float32),  # small, and OpenBLAS splits it along K
        ((3, 128, 96), (96, 130), np.float64),  # a batch of small products
        ((260, 256), (256, 256), np.float32),  # large: every thread
        ((8, 8), (8, 8), np.float32),  # tiny: never split anyway
        ((30, 20), (20, 30), np.int64),  # NumPy's own loop, not BLAS
    ],
)
def test_matmul_is_numpys_bit_for_bit(a_shape, b_shape, dtype):
    """A small product is NumPy's with one BLAS thread (which may differ in the last bits
    from a split one, for some shapes); a large one is NumPy's as the process has it."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(a_shape) * 10).astype(dtype)
    b = (rng.standard_normal(b_shape) * 10).astype(dtype)
    if product_size(a, b) <= SMALL_PRODUCT:
        with threadpool_limits(1, user_api="blas"):
            expected = np.matmul(a, b)
    else:
        expected = np.matmul(a, b)
    assert np.array_equal(blas_threads.matmul(np, a, b), expected)


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_matmul_op_leaves_the_process_blas_as_it_was():
    before = _blas_threads()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    w = rng.standard_normal((128, 64)).astype(np.float32)
    with dg.Graph().as_default():
        product = dg.matmul(dg.constant(x), dg.constant(w), transpose_b=True)
        with dg.Session() as sess:
            got = sess.run(product)
    # The op ran with one BLAS thread, NumPy's own product here with the process's count: a
    # product split over threads sums in another order, and OpenBLAS gives other last bits on
    # some CPUs (7.6e-6 on a 2-core AMD EPYC). Both are within the error bound of a float32 dot
    # product of length K summed in any order, K * eps * sum(|x| |w|) per element; a wrong
    # product (another operand, a transpose missed) is off by far more.
    bound = x.shape[1] * np.finfo(np.float32).eps * (np.abs(x) @ np.abs(w).T)
    assert np.all(np.abs(got - x @ w.T) <= bound)
    assert _blas_threads() == before


def test_users_limits_still_apply_after_a_product_in_another_thread():
    """threadpoolctl lets one live thread set a process-wide OpenBLAS pool: a worker thread
    that ran a small product must not keep that right from the user's thread."""
    a = np.ones((256, 64), np.float32)
    b = np.ones((64, 128), np.float32)
    done, finish = threading.Event(), threading.Event()

    def worker() -> None:
        blas_threads.matmul(np, a, b)
        done.set()
        finish.wait(10)  # alive while the main thread sets its limit

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert done.wait(10)
        with threadpool_limits(1, user_api="blas"):
            assert set(_blas_threads()) <= {1}
    finally:
        finish.set()
        thread.join(10)


def test_knob_sets_the_library_numpy_calls_from_any_thread():
    from threadpoolctl import ThreadpoolController

    controllers = ThreadpoolController().select(user_api="blas").lib_controllers
    if not controllers:
        pytest.skip("no BLAS library threadpoolctl can control")
    knob = blas_threads._knob(controllers[0])
    before = knob.get()
    seen: list[int] = []

    def elsewhere() -> None:  # a thread threadpoolctl did not let control the pool
        knob.set(1)
        seen.append(knob.get())
        knob.set(before)

    with threadpool_limits(before, user_api="blas"):  # the main thread holds threadpoolctl's
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(10)
    assert seen == [1]
    assert knob.get() == before
