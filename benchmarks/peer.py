"""Peers timed in a process of their own, as their users run them.

A user of TensorFlow or of plain NumPy runs them in a process with no Dask cluster in it: no
scheduler or worker threads waking for heartbeats, no daskgraph objects for the garbage
collector to walk. So each peer of the suite runs in a worker process of its own
(``python -m benchmarks.peer tensorflow`` or ``numpy``), started once per suite run and kept
alive, and the benchmark process sends it commands over a pipe (pickled tuples):

* ``build``: call a *builder*, ``"module:function"`` of this package, as ``function(lib,
  **params)`` (``lib`` is ``tensorflow`` in graph mode, or ``numpy``); it returns a *model*,
  an object with a ``step()`` method (one call as a user's loop makes it) and optionally
  ``close()`` and other methods; the peer keeps it under a handle;
* ``time``: call ``model.step()`` ``calls`` times back to back (and on, until ``seconds`` have
  passed) and return every call's time (``time.perf_counter`` around the call, nothing else
  between calls) and the last result;
* ``call``: any other method of a model (losses for a check, a traced run);
* ``close``: close a model.

The peer imports only NumPy, its library and the builder's module (no daskgraph): a builder's
module must not import daskgraph at its top. :class:`SessionModel` is the model of a
TensorFlow 1 session running one fetch, written against the ``tf.compat.v1`` API so that the
benchmark process uses it for daskgraph's sessions too (``daskgraph.compat.v1``).
"""

from __future__ import annotations

import importlib
import os
import pathlib
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

from benchmarks.common import TF_MISSING, Timed, Way

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIBRARIES = ("tensorflow", "numpy")
START_TIMEOUT = 300.0


class PeerError(RuntimeError):
    """A peer process failed (its traceback, or its stderr, is in the message)."""


class Peer:
    """The benchmark process's end of a peer process running ``lib`` (started at once).

    ``missing`` is why the library cannot run there ("" when it can: TensorFlow is an optional
    peer), ``version`` its version.
    """

    def __init__(self, lib: str) -> None:
        if lib not in LIBRARIES:
            raise ValueError(f"unknown peer library {lib!r}; one of {LIBRARIES}")
        self.lib = lib
        self._stderr = tempfile.TemporaryFile()
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.peer", lib],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ROOT,
            env=env,
        )
        ready = self._reply()
        self.version: str = ready["version"]
        self.missing: str = ready["missing"]
        self.pid = self._proc.pid

    def __enter__(self) -> Peer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, command: str, **kwargs: Any) -> Any:
        """Send one command and return its answer (raises :class:`PeerError` on failure)."""
        if self._proc.poll() is not None:
            raise PeerError(f"the {self.lib} peer has exited:\n{self._tail()}")
        pickle.dump((command, kwargs), self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self._proc.stdin.flush()
        return self._reply()

    def build(self, builder: str, **params: Any) -> int:
        """A model built by ``builder`` (``"module:function"``) in the peer: its handle."""
        return self.request("build", builder=builder, params=params)

    def time(self, handle: int, calls: int, seconds: float = 0.0) -> tuple[list[float], Any]:
        """(seconds of each of ``calls`` back-to-back ``step()`` calls, and more until
        ``seconds`` have passed since the first; the last result)."""
        return self.request("time", handle=handle, calls=calls, seconds=seconds)

    def call(self, handle: int, method: str, *args: Any) -> Any:
        return self.request("call", handle=handle, method=method, args=args)

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.request("quit")
            except (PeerError, OSError, EOFError):
                pass
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()

    def _reply(self) -> Any:
        try:
            ok, value = pickle.load(self._proc.stdout)
        except (EOFError, pickle.UnpicklingError) as exc:
            raise PeerError(f"the {self.lib} peer died ({exc!r}):\n{self._tail()}") from None
        if not ok:
            raise PeerError(f"the {self.lib} peer failed:\n{value}")
        return value

    def _tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-3000:]


