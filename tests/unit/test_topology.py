"""Unit tests for daskgraph.cluster.topology: Dask worker records -> devices, and the device
mapping."""

from __future__ import annotations

import pytest

from daskgraph.cluster.topology import Device, devices_from_workers, format_device_mapping
from daskgraph.errors import InvalidArgumentError

LOCAL = "/job:localhost/replica:0/task:0/device:"


def named(name: str, resources: dict, nthreads: int = 1, host: str = "127.0.0.1") -> dict:
    return {"name": name, "resources": resources, "nthreads": nthreads, "host": host}


def summary(devices: list[Device]) -> list[tuple[str, str, str]]:
    return [(d.name, d.kind, d.worker) for d in devices]


# -- daskgraph-named workers ------------------------------------------------------------------
def test_named_workers_map_to_their_devices_sorted() -> None:
    workers = {
        "tcp://127.0.0.1:4003": named(LOCAL + "GPU:1", {"GPU": 1, "VIRTUAL_GPU": 1}),
        "tcp://127.0.0.1:4001": named(LOCAL + "CPU:0", {"CPU": 1}, nthreads=8),
        "tcp://127.0.0.1:4002": named(LOCAL + "GPU:0", {"GPU": 1, "VIRTUAL_GPU": 1}),
    }
    assert summary(devices_from_workers(workers)) == [
        (LOCAL + "CPU:0", "cpu", "tcp://127.0.0.1:4001"),
        (LOCAL + "GPU:0", "virtual-gpu", "tcp://127.0.0.1:4002"),
        (LOCAL + "GPU:1", "virtual-gpu", "tcp://127.0.0.1:4003"),
    ]


@pytest.mark.parametrize(
    ("name", "resources", "kind", "description"),
    [
        (LOCAL + "CPU:0", {"CPU": 1}, "cpu", "threads: 4"),
        (LOCAL + "GPU:0", {"GPU": 1}, "gpu", "device: 0"),
        (
            LOCAL + "GPU:3",
            {"GPU": 1, "VIRTUAL_GPU": 1},
            "virtual-gpu",
            "device: 3, name: virtual GPU (NumPy)",
        ),
        ("/job:localhost/replica:0/task:0/gpu:1", {"GPU": 1}, "gpu", "device: 1"),
    ],
    ids=["cpu", "gpu", "virtual-gpu", "short-spelling"],
)
def test_named_worker_kind_and_description(name, resources, kind, description) -> None:
    (device,) = devices_from_workers({"tcp://w:1": named(name, resources, nthreads=4)})
    assert device.kind == kind
    assert device.description == description
    assert device.name.startswith("/job:localhost/replica:0/task:0/device:")
    assert device.worker == "tcp://w:1"


def test_devices_sort_by_job_task_type_and_numeric_index() -> None:
    names = [
        "/job:worker/replica:0/task:1/device:GPU:0",
        "/job:worker/replica:0/task:0/device:GPU:10",
        "/job:worker/replica:0/task:0/device:GPU:2",
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:ps/replica:0/task:0/device:CPU:0",
    ]
    workers = {f"tcp://h:{i}": named(n, {"GPU": 1}) for i, n in enumerate(names)}
    assert [d.name for d in devices_from_workers(workers)] == [
        "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:GPU:2",
        "/job:worker/replica:0/task:0/device:GPU:10",
        "/job:worker/replica:0/task:1/device:GPU:0",
    ]


def test_device_properties() -> None:
    gpu = Device(LOCAL + "GPU:1", "tcp://w:1", "gpu")
    virtual = Device(LOCAL + "GPU:0", "tcp://w:2", "virtual-gpu")
    cpu = Device(LOCAL + "CPU:0", "tcp://w:3", "cpu")
    assert (gpu.device_type, gpu.array_backend) == ("GPU", "cupy")
    assert (virtual.device_type, virtual.array_backend) == ("GPU", "numpy")
    assert (cpu.device_type, cpu.array_backend) == ("CPU", "numpy")
    assert gpu.spec.device_index == 1 and gpu.spec.job == "localhost"


