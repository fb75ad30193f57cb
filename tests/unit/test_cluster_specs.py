"""Unit tests for the embedded cluster's specs (pure data; no cluster is started)."""

from __future__ import annotations

import importlib.util
import os

import dask
import pytest
from distributed import Scheduler, Worker
from distributed.deploy.subprocess import SubprocessWorker

from daskgraph.cluster import local as cluster
from daskgraph.cluster.footprint import scheduler_extensions
from daskgraph.cluster.local import scheduler_spec, worker_options, worker_specs
from daskgraph.cluster.topology import devices_from_workers

LOCAL = "/job:localhost/replica:0/task:0/device:"


@pytest.mark.parametrize("virtual_gpus", [0, 1, 3], ids=["cpu-only", "one-gpu", "three-gpus"])
def test_worker_names_and_resources(virtual_gpus: int) -> None:
    specs = worker_specs(virtual_gpus=virtual_gpus, cpu_threads=4)
    expected = [LOCAL + "CPU:0"] + [f"{LOCAL}GPU:{i}" for i in range(virtual_gpus)]
    assert list(specs) == expected
    for name, spec in specs.items():
        options = worker_options(spec)
        assert options["name"] == name
        if name.endswith("CPU:0"):
            assert options["resources"] == {"CPU": 1}
            assert options["nthreads"] == 4
        else:
            assert options["resources"] == {"GPU": 1, "VIRTUAL_GPU": 1}
            assert options["nthreads"] == 1


def test_cpu_threads_default_to_all_cores() -> None:
    specs = worker_specs()
    assert worker_options(specs[LOCAL + "CPU:0"])["nthreads"] == (os.cpu_count() or 1)


@pytest.mark.parametrize(
    ("processes", "cls", "silenced"),
    [(True, SubprocessWorker, True), (False, Worker, False)],
    ids=["processes", "threads"],
)
def test_worker_class_and_logs(processes: bool, cls: type, silenced: bool) -> None:
    for spec in worker_specs(virtual_gpus=1, processes=processes).values():
        assert spec["cls"] is cls
        assert ("silence_logs" in worker_options(spec)) is silenced
        if processes:  # a Nanny in a fresh interpreter: restarts its worker, needs no main guard
            assert spec["options"]["worker_class"] == "daskgraph.cluster.nanny_setup.DeviceNanny"


def test_cpu_in_process_keeps_only_the_cpu_worker_here() -> None:
    specs = worker_specs(virtual_gpus=2, processes=True, cpu_in_process=True)
    classes = {name: spec["cls"] for name, spec in specs.items()}
    assert classes.pop(LOCAL + "CPU:0") is Worker
    assert set(classes.values()) == {SubprocessWorker}  # GPU workers keep their processes


def test_the_embedded_cluster_keeps_its_cpu_worker_here_by_default() -> None:
    from daskgraph.cluster.embedded import shape_for
    from daskgraph.config import SessionConfig

    assert shape_for(SessionConfig()).cpu_in_process is True
    with dask.config.set({"daskgraph.local.cpu-in-process": False}):
        assert shape_for(SessionConfig()).cpu_in_process is False


def test_workers_listen_on_loopback_by_default() -> None:
    for spec in worker_specs(virtual_gpus=2).values():
        assert worker_options(spec)["host"] == "127.0.0.1"
        assert worker_options(spec)["dashboard_address"] == "127.0.0.1:0"


def test_memory_limits_add_up_to_at_most_the_machines_memory() -> None:
    from distributed.system import MEMORY_LIMIT

    for n in (0, 1, 3):
        specs = worker_specs(virtual_gpus=n)
        limits = [worker_options(spec)["memory_limit"] for spec in specs.values()]
        assert all(isinstance(x, int) and x > 0 for x in limits)
        assert sum(limits) <= MEMORY_LIMIT
        assert sum(limits) > MEMORY_LIMIT - len(limits)  # shared out, not wasted


