"""Arguments checked at the door: the reported cases, each a clear error naming its input.

A worker that claims a GPU it cannot drive, run arguments of the wrong type, fetch structures
that are too deep or contain themselves, and device strings of any length.
"""

from __future__ import annotations

import numpy as np
import pytest
from distributed import Client, Scheduler, SpecCluster, Worker

import daskgraph as dg
from daskgraph.errors import DeviceSpecError, InvalidArgumentError
from daskgraph.runtime.client.session import RunMetadata, RunOptions


@pytest.fixture(scope="module")
def gpu_claiming_cluster():
    """A plain Dask cluster: one worker without resources (a CPU device) and one started with
    ``resources={"GPU": 1}`` on this machine, which has no CuPy."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("CuPy is installed here: the GPU-claiming worker can run GPU kernels")
    workers = {
        "plain-cpu": {"cls": Worker, "options": {"nthreads": 1}},
        "plain-gpu": {"cls": Worker, "options": {"nthreads": 1, "resources": {"GPU": 1}}},
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": ":0"}}
    cluster = SpecCluster(workers=workers, scheduler=scheduler)
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(2, timeout=60)
    yield client
    client.close()
    cluster.close()


def test_a_worker_claiming_a_gpu_without_cupy_is_refused_at_placement(tally, gpu_claiming_cluster):
    """Ops pinned to its GPU fail at placement, naming the worker and CuPy, instead of failing
    at run time with ModuleNotFoundError; soft and automatic placement use the CPU worker."""
    client = gpu_claiming_cluster
    value = np.arange(6.0, dtype=np.float32)
    scenario = tally.scenario("GPU resource on a worker without CuPy", 10.0, "either")
    for soft, device, expected in [
        (False, "/gpu:0", None),
        (True, "/gpu:0", value * 2.0),
        (False, None, value * 2.0),
    ]:
        with dg.Graph().as_default() as graph:
            x = dg.placeholder(dg.float32, [6], name="x")
            with dg.device(device):
                y = x * 2.0
        config = dg.SessionConfig(allow_soft_placement=soft)
        with dg.Session(client, graph=graph, config=config) as session, scenario.trial() as t:
            metadata = RunMetadata()
            options = RunOptions(trace_level=RunOptions.FULL_TRACE)
            got = t.run(
                lambda s=session, y=y, x=x, m=metadata, o=options: s.run(y, {x: value}, o, m),
                timeout=30,
                mentions=["plain-gpu", "CuPy"],
            )
            assert expected is not None, "an op pinned to an unusable GPU ran"
            t.check(got, expected)
            t.check(metadata.step_stats.device_of(y.op.name).endswith("CPU:0"), True)
    scenario.verify()
    outcomes = [trial.outcome for trial in scenario.trials[-3:]]
    assert outcomes == ["clear error", "correct", "correct"], [t.detail for t in scenario.trials]


def test_the_placement_error_names_the_unusable_device(gpu_claiming_cluster):
    with dg.Graph().as_default() as graph:
        with dg.device("/gpu:0"):
            y = dg.constant(1.0) * 2.0
        with dg.Session(gpu_claiming_cluster, graph=graph) as session:
            with pytest.raises(InvalidArgumentError) as info:
                session.run(y)
    message = str(info.value)
    assert "/job:localhost/replica:0/task:0/device:GPU:0 is unusable" in message
    assert "GPU=1" in message and "Install CuPy" in message
    assert info.value.available == ["/job:localhost/replica:0/task:0/device:CPU:0"]


@pytest.mark.parametrize("depth", [101, 5000])
def test_deep_fetch_structures_are_refused_not_recursion_errors(dg_session, depth):
    x = dg.constant(1.0, name="x")
    fetches: list = [x]
    for _ in range(depth):
        fetches = [fetches]
    with pytest.raises(ValueError, match="nested more than 100 levels deep"):
        dg_session.run(fetches)


def test_fetch_structures_that_contain_themselves_are_refused(dg_session):
    x = dg.constant(1.0, name="x")
    looped: dict = {"x": x}
    looped["self"] = looped
    with pytest.raises(ValueError, match="contains itself"):
        dg_session.run(looped)
    shared = [x]
    assert dg_session.run([shared, shared]) == [[1.0], [1.0]]  # shared, not a cycle


@pytest.mark.parametrize(
    "kwargs, name",
    [({"options": "fast"}, "options"), ({"run_metadata": object()}, "run_metadata")],
)
def test_run_arguments_of_the_wrong_type_are_refused_by_name(dg_session, kwargs, name):
    x = dg.constant(1.0, name="x")
    with pytest.raises(TypeError, match=f"Session.run: {name} must be None or a Run"):
        dg_session.run(x, **kwargs)
    assert dg_session.run(x) == 1.0  # the session stays usable


def test_run_options_refuse_an_unknown_trace_level():
    with pytest.raises(ValueError, match="trace_level must be one of"):
        RunOptions(trace_level=7)


@pytest.mark.parametrize("spec", ["/gpu:" + "9" * 5000, "/gpu:" + "9" * 20, "/" + "x" * 9000])
def test_device_strings_of_any_length_are_refused_quoting_them(spec):
    with pytest.raises(ValueError) as info:
        with dg.Graph().as_default(), dg.device(spec):
            dg.constant(1.0)
    message = str(info.value)
    assert repr(spec[:40]) in message and isinstance(info.value, DeviceSpecError)
    assert len(message) < 500  # quoted, shortened: not 5000 characters of nines