# -- plain Dask workers -----------------------------------------------------------------------
def test_plain_workers_without_gpus_are_cpus() -> None:
    workers = {
        "tcp://10.0.0.2:1": {"name": 1, "host": "10.0.0.2", "nthreads": 2},
        "tcp://10.0.0.1:1": {"name": 0, "host": "10.0.0.1", "nthreads": 4, "resources": {}},
    }
    assert summary(devices_from_workers(workers)) == [
        (LOCAL + "CPU:0", "cpu", "tcp://10.0.0.1:1"),
        (LOCAL + "CPU:1", "cpu", "tcp://10.0.0.2:1"),
    ]
    assert devices_from_workers(workers)[0].description == "threads: 4, worker: 0"


def test_plain_workers_with_gpu_resources_give_gpu_devices() -> None:
    workers = {
        "tcp://b:1": {"name": "b", "host": "hostb", "resources": {"GPU": 2}},
        "tcp://a:1": {"name": "a", "host": "hosta", "resources": {"GPU": 1.0}},
        "tcp://c:1": {"name": "c", "host": "hostc", "nthreads": 16},
    }
    assert summary(devices_from_workers(workers)) == [
        (LOCAL + "CPU:0", "cpu", "tcp://c:1"),
        (LOCAL + "GPU:0", "gpu", "tcp://a:1"),
        (LOCAL + "GPU:1", "gpu", "tcp://b:1"),
        (LOCAL + "GPU:2", "gpu", "tcp://b:1"),
    ]
    descriptions = [d.description for d in devices_from_workers(workers)]
    assert descriptions == [
        "threads: 16, worker: c",
        "device: 0, worker: a",
        "device: 1, worker: b",
        "device: 2, worker: b",
    ]


def test_plain_worker_order_is_host_then_name_then_address_whatever_the_input_order() -> None:
    records = [
        ("tcp://h1:3", {"name": "y", "host": "h1", "resources": {"GPU": 1}}),
        ("tcp://h1:2", {"name": "x", "host": "h1", "resources": {"GPU": 1}}),
        ("tcp://h0:9", {"name": "z", "host": "h0", "resources": {"GPU": 1}}),
        ("tcp://h1:1", {"name": "x", "host": "h1", "resources": {"GPU": 1}}),
    ]
    expected = ["tcp://h0:9", "tcp://h1:1", "tcp://h1:2", "tcp://h1:3"]
    for ordering in (records, list(reversed(records)), records[2:] + records[:2]):
        devices = devices_from_workers(dict(ordering))
        assert [d.worker for d in devices] == expected
        assert [d.name for d in devices] == [f"{LOCAL}GPU:{i}" for i in range(4)]


def test_plain_workers_with_numeric_names_sort_numerically() -> None:
    workers = {
        f"tcp://127.0.0.1:{5000 + i}": {"name": i, "host": "127.0.0.1", "resources": {"GPU": 1}}
        for i in range(12)
    }
    devices = devices_from_workers(workers)
    assert [d.worker for d in devices] == [f"tcp://127.0.0.1:{5000 + i}" for i in range(12)]


def test_named_and_plain_workers_together() -> None:
    workers = {
        "tcp://a:1": named("/job:worker/replica:0/task:0/device:CPU:0", {"CPU": 1}),
        "tcp://b:1": {"name": "plain", "host": "b", "resources": {"GPU": 1}},
    }
    assert summary(devices_from_workers(workers)) == [
        (LOCAL + "GPU:0", "gpu", "tcp://b:1"),
        ("/job:worker/replica:0/task:0/device:CPU:0", "cpu", "tcp://a:1"),
    ]


# -- duplicates -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "workers",
    [
        {
            "tcp://a:1": named(LOCAL + "GPU:0", {"GPU": 1}),
            "tcp://a:2": named(LOCAL + "GPU:0", {"GPU": 1}),
        },
        {
            "tcp://a:1": named(LOCAL + "GPU:0", {"GPU": 1}),
            "tcp://a:2": named("/job:localhost/replica:0/task:0/gpu:0", {"GPU": 1}),
        },
        {
            "tcp://a:1": named(LOCAL + "GPU:0", {"GPU": 1}),
            "tcp://a:2": named(LOCAL + "GPU:0", {"GPU": 1, "VIRTUAL_GPU": 1}),
        },
    ],
    ids=["same-name", "same-device-other-spelling", "real-and-virtual"],
)
def test_two_workers_claiming_one_device_raise(workers) -> None:
    with pytest.raises(InvalidArgumentError, match="Two workers claim device") as info:
        devices_from_workers(workers)
    assert info.value.device == LOCAL + "GPU:0"
    assert "tcp://a:1" in str(info.value) and "tcp://a:2" in str(info.value)


