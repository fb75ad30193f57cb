"""The slot optimizers' updates in place (daskgraph.kernels.slot_updates): the variable and its
slots rewritten in one pass where the store alone holds their buffers, with the bits of the
unfused NumPy ops (``daskgraph.fusion: false``), and never under anyone who holds them."""

from __future__ import annotations

import pickle
import threading

import dask
import numpy as np
import pytest

import daskgraph.compat.v1 as tf
from daskgraph.kernels import slot_updates, training
from daskgraph.kernels.fused import PARALLEL_ELEMENTS, SMALL_ELEMENTS
from daskgraph.kernels.kernel_threads import threads_for
from daskgraph.ops.state import VariableRef
from daskgraph.runtime.worker.worker_state import VariableStore

N = SMALL_ELEMENTS  # large enough for NumPy's in-place ufuncs before the loop is compiled
STEPS = 4


def _grad(dtype, step, n=N):
    g = np.random.default_rng(step).standard_normal(n).astype(dtype)
    g[:4] = [0.0, -0.0, 1e-30, -1e-5]
    return g


#: update kind -> (its slots, a call of its kernel for step t: (store, refs, grad, t, scalar type))
CASES = {
    "gradient_descent": (
        (),
        lambda st, r, g, t, s: training.apply_gradient_descent(np, st, *r, s(0.1), g),
    ),
    "momentum": (
        ("accum",),
        lambda st, r, g, t, s: training.apply_momentum(
            np, st, *r, s(0.01), g, s(0.9), use_nesterov=False
        ),
    ),
    "momentum_nesterov": (
        ("accum",),
        lambda st, r, g, t, s: training.apply_momentum(
            np, st, *r, s(0.01), g, s(0.9), use_nesterov=True
        ),
    ),
    "adam": (
        ("m", "v"),
        lambda st, r, g, t, s: training.apply_adam(
            np, st, *r, s(0.9**t), s(0.999**t), s(1e-3), s(0.9), s(0.999), s(1e-8), g,
            use_nesterov=False,
        ),
    ),
    "adam_nesterov": (
        ("m", "v"),
        lambda st, r, g, t, s: training.apply_adam(
            np, st, *r, s(0.9**t), s(0.999**t), s(1e-3), s(0.9), s(0.999), s(1e-8), g,
            use_nesterov=True,
        ),
    ),
    "adagrad": (
        ("accum",),
        lambda st, r, g, t, s: training.apply_adagrad(np, st, *r, s(0.1), g),
    ),
    "rms_prop": (
        ("ms", "mom"),
        lambda st, r, g, t, s: training.apply_rms_prop(
            np, st, *r, s(0.01), s(0.9), s(0.5), s(1e-10), g
        ),
    ),
    "centered_rms_prop": (
        ("mg", "ms", "mom"),
        lambda st, r, g, t, s: training.apply_centered_rms_prop(
            np, st, *r, s(0.01), s(0.9), s(0.5), s(1e-10), g
        ),
    ),
}  # fmt: skip


def _store(names, dtype, n=N):
    store = VariableStore()
    rng = np.random.default_rng(7)
    for name in names:  # slots start positive (accumulators of squares); mg at zero
        value = np.abs(rng.standard_normal(n)).astype(dtype) + dtype(0.1)
        store.assign(name, value * dtype(name != "mg"))
    return store


def _bits(x):
    return np.asarray(x).view(np.uint64 if x.dtype.itemsize == 8 else np.uint32)


def _step(kind, store, dtype, t, fusion, n=N):
    slots, call = CASES[kind]
    refs = [VariableRef(name) for name in ("var", *slots)]
    with dask.config.set({"daskgraph.fusion": fusion}):
        call(store, refs, _grad(dtype, t, n), t, np.dtype(dtype).type)


def _address(store, name):
    return store.read(name).ctypes.data


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", list(CASES))
def test_each_update_runs_in_place_with_the_unfused_bits(kind, dtype):
    names = ("var", *CASES[kind][0])
    fused, unfused = _store(names, dtype), _store(names, dtype)
    addresses = {n: _address(fused, n) for n in names}
    for t in range(1, STEPS + 1):
        if t == 2:  # step 1 ran NumPy's ufuncs in place; the compiled loop from step 2 on
            slot_updates.settle()
            assert slot_updates.compile_now(kind, dtype)
        _step(kind, fused, dtype, t, True)
        _step(kind, unfused, dtype, t, False)
        for name in names:
            np.testing.assert_array_equal(_bits(fused.read(name)), _bits(unfused.read(name)))
            assert _address(fused, name) == addresses[name]  # the same buffer: in place


def test_a_value_someone_holds_is_never_written_and_the_next_update_is_in_place_again():
    store = _store(("var", "m", "v"), np.float32)
    held = store.read("m")  # a fetch, a read a later op holds
    view = store.read("v")[10:]  # a NumPy view of the slot's buffer
    kept = held.copy(), view.copy()
    _step("adam", store, np.float32, 1, True)
    np.testing.assert_array_equal(held, kept[0])  # as they were
    np.testing.assert_array_equal(view, kept[1])
    assert store.read("m") is not held and not np.shares_memory(store.read("v"), view)
    moved = _address(store, "m"), _address(store, "v")
    del held, view
    _step("adam", store, np.float32, 2, True)
    assert (_address(store, "m"), _address(store, "v")) == moved  # now in place