def peer_way(
    way: Way,
    peer: Peer | None,
    handle: int | None,
    calls: int,
    warmup: int,
    warmup_seconds: float = 0.0,
) -> None:
    """Make ``way`` time ``calls`` calls of a peer's model a repeat (median per call), after
    ``warmup`` untimed calls (and more, back to back, until ``warmup_seconds`` have passed);
    nothing where the peer is missing (``way.unavailable`` says)."""
    if peer is None or handle is None:
        return

    def timed(count: int, seconds: float = 0.0) -> Callable[[], Timed]:
        def run() -> Timed:
            times, value = peer.time(handle, count, seconds)
            return Timed(statistics.median(times), value)

        return run

    way.fn = timed(calls)
    way.warmup = timed(max(1, warmup), warmup_seconds)


def numpy_and_tf_ways(peers: Peers, module: str, calls: int, warmup: int) -> tuple[Way, Way]:
    """The ways of the NumPy peer (``<module>:numpy_peer``) and TensorFlow's
    (``<module>:tf_model``, unavailable where TensorFlow is missing), each in its process."""
    numpy_way = Way("numpy", "NumPy op by op (a process of its own)")
    tf_way = Way("tensorflow", "TensorFlow 1 Session.run (a process of its own)")
    peer_way(numpy_way, peers.numpy, peers.numpy.build(f"{module}:numpy_peer"), calls, warmup)
    tf_way.unavailable = peers.tf_missing
    if peers.tensorflow is not None:
        handle = peers.tensorflow.build(f"{module}:tf_model")
        peer_way(tf_way, peers.tensorflow, handle, calls, warmup)
    return numpy_way, tf_way


class Peers:
    """The suite's peer processes, started on first use and closed by :meth:`close`."""

    def __init__(self, tensorflow: bool = True) -> None:
        self._want_tf = tensorflow
        self._started: dict[str, Peer] = {}

    def get(self, lib: str) -> Peer | None:
        """The running peer of ``lib``; None where it cannot run here (see :meth:`missing`)."""
        if lib == "tensorflow" and not self._want_tf:
            return None
        if lib not in self._started:
            self._started[lib] = Peer(lib)
        peer = self._started[lib]
        return None if peer.missing else peer

    @property
    def tensorflow(self) -> Peer | None:
        return self.get("tensorflow")

    @property
    def numpy(self) -> Peer | None:
        return self.get("numpy")

    @property
    def tf_missing(self) -> str:
        """Why TensorFlow's rows cannot run ("" when they can)."""
        if not self._want_tf:
            return TF_MISSING
        self.get("tensorflow")
        return self._started["tensorflow"].missing

    @property
    def tf_version(self) -> str:
        """TensorFlow's version: as its peer says, or as installed where no peer started."""
        peer = self._started.get("tensorflow")
        if peer is not None:
            return peer.version if not peer.missing else peer.missing
        from importlib import metadata

        for dist in ("tensorflow-cpu", "tensorflow"):
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
        return TF_MISSING

    def close(self) -> None:
        for peer in self._started.values():
            peer.close()
        self._started.clear()


# -- models ---------------------------------------------------------------------------------------
class SessionModel:
    """A ``tf.compat.v1`` session (TensorFlow's or daskgraph's) running ``fetch`` with
    ``feeds`` (one dict, or a list cycled through step by step); ``check`` is a tensor whose
    values :meth:`check_values` returns (a training loss)."""

    def __init__(
        self, v1: Any, session: Any, fetch: Any, feeds: Any = None, check: Any = None
    ) -> None:
        self.v1, self.session, self.fetch, self.check = v1, session, fetch, check
        self.feeds = feeds if isinstance(feeds, list) else [feeds]
        self.steps = 0

    def step(self) -> Any:
        feeds = self.feeds[self.steps % len(self.feeds)]
        self.steps += 1
        return self.session.run(self.fetch, feeds)

    def check_values(self, count: int) -> list[float]:
        """``count`` steps, each also fetching ``check``: its values."""
        values = []
        for _ in range(count):
            feeds = self.feeds[self.steps % len(self.feeds)]
            self.steps += 1
            values.append(float(self.session.run([self.fetch, self.check], feeds)[1]))
        return values

    def trace(self) -> dict[str, Any]:
        """One step with ``RunOptions(trace_level=FULL_TRACE)``: the run's wall-clock start and
        end and its step stats, as plain data (:func:`trace_data`)."""
        metadata = self.v1.RunMetadata()
        options = self.v1.RunOptions(trace_level=self.v1.RunOptions.FULL_TRACE)
        feeds = self.feeds[self.steps % len(self.feeds)]
        self.steps += 1
        start = time.time()
        self.session.run(self.fetch, feeds, options=options, run_metadata=metadata)
        end = time.time()
        return trace_data(metadata.step_stats, start, end)

    def close(self) -> None:
        self.session.close()


