"""Two tasks of one cluster, in two OS processes: each evaluates a constant placed on the other.

Run it twice, in two terminals (or let `--spawn` start the second one)::

    python examples/two_servers.py 0 &
    python examples/two_servers.py 1

Task 0 also runs the Dask scheduler, at the address of the first task of the ClusterSpec
(``localhost:2222``); both tasks register their workers (``/job:local/replica:0/task:N/...``)
with it, so each Session sees the devices of both tasks.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from distributed import Event

import daskgraph.compat.v1 as tf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=int, choices=[0, 1])
    parser.add_argument("--ports", default="2222,2223", help="ports of task 0 and task 1")
    parser.add_argument("--spawn", action="store_true", help="start the other task too")
    parser.add_argument("--join", action="store_true", help="serve until interrupted")
    args = parser.parse_args()
    other = 1 - args.task
    peer = None
    if args.spawn:
        peer = subprocess.Popen([sys.executable, __file__, str(other), "--ports", args.ports])

    ports = args.ports.split(",")
    cluster = tf.train.ClusterSpec({"local": [f"localhost:{p}" for p in ports]})
    server = tf.train.Server(cluster, job_name="local", task_index=args.task)
    server.wait_for_cluster(timeout=60)

    with tf.device(f"/job:local/task:{other}"):
        c = tf.constant(f"Hello from server{args.task + 1}, computed on task {other}!")
    with tf.Session(server.target, config=tf.ConfigProto(log_device_placement=True)) as sess:
        print(sess.run(c), flush=True)
        # stay until every task has run: the other task's run needs this task's devices
        done = [Event(f"two-servers-done-{t}", client=sess.client) for t in (0, 1)]
        done[args.task].set()
        done[other].wait(timeout=120)
    if args.join:  # serve until SIGINT/SIGTERM; say so once they stop the server cleanly
        server.join(ready=lambda: print(f"task {args.task} serving", flush=True))
    if peer is not None:
        peer.wait(timeout=120)
    # the task that runs the scheduler stays until the other tasks are done with it
    server.wait_for_others_to_leave(timeout=120)
    server.stop()


if __name__ == "__main__":
    main()