def test_no_workers_no_devices() -> None:
    assert devices_from_workers({}) == []


# -- device mapping ---------------------------------------------------------------------------
def test_format_device_mapping() -> None:
    devices = [
        Device(LOCAL + "CPU:0", "tcp://127.0.0.1:1", "cpu", "threads: 2"),
        Device(LOCAL + "GPU:0", "tcp://127.0.0.1:2", "virtual-gpu", ""),
    ]
    assert format_device_mapping(devices).splitlines() == [
        "Device mapping:",
        f"{LOCAL}CPU:0 -> threads: 2, address: tcp://127.0.0.1:1",
        f"{LOCAL}GPU:0 -> tcp://127.0.0.1:2",
    ]


def test_format_device_mapping_of_discovered_devices() -> None:
    workers = {"tcp://127.0.0.1:9": named(LOCAL + "GPU:0", {"GPU": 1, "VIRTUAL_GPU": 1})}
    assert format_device_mapping(devices_from_workers(workers)) == (
        "Device mapping:\n"
        f"{LOCAL}GPU:0 -> device: 0, name: virtual GPU (NumPy), address: tcp://127.0.0.1:9"
    )


def test_format_device_mapping_of_nothing() -> None:
    assert format_device_mapping([]) == "Device mapping:"


@pytest.mark.parametrize("status", ["closing", "closing_gracefully", "closed", "failed"])
def test_a_leaving_worker_serves_no_device_and_its_successor_does(status) -> None:
    """A dead worker the scheduler still lists, next to the nanny's restarted one."""
    leaving = named(LOCAL + "CPU:0", {"CPU": 1}) | {"status": status}
    workers = {
        "tcp://127.0.0.1:4001": leaving,
        "tcp://127.0.0.1:4009": named(LOCAL + "CPU:0", {"CPU": 1}) | {"status": "running"},
    }
    assert summary(devices_from_workers(workers)) == [
        (LOCAL + "CPU:0", "cpu", "tcp://127.0.0.1:4009")
    ]
    assert devices_from_workers({"tcp://127.0.0.1:4001": leaving}) == []


def test_a_gpu_whose_worker_has_no_cupy_is_unusable_and_says_why() -> None:
    workers = {
        "tcp://h:1": {"name": "g", "resources": {"GPU": 1}, "host": "h"},
        "tcp://h:2": {"name": "c", "resources": {}, "host": "h"},
        "tcp://h:3": {"name": "ok", "resources": {"GPU": 1}, "host": "h"},
    }
    probes = {"tcp://h:1": {"cupy": False}, "tcp://h:3": {"cupy": True}}
    devices = {d.worker: d for d in devices_from_workers(workers, probes)}
    assert "'g'" in devices["tcp://h:1"].unusable and "CuPy" in devices["tcp://h:1"].unusable
    assert devices["tcp://h:2"].unusable == "" and devices["tcp://h:3"].unusable == ""
    unprobed = devices_from_workers(workers)  # no answer: judged by the record, usable
    assert all(d.unusable == "" for d in unprobed)


def test_the_placer_skips_an_unusable_gpu_and_names_it() -> None:
    import daskgraph as dg
    from daskgraph.runtime.planner.placement import place

    cpu = Device("/job:localhost/replica:0/task:0/device:CPU:0", "w0", "cpu")
    gpu = Device("/job:localhost/replica:0/task:0/device:GPU:0", "w1", "gpu", unusable="no CuPy")
    with dg.Graph().as_default() as g:
        free = dg.constant(1.0, name="free") * 2.0
    placement = place(g, [cpu, gpu])
    assert placement.devices[placement.device_index(free.op)].name.endswith("CPU:0")
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            dg.constant(1.0, name="pinned")
    with pytest.raises(InvalidArgumentError, match="GPU:0 is unusable: no CuPy"):
        place(g, [cpu, gpu])
    soft = place(g, [cpu, gpu], allow_soft_placement=True)
    assert soft.devices[soft.device_index(g.get_operation_by_name("pinned"))] == cpu