def trace_data(step_stats: Any, start: float, end: float) -> dict[str, Any]:
    """A traced run as plain data: ``{"start_us", "end_us", "devices": [{"device", "nodes":
    [[name, kind, start_us, duration_us], ...]}]}`` from TensorFlow's ``StepStats`` protobuf or
    daskgraph's ``StepStats`` (kind: the op type, or TensorFlow's timeline label)."""
    devices = []
    for dev in step_stats.dev_stats:
        nodes = []
        for n in dev.node_stats:
            duration = getattr(n, "all_end_rel_micros", None) or n.op_end_rel_micros
            kind = getattr(n, "op_type", "") or getattr(n, "timeline_label", "")
            nodes.append([n.node_name, kind, int(n.all_start_micros), int(duration)])
        devices.append({"device": dev.device, "nodes": nodes})
    return {"start_us": start * 1e6, "end_us": end * 1e6, "devices": devices}


def numpy_model(fn: Callable[[], Any]) -> Any:
    """A model whose step is ``fn()`` (a NumPy peer)."""
    model = type("NumpyModel", (), {})()
    model.step = fn
    return model


# -- the peer process -----------------------------------------------------------------------------
def _load(lib: str) -> tuple[Any, str, str]:
    """(module, version, why it is missing)."""
    if lib == "numpy":
        import numpy

        return numpy, numpy.__version__, ""
    from benchmarks.common import load_tensorflow

    tf, missing = load_tensorflow()
    return tf, (tf.__version__ if tf is not None else ""), missing


def _serve(lib: str) -> None:
    out = os.fdopen(os.dup(1), "wb")  # the protocol's channel: stray prints go to stderr
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    module, version, missing = _load(lib)

    def reply(ok: bool, value: Any) -> None:
        pickle.dump((ok, value), out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()

    reply(True, {"version": version, "missing": missing})
    models: dict[int, Any] = {}
    while True:
        try:
            command, kwargs = pickle.load(inp)
        except EOFError:
            return
        if command == "quit":
            reply(True, None)
            return
        try:
            reply(True, _handle(module, models, command, kwargs))
        except Exception:
            reply(False, traceback.format_exc())


def _handle(module: Any, models: dict[int, Any], command: str, kw: dict[str, Any]) -> Any:
    if command == "build":
        name, function = kw["builder"].split(":")
        model = getattr(importlib.import_module(name), function)(module, **kw["params"])
        handle = len(models) + 1
        models[handle] = model
        return handle
    model = models[kw["handle"]]
    if command == "time":
        times, value, step = [], None, model.step
        calls, seconds, first = kw["calls"], kw.get("seconds", 0.0), time.perf_counter()
        while len(times) < calls or time.perf_counter() - first < seconds:
            start = time.perf_counter()
            value = step()
            times.append(time.perf_counter() - start)
        return times, value
    if command == "call":
        return getattr(model, kw["method"])(*kw["args"])
    if command == "close":
        close = getattr(models.pop(kw["handle"]), "close", None)
        return close() if close is not None else None
    raise ValueError(f"unknown peer command {command!r}")


if __name__ == "__main__":
    _serve(sys.argv[1])
