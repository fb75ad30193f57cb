"""TF1's queues (daskgraph/data/queues.py, daskgraph/data/queue_ops.py), queue runners and input
producers: values, order, blocking between threads, closing and deadlines, as TensorFlow's."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph.data.queues import FIFOQueue, RandomShuffleQueue
from daskgraph.errors import CancelledError, DeadlineExceededError, OutOfRangeError
from daskgraph.runtime.client.session import RunOptions


def test_enqueue_dequeue_in_order_and_dequeue_many():
    with dg.Graph().as_default():
        q = FIFOQueue(10, [dg.float32, dg.int32], shapes=[(), (2,)])
        x = dg.placeholder(dg.float32, [])
        enq = q.enqueue([x, [1, 2]])
        enq_many = q.enqueue_many([[5.0, 6.0, 7.0], [[1, 1], [2, 2], [3, 3]]])
        a, b = q.dequeue()
        many = q.dequeue_many(2)
        size = q.size()
        assert many[1].shape == (2, 2)
        with dg.Session() as sess:
            for value in (1.0, 2.0):
                sess.run(enq, {x: value})
            sess.run(enq_many)
            assert sess.run(size) == 5
            assert sess.run([a, b])[0] == 1.0
            first, second = sess.run(many)
            np.testing.assert_array_equal(first, [2.0, 5.0])
            np.testing.assert_array_equal(second, [[1, 2], [1, 1]])
            assert sess.run(size) == 2


def test_closed_queue_raises_out_of_range_with_tf_message():
    with dg.Graph().as_default():
        q = FIFOQueue(3, dg.float32, shapes=())
        enq, deq, close = q.enqueue(4.0), q.dequeue(), q.close()
        up_to = q.dequeue_up_to(5)
        with dg.Session() as sess:
            sess.run(enq)
            sess.run(enq)
            sess.run(close)
            assert sess.run(q.is_closed())
            with pytest.raises(CancelledError, match="is closed"):
                sess.run(enq)
            np.testing.assert_array_equal(sess.run(up_to), [4.0, 4.0])
            with pytest.raises(
                OutOfRangeError,
                match=r"FIFOQueue '_\d+_fifo_queue' is closed "
                r"and has insufficient elements \(requested 1, current size 0\)",
            ):
                sess.run(deq)


def test_dequeue_waits_for_another_thread():
    with dg.Graph().as_default():
        q = FIFOQueue(2, dg.float32, shapes=())
        enq, deq = q.enqueue(7.0), q.dequeue()
        with dg.Session() as sess:
            enqueuing = threading.Event()

            def later():
                time.sleep(0.2)  # likely after the dequeue began waiting (no verdict on it)
                enqueuing.set()
                sess.run(enq)

            thread = threading.Thread(target=later)
            thread.start()
            assert sess.run(deq) == 7.0
            assert enqueuing.is_set()  # the value came from the other thread's enqueue
            thread.join()


def test_full_queue_enqueue_waits_and_threads_do_not_starve():
    with dg.Graph().as_default():
        q = FIFOQueue(1, dg.int32, shapes=())
        i = dg.placeholder(dg.int32, [])
        enq, deq = q.enqueue(i), q.dequeue()
        with dg.Session() as sess:
            threads = [
                threading.Thread(target=lambda k=k: [sess.run(enq, {i: k}) for _ in range(5)])
                for k in range(3)
            ]
            for t in threads:
                t.start()
            got = sorted(int(sess.run(deq)) for _ in range(15))
            for t in threads:
                t.join()
            assert got == sorted([0, 1, 2] * 5)


def test_operation_timeout_on_empty_queue_is_deadline_exceeded():
    with dg.Graph().as_default():
        q = tf.FIFOQueue(2, [tf.float32], shapes=[()])
        enq, deq = q.enqueue([3.0]), q.dequeue()
        config = tf.ConfigProto(operation_timeout_in_ms=200)
        with tf.Session(config=config) as sess:
            start = time.monotonic()
            with pytest.raises(DeadlineExceededError, match="Timed out waiting for notification"):
                sess.run(deq)
            assert time.monotonic() - start < 60  # the deadline, not a wait for an item
            # the runs that do not wait get room: their speed is no part of the verdict
            roomy = RunOptions(timeout_in_ms=60_000)
            sess.run(enq, options=roomy)  # the timed-out dequeue took nothing
            assert sess.run(deq, options=roomy) == 3.0


def test_random_shuffle_queue_keeps_min_after_dequeue():
    with dg.Graph().as_default():
        q = RandomShuffleQueue(10, 2, dg.int32, shapes=(), seed=1)
        enq = q.enqueue_many([np.arange(6)])
        rest = q.dequeue_up_to(10)
        with dg.Session() as sess:
            sess.run(enq)
            taken = [int(sess.run(q.dequeue())) for _ in range(4)]
            # only the dequeue that must wait gets a deadline: the other runs' speed is no
            # part of the verdict (a deadline on them fails on a loaded machine)
            with pytest.raises(DeadlineExceededError):
                sess.run(q.dequeue(), options=RunOptions(timeout_in_ms=200))  # 2 left
            sess.run(q.close())
            left = sess.run(rest).tolist()
        assert sorted(taken + left) == list(range(6))


def test_queue_runner_and_coordinator_feed_a_training_loop():
    with tf.Graph().as_default():
        data = tf.FIFOQueue(8, [tf.float32], shapes=[()])
        x = tf.random_uniform([4])
        tf.train.add_queue_runner(tf.train.QueueRunner(data, [data.enqueue_many([x])] * 2))
        batch = data.dequeue_many(3)
        w = tf.Variable(0.0)
        step = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean((batch - w) ** 2))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            assert len(threads) == 3  # two enqueuers and the closer
            for _ in range(30):
                sess.run(step)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
            assert 0.3 < sess.run(w) < 0.7  # towards the mean of U(0, 1)