def test_in_process_workers_get_no_memory_limit_by_default() -> None:
    """Dask would measure the whole process, the client's data included, and pause them."""
    from distributed.system import MEMORY_LIMIT

    specs = worker_specs(virtual_gpus=2, processes=True, cpu_in_process=True)
    limits = {name: worker_options(spec)["memory_limit"] for name, spec in specs.items()}
    assert limits.pop(LOCAL + "CPU:0") == 0
    assert set(limits.values()) == {MEMORY_LIMIT // 2}
    threads = worker_specs(virtual_gpus=1, processes=False)
    assert {worker_options(spec)["memory_limit"] for spec in threads.values()} == {0}
    given = worker_specs(virtual_gpus=1, processes=False, memory_limit="2GB")
    assert {worker_options(spec)["memory_limit"] for spec in given.values()} == {"2GB"}


def test_host_memory_job_and_task_are_configurable() -> None:
    specs = worker_specs(virtual_gpus=1, job="worker", task=2, host="10.1.2.3", memory_limit="2GB")
    assert list(specs) == [
        "/job:worker/replica:0/task:2/device:CPU:0",
        "/job:worker/replica:0/task:2/device:GPU:0",
    ]
    for spec in specs.values():
        assert worker_options(spec)["host"] == "10.1.2.3"
        assert worker_options(spec)["memory_limit"] == "2GB"


def test_negative_virtual_gpus_raise() -> None:
    with pytest.raises(ValueError, match="virtual_gpus must be >= 0; got -1"):
        worker_specs(virtual_gpus=-1)


def test_worker_specs_round_trip_through_topology() -> None:
    """The workers these specs start are recognised as the devices they are named after."""
    specs = worker_specs(virtual_gpus=2, cpu_threads=2)
    records = {
        f"tcp://127.0.0.1:{4000 + i}": {
            "name": worker_options(spec)["name"],
            "resources": worker_options(spec)["resources"],
            "nthreads": worker_options(spec)["nthreads"],
            "host": worker_options(spec)["host"],
        }
        for i, spec in enumerate(specs.values())
    }
    devices = devices_from_workers(records)
    assert [(d.name, d.kind) for d in devices] == [
        (LOCAL + "CPU:0", "cpu"),
        (LOCAL + "GPU:0", "virtual-gpu"),
        (LOCAL + "GPU:1", "virtual-gpu"),
    ]


# -- scheduler --------------------------------------------------------------------------------
def _with_bokeh(monkeypatch: pytest.MonkeyPatch, installed: bool) -> None:
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "bokeh":
            return real("daskgraph") if installed else None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(cluster.importlib.util, "find_spec", find_spec)


def test_scheduler_binds_loopback_without_bokeh(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_bokeh(monkeypatch, installed=False)
    spec = scheduler_spec()
    assert spec["cls"] is Scheduler
    assert spec["options"] == {
        "host": "127.0.0.1",
        "port": 0,
        "dashboard_address": "127.0.0.1:0",
        "dashboard": False,
        "extensions": scheduler_extensions(),
    }


def test_scheduler_dashboard_on_loopback_with_bokeh(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_bokeh(monkeypatch, installed=True)
    with dask.config.set({"daskgraph.local.dashboard-address": "127.0.0.1:0"}):
        spec = scheduler_spec()
    assert spec["options"] == {
        "host": "127.0.0.1",
        "port": 0,
        "dashboard_address": "127.0.0.1:0",
        "extensions": scheduler_extensions(),
    }
    with dask.config.set({"daskgraph.local.dashboard-address": "127.0.0.1:8799"}):
        assert scheduler_spec()["options"]["dashboard_address"] == "127.0.0.1:8799"
    assert scheduler_spec(dashboard_address="127.0.0.1:1")["options"]["dashboard_address"] == (
        "127.0.0.1:1"
    )


def test_scheduler_host_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_bokeh(monkeypatch, installed=False)
    assert scheduler_spec(host="0.0.0.0")["options"]["host"] == "0.0.0.0"


@pytest.mark.parametrize("cpu_in_process", [True, False])
def test_logical_cpu_devices_are_cpu_workers_sharing_the_threads(cpu_in_process: bool) -> None:
    specs = worker_specs(
        cpu_devices=3, cpu_threads=6, virtual_gpus=1, cpu_in_process=cpu_in_process
    )
    assert list(specs) == [f"{LOCAL}CPU:{i}" for i in range(3)] + [LOCAL + "GPU:0"]
    cpus = [spec for name, spec in specs.items() if "CPU" in name]
    assert all(worker_options(s)["resources"] == {"CPU": 1} for s in cpus)
    assert [worker_options(s)["nthreads"] for s in cpus] == [2, 2, 2]
    assert len({s["cls"] for s in cpus}) == 1  # all where CPU:0 lives
    assert (cpus[0]["cls"] is Worker) == cpu_in_process
    one_thread_each = worker_specs(cpu_devices=4, cpu_threads=2)
    assert [worker_options(s)["nthreads"] for s in one_thread_each.values()] == [1, 1, 1, 1]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_cpu_device_count_must_be_a_positive_int(bad) -> None:
    with pytest.raises(ValueError, match="cpu_devices must be an int >= 1"):
        worker_specs(cpu_devices=bad)