def _assign_and_step(store, make):
    """Assign ``make()`` to ``var`` (held by nothing else but what ``make`` keeps), step
    gradient descent once; the address of the value assigned."""
    store.assign("var", make())
    address = store.read("var").ctypes.data
    _step("gradient_descent", store, np.float32, 1, True)
    return address


def test_a_buffer_the_store_does_not_own_alone_is_never_written():
    ones = np.ones(N, np.float32)
    raw = bytearray(ones.tobytes())  # memory the array does not own (shared memory, a frame)
    ways = (
        lambda: np.frombuffer(raw, np.float32),
        lambda: pickle.loads(pickle.dumps(ones, protocol=5)),  # read-only, over bytes
        lambda: ones,  # the caller's own array (a feed, a constant)
    )
    for make in ways:
        store = VariableStore()
        address = _assign_and_step(store, make)
        assert store.read("var").ctypes.data != address  # a new array
        expected = 1 - np.float32(0.1) * _grad(np.float32, 1)
        np.testing.assert_array_equal(store.read("var"), expected)
        assert store.claim("var") is not None  # the update's own new array is the store's
        store.release("var")
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), np.ones(N, np.float32))
    np.testing.assert_array_equal(ones, np.ones(N, np.float32))


def test_a_read_from_another_thread_waits_for_the_update_in_place():
    store = VariableStore()
    store.assign("var", np.zeros(4))
    buffer = store.claim("var")
    assert buffer is not None
    buffer[:2] = 1.0  # half written
    seen, reading = [], threading.Event()

    def read():
        reading.set()
        seen.append(store.read("var").tolist())

    reader = threading.Thread(target=read)
    reader.start()
    assert reading.wait(30)
    reader.join(0.2)
    assert reader.is_alive() and not seen  # waiting: no torn value
    buffer[2:] = 1.0
    del buffer
    store.release("var")
    reader.join(30)
    assert seen == [[1.0, 1.0, 1.0, 1.0]]


OPTIMIZERS = {
    "adam": lambda: tf.train.AdamOptimizer(1e-3),
    "momentum": lambda: tf.train.MomentumOptimizer(0.01, 0.9),
    "nesterov": lambda: tf.train.MomentumOptimizer(0.01, 0.9, use_nesterov=True),
    "rms_prop": lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5),
    "centered_rms_prop": lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: tf.train.AdagradOptimizer(0.1),
}


def _train(optimizer, dtype, fusion, claims):
    """Every step's (the old value fetched in the run or None, the new value, whether the
    update wrote the variable's buffer in place: ``claims`` collects the store's answers)
    for a variable trained by ``optimizer``, then its value after its initializer ran again.
    Odd steps fetch the variable's old value in the same run."""
    start = np.linspace(-1.0, 1.0, N).astype(dtype)
    out = []
    with tf.Graph().as_default(), dask.config.set({"daskgraph.fusion": fusion}):
        w = tf.Variable(start, name="w")
        target = tf.constant(np.cos(np.arange(N)).astype(dtype))
        loss = tf.reduce_sum((w - target) * (w - target))
        old = tf.identity(w)
        with tf.control_dependencies([old]):
            train = OPTIMIZERS[optimizer]().minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(2 * STEPS):
                claims.clear()
                before = sess.run([old, train])[0] if step % 2 else sess.run(train)
                out.append((before, sess.run(w), claims.get("w")))
            sess.run(w.initializer)
            out.append((None, sess.run(w), None))
    return out


@pytest.fixture
def claims(monkeypatch):
    """What the stores answered to each claim of a variable's buffer, by variable."""
    answers = {}
    claim = VariableStore.claim

    def recorded(store, name):
        buffer = claim(store, name)
        answers[name] = buffer is not None
        return buffer

    monkeypatch.setattr(VariableStore, "claim", recorded)
    return answers


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
def test_training_in_place_gives_the_unfused_bits_and_fetched_values_stay(optimizer, dtype, claims):
    fused, unfused = _train(optimizer, dtype, True, claims), _train(optimizer, dtype, False, {})
    for (old_a, new_a, _), (old_b, new_b, _) in zip(fused, unfused, strict=True):
        assert (old_a is None) == (old_b is None)
        if old_a is not None:
            np.testing.assert_array_equal(_bits(old_a), _bits(old_b))
        np.testing.assert_array_equal(_bits(new_a), _bits(new_b))
    for step in range(1, 2 * STEPS):
        old, _, in_place = fused[step]
        if old is not None:  # the old value, fetched in the run: not overwritten under it
            np.testing.assert_array_equal(old, fused[step - 1][1])
            assert in_place is False
        else:  # no one held it: in place
            assert in_place is True
    np.testing.assert_array_equal(fused[-1][1], np.linspace(-1.0, 1.0, N).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", list(CASES))
def test_a_large_update_runs_in_pieces_on_the_worker_s_threads_with_the_same_bits(
    kind, dtype, monkeypatch
):
    split = []
    run_split = slot_updates.run_split
    monkeypatch.setattr(
        slot_updates, "run_split", lambda *a, **k: split.append(a[3]) or run_split(*a, **k)
    )
    names = ("var", *CASES[kind][0])
    n = PARALLEL_ELEMENTS + 4097
    fused, unfused = _store(names, dtype, n), _store(names, dtype, n)
    slot_updates.compile_now(kind, dtype)
    for t in (1, 2):
        with threads_for(2):
            _step(kind, fused, dtype, t, True, n)
        _step(kind, unfused, dtype, t, False, n)
    assert split == [2, 2]  # on two threads
    for name in names:
        np.testing.assert_array_equal(_bits(fused.read(name)), _bits(unfused.read(name)))
