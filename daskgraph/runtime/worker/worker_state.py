"""A worker's daskgraph state, owned by a Dask ``WorkerPlugin``: each session's variables and
compiled programs, freed when the session closes.

A :class:`~daskgraph.runtime.client.session.Session` registers a
:class:`~daskgraph.runtime.worker.session_plugin.SessionPlugin` named after it. Dask
runs the plugin's ``setup`` on every worker of the cluster, now and whenever a worker joins or
is restarted by its nanny, and its ``teardown`` on every worker when the session unregisters
it on close (``Client.unregister_worker_plugin``). The state lives in the worker's extensions,
``worker.extensions["daskgraph"]``, as one :class:`WorkerState` holding a
:class:`SessionState` per open session: the session's :class:`VariableStore` per device, the
plans loaded for compiled steps, feeds sent ahead, and programs' compiled forms.

Outside a Dask worker (a program run in-process, in tests and doctests) the same state is kept
in a process-local :class:`WorkerState`.

>>> state = WorkerState()
>>> store = state.session("s1").store("/device:CPU:0")
>>> store.assign("v", 1.0)
>>> state.close_session("s1")
1
>>> state.session_ids()
[]
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
from distributed import get_worker

from daskgraph.errors import FailedPreconditionError, UnavailableError

__all__ = [
    "EXTENSION",
    "SessionState",
    "UpdateLocks",
    "VariableStore",
    "WorkerState",
    "current_state",
    "reset_worker_containers",
    "state_of",
]

#: the key of daskgraph's state in ``worker.extensions``
EXTENSION = "daskgraph"

#: compiled programs a session keeps per worker (the oldest is compiled again if needed)
COMPILED_CAPACITY = 1024


class VariableStore:
    """The values of one session's variables on one device.

    >>> store = VariableStore("/device:CPU:0")
    >>> store.assign("w", np.ones(2))
    >>> store.read("w")
    array([1., 1.])
    >>> store.apply_once(1, "w/Assign", lambda: "applied"), store.apply_once(1, "w/Assign", str)
    ('applied', 'applied')
    """

    def __init__(self, device: str = "", shared: tuple | None = None) -> None:
        self.device = device
        # ``shared``: the values, update locks and resources of a container that sessions
        # share (see :class:`WorkerState`); what each session's runs applied stays its own
        values, locks, resources = shared if shared is not None else _new_container_device()
        self._values: dict[str, Any] = values
        self._resources: dict[Any, Any] = resources  # queues, by key (see :meth:`resource`)
        self._lock = threading.Lock()
        self._locks: UpdateLocks = locks
        self._booking = threading.Lock()  # what runs applied (held for a few dict operations)
        self._oldest = -1  # runs older than this are done: what they applied is forgotten
        self._applied: dict[int, set[str]] = {}  # run -> its stateful ops that were applied
        self._results: dict[str, tuple[int, Any]] = {}  # op -> (newest run, latest result)
        self._generators: dict[Any, Any] = {}  # random ops' generators, by op and seeds
        self._op_locks = UpdateLocks()  # of stateful ops without variables, by op name
        self._claims: dict[str, _Claim] = {}  # variables whose buffer an update writes now

    def apply_once(
        self,
        step: int,
        op_name: str,
        apply: Callable[[], Any],
        oldest: int | None = None,
        variables: tuple[str, ...] | None = None,
    ) -> Any:
        """``apply()`` (a stateful op's kernel), unless op ``op_name`` already ran in run
        ``step``: then its latest result (the variable it updated, as TensorFlow's ref output;
        that of a newer run when the op ran again since).

        ``apply()`` runs holding the locks of the ``variables`` it updates (TensorFlow's
        ``use_locking``), taken in sorted order so that two ops updating overlapping sets
        never wait for each other in a circle: runs from several threads lose no update of a
        variable, and updates of different variables go on side by side. An op that updates
        no variable (``variables`` None: a random op, whose generator is its own) holds a
        lock of its own instead; ``()`` takes no lock (an op whose resource locks itself, as
        a queue's enqueue and dequeue do: see
        :func:`~daskgraph.runtime.worker.variable_steps.updated_variables`).

        ``oldest`` is the session's oldest run still under way when run ``step`` started
        (``step`` itself by default): older runs will not be repeated, so what they applied is
        forgotten; what newer ones applied is remembered, so that a run repeated after a lost
        worker applies nothing twice although other threads' runs came since.

        >>> store = VariableStore()
        >>> store.apply_once(5, "a", lambda: "5a"), store.apply_once(6, "b", lambda: "6b", 5)
        ('5a', '6b')
        >>> store.apply_once(5, "a", lambda: "again"), store.apply_once(7, "a", lambda: "7a", 7)
        ('5a', '7a')
        >>> store.apply_once(5, "a", lambda: "run 5 is done: forgotten")
        'run 5 is done: forgotten'
        >>> store.apply_once(8, "w/Assign", lambda: "8w", variables=("w",))
        '8w'
        """
        if variables is None:
            locks = (self._op_locks.variable(op_name),)
        else:
            locks = self._locks.of(variables)
        for lock in locks:
            lock.acquire()
        try:
            with self._booking:
                self._forget_before(step if oldest is None else min(oldest, step))
                if op_name in self._applied.get(step, ()):
                    return self._results[op_name][1]
            result = apply()
            with self._booking:
                if step >= self._oldest:
                    self._applied.setdefault(step, set()).add(op_name)
                    newest = max(step, self._results.get(op_name, (step, None))[0])
                    self._results[op_name] = (newest, result)
            return result
        finally:
            for lock in reversed(locks):
                lock.release()

    def _forget_before(self, oldest: int) -> None:
        """Forget what runs older than ``oldest`` applied (called under ``_booking``)."""
        if oldest <= self._oldest:
            return
        self._oldest = oldest
        for step in [s for s in self._applied if s < oldest]:
            for op_name in self._applied.pop(step):
                if self._results.get(op_name, (oldest,))[0] < oldest:
                    del self._results[op_name]

    def random_generator(self, key: Any, make: Callable[[], Any]) -> Any:
        """The generator of a random op (``key``: its name and seeds), made by ``make()`` on
        first use and kept for the session's later runs, which draw on from where the last
        one stopped (TensorFlow keeps one per op kernel).

        >>> store = VariableStore()
        >>> store.random_generator("r", list) is store.random_generator("r", list)
        True
        """
        with self._lock:
            generator = self._generators.get(key)
            if generator is None:
                generator = self._generators[key] = make()
        return generator

    def resource(self, key: Any, make: Callable[[], Any]) -> Any:
        """The resource ``key`` (a queue), made by ``make()`` on first use; kept in the
        container with the variables, so that sessions sharing them share it too.

        >>> store = VariableStore()
        >>> store.resource("q", list) is store.resource("q", list)
        True
        """
        with self._lock:
            found = self._resources.get(key)
            if found is None:
                found = self._resources[key] = make()
        return found

    def variable_lock(self, name: str) -> threading.RLock:
        """The lock an update of variable ``name`` holds while it applies (see
        :meth:`apply_once`); shared by the sessions that share the variable.

        >>> store = VariableStore()
        >>> store.variable_lock("w") is store.variable_lock("w")
        True
        """
        return self._locks.variable(name)

    def read(self, name: str) -> Any:
        """The value of variable ``name``; FailedPreconditionError if it was never assigned.
        While an update writes the variable's buffer in place (:meth:`claim`), a read from
        another thread waits for it to end."""
        try:
            value = self._values[name]
        except KeyError:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized value {name} (variable {name!r} on "
                f"{self.device or 'its device'}). Run its initializer first, e.g. "
                "session.run(global_variables_initializer()).",
                op=name,
                variable=name,
            ) from None
        if type(value) is _Claim:
            return self._after_claim(name, value)
        return value

    def _after_claim(self, name: str, claim: _Claim) -> Any:
        if claim.owner == threading.get_ident():
            return claim.value
        with claim.done:  # (released when the update ends)
            pass
        return self.read(name)

    def assign(self, name: str, value: Any) -> None:
        """Store ``value``. NumPy values are kept as read-only views, so that no caller (a
        fetch on an in-process worker, say) can change a variable behind the store's back."""
        if isinstance(value, np.ndarray) and value.flags.writeable:
            value = value.view()
            value.flags.writeable = False
        with self._lock:
            self._values[name] = value

    def claim(self, name: str) -> np.ndarray | None:
        """A writeable array over the buffer of variable ``name``, for an update to write its
        new value in place, where nothing but the store holds the buffer; else None.

        The store's value must be its read-only view of a C-contiguous array (of the same
        dtype and size) that owns its memory and is writeable, and neither the view nor that
        array may be referenced by anything else (CPython's reference counts): not by a fetch,
        a read a later op still holds, another variable, a value being sent, a NumPy view
        of the buffer, a feed or a constant the variable was assigned from. Until
        :meth:`release`, reads of the variable from other threads wait. The caller holds the
        variable's update lock (:meth:`apply_once`).

        >>> store = VariableStore()
        >>> store.assign("w", np.zeros(2))
        >>> buffer = store.claim("w")
        >>> buffer[:] = 1.0
        >>> store.release("w"); store.read("w")
        array([1., 1.])
        >>> fetched = store.read("w")  # held by someone: not claimed
        >>> store.claim("w") is None
        True
        """
        with self._lock:
            held = self._values.get(name)
            if type(held) is not np.ndarray or held.flags.writeable:
                return None
            claim = self._values[name] = _Claim(held)
            del held
        buffer = _sole_buffer(claim) if _refs(claim) == _SOLE else None
        if buffer is None:
            self._put_back(name, claim)
            return None
        self._claims[name] = claim
        return buffer

    def release(self, name: str) -> None:
        """End the in-place update of variable ``name`` (:meth:`claim`): its value, updated,
        is readable again."""
        self._put_back(name, self._claims.pop(name))

    def _put_back(self, name: str, claim: _Claim) -> None:
        with self._lock:
            if self._values.get(name) is claim:  # (unless assigned meanwhile)
                self._values[name] = claim.value
        claim.done.release()

    def peek(self, name: str) -> Any:
        """The value of variable ``name``, or None when it holds none."""
        value = self._values.get(name)
        return value.value if type(value) is _Claim else value

    def names(self) -> list[str]:
        """The names of the variables that hold a value."""
        return sorted(self._values)

    def __len__(self) -> int:
        return len(self._values)


class _Claim:
    """A variable's entry in the store while an update writes its buffer in place: the
    value, the updating thread, and a lock held until the update ends."""

    __slots__ = ("done", "owner", "value")

    def __init__(self, value: np.ndarray) -> None:
        self.value = value
        self.owner = threading.get_ident()
        self.done = threading.Lock()
        self.done.acquire()


def _refs(claim: _Claim) -> tuple[int, int]:
    """The reference counts of a claimed value and of its base array, as seen from here."""
    value = claim.value
    return sys.getrefcount(value), sys.getrefcount(value.base)


#: the counts :func:`_refs` sees where the claim alone holds the value, and the value alone
#: its base (measured, not assumed: they depend on the interpreter)
_SOLE = _refs(_Claim(np.empty(1).view()))


def _sole_buffer(claim: _Claim) -> np.ndarray | None:
    """The claimed value's base as an array of its shape, where the base owns its memory, is
    writeable and C-contiguous and is all of the value; else None."""
    value, base = claim.value, claim.value.base
    if (
        type(base) is not np.ndarray
        or not base.flags.owndata
        or not base.flags.writeable
        or not base.flags.c_contiguous
        or not value.flags.c_contiguous
        or base.dtype != value.dtype
        or base.size != value.size
    ):
        return None
    return base if base.shape == value.shape else base.reshape(value.shape)


class UpdateLocks:
    """The locks of one device's variables in a container, one per variable, made on first
    use (sessions that share the variables share them); a store's stateful ops without
    variables keep theirs in one too, by op name.

    >>> locks = UpdateLocks()
    >>> [lock is locks.variable(n) for lock, n in zip(locks.of(("b", "a")), "ab")]
    [True, True]
    >>> locks.of(())
    ()
    """

    def __init__(self) -> None:
        self._variables: dict[str, threading.RLock] = {}
        self._making = threading.Lock()

    def variable(self, name: str) -> threading.RLock:
        """The lock of variable ``name``."""
        lock = self._variables.get(name)
        if lock is None:
            with self._making:
                lock = self._variables.setdefault(name, threading.RLock())
        return lock

    def of(self, variables: tuple[str, ...]) -> tuple[threading.RLock, ...]:
        """The locks an update of ``variables`` takes, in the order to take them (sorted by
        name)."""
        if len(variables) == 1:
            return (self.variable(variables[0]),)
        return tuple(self.variable(name) for name in sorted(set(variables)))


def _new_container_device() -> tuple[dict, UpdateLocks, dict]:
    """What a container keeps for one device: variables' values, their update locks, and
    resources (queues)."""
    return {}, UpdateLocks(), {}


class SessionState:
    """What one session keeps on one worker: variables per device, and programs."""

    def __init__(self, container: dict[str, tuple] | None = None) -> None:
        self.stores: dict[str, VariableStore] = {}
        #: the shared container of variables (device -> values and update lock), or None for
        #: the session's own
        self.container = container
        #: compiled steps' plans by token: (WorkerStep, peers' addresses by worker name)
        #: (:mod:`daskgraph.runtime.worker.step_service`)
        self.steps: dict[str, Any] = {}
        #: large feed values sent ahead for the runs' partitions, by token (see
        #: :class:`daskgraph.runtime.program.StagedFeed`); a partition takes its own
        self.staged: dict[str, Any] = {}
        #: compiled forms by ``id(program)``: (program, array module name, steps)
        self.compiled: OrderedDict[int, tuple[Any, str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def store(self, device: str) -> VariableStore:
        """The variable store of ``device`` (made on first use)."""
        store = self.stores.get(device)
        if store is None:
            with self._lock:
                shared = None
                if self.container is not None:
                    shared = self.container.setdefault(device, _new_container_device())
                store = self.stores.setdefault(device, VariableStore(device, shared))
        return store

    def compiled_form(self, program: Any, backend: str, compile: Callable[[], Any]) -> Any:
        """``compile()`` once per program object and array module; the latest
        :data:`COMPILED_CAPACITY` are kept."""
        key = id(program)
        hit = self.compiled.get(key)
        if hit is not None and hit[0] is program and hit[1] == backend:
            return hit[2]
        steps = compile()
        with self._lock:
            self.compiled[key] = (program, backend, steps)
            while len(self.compiled) > COMPILED_CAPACITY:
                self.compiled.popitem(last=False)
        return steps

    def take_staged(self, token: str) -> Any:
        """The feed value staged under ``token``, removed from the state.

        >>> state = SessionState()
        >>> state.staged["t"] = 1.5
        >>> state.take_staged("t"), state.staged
        (1.5, {})
        """
        try:
            return self.staged.pop(token)
        except KeyError:
            raise UnavailableError(
                f"A feed sent ahead to this worker for a run (token {token!r}) is not here: "
                "the worker was restarted after it was sent. Run again.",
                token=token,
            ) from None

    def variable_count(self) -> int:
        """How many variables the session holds here, over all its devices."""
        return sum(len(s) for s in self.stores.values())


class WorkerState:
    """daskgraph's state on one worker: a :class:`SessionState` per open session, and the
    containers of variables that sessions share.

    A session whose id ends in ``~NAME`` keeps its variables in the container ``NAME``, where
    every such session of the cluster finds them, and they outlive the sessions, as the
    variables of a TensorFlow server do (its sessions share them unless
    ``isolate_session_state``); :meth:`reset_containers` drops them (``Session.reset``).

    >>> state = WorkerState()
    >>> state.session("a~default").store("/device:CPU:0").assign("v", 1.0)
    >>> state.close_session("a~default")
    1
    >>> state.session("b~default").store("/device:CPU:0").read("v")
    1.0
    >>> state.reset_containers(), state.session("c~default").store("/device:CPU:0").names()
    (['default'], [])

    ``threads`` is the worker's thread count (``nthreads``), which its partitions' kernels
    may use (:mod:`daskgraph.kernels.kernel_threads`); None outside a worker.
    """

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads
        self._sessions: dict[str, SessionState] = {}
        self._containers: dict[str, dict[str, tuple]] = {}
        self._lock = threading.Lock()

    def session(self, session_id: str) -> SessionState:
        """The state of ``session_id`` (made on first use: a task may arrive before setup)."""
        state = self._sessions.get(session_id)
        if state is None:
            with self._lock:
                state = self._sessions.get(session_id)
                if state is None:
                    name = _container_of(session_id)
                    container = self._containers.setdefault(name, {}) if name else None
                    state = self._sessions[session_id] = SessionState(container)
        return state

    def reset_containers(self, names: list[str] | None = None) -> list[str]:
        """Drop the shared containers ``names`` (all by default); returns those dropped."""
        with self._lock:
            dropped = [n for n in list(self._containers) if names is None or n in names]
            for name in dropped:
                self._containers[name].clear()
                del self._containers[name]
            for session_id, state in self._sessions.items():  # open ones start again empty
                name = _container_of(session_id)
                if name in dropped:
                    state.stores.clear()
                    state.container = self._containers.setdefault(name, {})
        return dropped

    def close_session(self, session_id: str) -> int:
        """Free everything of ``session_id``; returns how many variables were dropped."""
        with self._lock:
            state = self._sessions.pop(session_id, None)
        return state.variable_count() if state is not None else 0

    def session_ids(self) -> list[str]:
        """The sessions that hold state here."""
        return sorted(self._sessions)


def _container_of(session_id: str) -> str:
    """The shared container a session keeps its variables in (``"~NAME"`` ending its id), or
    ``""`` for its own."""
    return session_id.partition("~")[2]


_local_state = WorkerState()


def reset_worker_containers(names: list[str] | None = None, dask_worker: Any = None) -> list[str]:
    """Drop the shared containers ``names`` (all by default) of this worker (run on every
    worker by ``Session.reset``), or of the process outside Dask."""
    state = state_of(dask_worker) if dask_worker is not None else _local_state
    return state.reset_containers(names)


def state_of(worker: Any) -> WorkerState:
    """The daskgraph state of a Dask ``worker`` (made on first use, with the worker's thread
    count).

    >>> from types import SimpleNamespace
    >>> worker = SimpleNamespace(extensions={}, state=SimpleNamespace(nthreads=3))
    >>> state_of(worker).threads
    3
    """
    state = worker.extensions.get(EXTENSION)
    if state is None:
        threads = getattr(getattr(worker, "state", None), "nthreads", None)
        state = worker.extensions.setdefault(EXTENSION, WorkerState(threads))
    return state


def current_state() -> WorkerState:
    """The state of the worker running this code, or the process-local one outside Dask."""
    try:
        worker = get_worker()
    except ValueError:
        return _local_state
    return state_of(worker)
