"""Unit tests for the placer: TensorFlow's placement rules over hand-made device lists."""

from __future__ import annotations

import pytest

import daskgraph as dg
from daskgraph.cluster.topology import Device
from daskgraph.errors import InvalidArgumentError, NotFoundError
from daskgraph.runtime.planner.placement import format_placement_log, place

LOCAL = "/job:localhost/replica:0/task:0/device:"
CPU0 = LOCAL + "CPU:0"
GPU0 = LOCAL + "GPU:0"
GPU1 = LOCAL + "GPU:1"


def local_devices(n_gpus: int = 2, kind: str = "virtual-gpu") -> list[Device]:
    """A CPU and ``n_gpus`` GPUs of ``/job:localhost/replica:0/task:0``, one worker each."""
    devices = [Device(CPU0, "tcp://127.0.0.1:1000", "cpu")]
    devices += [
        Device(f"{LOCAL}GPU:{i}", f"tcp://127.0.0.1:{1001 + i}", kind) for i in range(n_gpus)
    ]
    return devices


def multi_job_devices() -> list[Device]:
    """A parameter server (CPU only) and two worker tasks: task 0 with a CPU and a GPU,
    task 1 with two GPUs."""
    names = [
        ("/job:ps/replica:0/task:0/device:CPU:0", "cpu"),
        ("/job:worker/replica:0/task:0/device:CPU:0", "cpu"),
        ("/job:worker/replica:0/task:0/device:GPU:0", "gpu"),
        ("/job:worker/replica:0/task:1/device:GPU:0", "gpu"),
        ("/job:worker/replica:0/task:1/device:GPU:1", "gpu"),
    ]
    return [Device(name, f"tcp://10.0.0.{i}:1", kind) for i, (name, kind) in enumerate(names)]


# -- the default rules ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        (local_devices(2), GPU0),
        (list(reversed(local_devices(2))), GPU0),
        (local_devices(0), CPU0),
        (local_devices(1, kind="gpu"), GPU0),
    ],
    ids=["gpus", "gpus-listed-in-reverse", "cpu-only", "real-gpu"],
)
def test_unrequested_op_goes_to_the_lowest_gpu_else_cpu(devices, expected) -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant([1.0, 2.0], name="a")
        dg.square(a, name="sq")
    placement = place(g, devices)
    assert placement["a"].device == expected
    assert placement["sq"].device == expected
    assert placement["sq"].reason == "automatic"
    assert placement["sq"].detail == ""


def test_unrequested_op_without_gpu_kernel_goes_to_cpu() -> None:
    with dg.Graph().as_default() as g:
        dg.constant("text", name="s")
        i = dg.constant([[1, 2], [3, 4]], name="i")
        dg.matmul(i, i, name="imm")  # no integer GPU MatMul, as in TensorFlow
    placement = place(g, local_devices(2))
    assert placement["s"].device == CPU0
    assert placement["s"].reason == "automatic"
    assert placement["i"].device == GPU0
    assert placement["imm"].device == CPU0


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ("/cpu:0", CPU0),
        ("/gpu:1", GPU1),
        ("/device:GPU:0", GPU0),
        ("/gpu:*", GPU0),
        ("/device:CPU:*", CPU0),
        ("/job:localhost", GPU0),
        ("/job:localhost/replica:0/task:0", GPU0),
        (GPU1, GPU1),
    ],
    ids=["cpu0", "gpu1", "device-gpu0", "gpu-star", "cpu-star", "job-only", "job-task", "full"],
)
def test_explicit_and_partial_requests(request_: str, expected: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device(request_):
            dg.constant([1.0], name="a")
    placement = place(g, local_devices(2))
    assert placement["a"].device == expected
    assert placement["a"].reason == "explicit"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (None, "/job:worker/replica:0/task:0/device:GPU:0"),
        ("/job:ps", "/job:ps/replica:0/task:0/device:CPU:0"),
        ("/job:worker", "/job:worker/replica:0/task:0/device:GPU:0"),
        ("/job:worker/task:1", "/job:worker/replica:0/task:1/device:GPU:0"),
        ("/job:worker/task:1/gpu:1", "/job:worker/replica:0/task:1/device:GPU:1"),
        ("/job:worker/device:GPU:*", "/job:worker/replica:0/task:0/device:GPU:0"),
        ("/job:worker/cpu:0", "/job:worker/replica:0/task:0/device:CPU:0"),
        ("/task:1", "/job:worker/replica:0/task:1/device:GPU:0"),
        ("/cpu:0", "/job:ps/replica:0/task:0/device:CPU:0"),
    ],
    ids=[
        "unrequested",
        "ps",
        "worker",
        "worker-task1",
        "task1-gpu1",
        "worker-any-gpu",
        "worker-cpu",
        "task-only",
        "cpu-first-job",
    ],
)
def test_multiple_jobs_and_tasks(request_: str | None, expected: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device(request_):
            dg.constant([1.0], name="a")
    assert place(g, multi_job_devices())["a"].device == expected


def test_inner_scope_request_is_honoured_per_op() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([1.0], name="a")
            with dg.device("/gpu:1"):
                b = dg.square(a, name="b")
        dg.add(a, b, name="c")
    placement = place(g, local_devices(2))
    assert [placement[n].device for n in ("a", "b", "c")] == [CPU0, GPU1, GPU0]
    assert [placement[n].reason for n in ("a", "b", "c")] == ["explicit", "explicit", "automatic"]


# -- colocation -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("request_", "expected"),
    [(None, GPU0), ("/cpu:0", CPU0), ("/gpu:1", GPU1)],
    ids=["unrequested", "cpu", "gpu1"],
)
def test_variable_group_shares_one_device(request_: str | None, expected: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device(request_):
            v = dg.Variable([1.0, 2.0], name="v")
        v.assign_add([1.0, 1.0], name="inc")
        v.assign([0.0, 0.0], name="reset")
        dg.global_variables_initializer()
    placement = place(g, local_devices(2))
    for name in ("v", "v/Assign", "v/read", "inc", "reset"):
        assert placement[name].device == expected, name
    for name in ("v/Assign", "v/read", "inc", "reset"):
        assert placement[name].reason == "colocated", name


def test_updates_of_a_placed_variable_follow_it_whatever_their_scope() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:1"):
            v = dg.Variable([1.0, 2.0], name="v")
        with dg.device("/cpu:0"):
            v.assign_add([1.0, 1.0], name="inc")
    placement = place(g, local_devices(2))
    assert placement["inc"].device == GPU1
    assert placement["v"].device == GPU1


def test_update_request_moves_an_unrequested_variable_group() -> None:
    # as TensorFlow's placer does with reference edges: the group honours any member's request
    with dg.Graph().as_default() as g:
        v = dg.Variable([1.0, 2.0], name="v")
        with dg.device("/cpu:0"):
            v.assign_add([1.0, 1.0], name="inc")
    placement = place(g, local_devices(2))
    for name in ("v", "v/Assign", "v/read", "inc"):
        assert placement[name].device == CPU0, name


def test_colocate_with_moves_the_group_to_the_target_request() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:1"):
            a = dg.constant([1.0], name="a")
        with dg.colocate_with(a):
            b = dg.square(a, name="b")
        dg.square(b, name="c")
    placement = place(g, local_devices(2))
    assert placement["a"].device == GPU1
    assert placement["b"].device == GPU1
    assert placement["b"].reason == "colocated"
    assert placement["c"].device == GPU0


def test_colocated_group_needs_a_kernel_for_every_member() -> None:
    # a float32 constant could run on a GPU, but it is colocated with a string constant
    with dg.Graph().as_default() as g:
        s = dg.constant("text", name="s")
        with dg.colocate_with(s):
            dg.constant([1.0], name="f")
    placement = place(g, local_devices(2))
    assert placement["s"].device == CPU0
    assert placement["f"].device == CPU0


def test_colocation_request_from_a_member_applies_to_the_whole_group() -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant([1.0], name="a")
        with dg.colocate_with(a), dg.device("/gpu:1"):
            dg.square(a, name="b")
    placement = place(g, local_devices(2))
    assert placement["a"].device == GPU1
    assert placement["b"].device == GPU1


def _conflicting_colocation_graph() -> dg.Graph:
    with dg.Graph().as_default() as g:
        a = dg.constant([1.0], name="a")
        with dg.colocate_with(a), dg.device("/gpu:1"):
            dg.square(a, name="b")
        with dg.colocate_with(a), dg.device("/cpu:0"):
            dg.square(a, name="c")
    return g


def test_conflicting_colocation_requests_raise() -> None:
    g = _conflicting_colocation_graph()
    with pytest.raises(
        InvalidArgumentError, match="Cannot colocate operations 'b' and 'c'"
    ) as info:
        place(g, local_devices(2))
    err = info.value
    assert err.op == "c"
    assert err.requested == "/device:CPU:0"
    assert err.conflicting == "/device:GPU:1"
    assert "allow_soft_placement" in str(err)


def test_conflicting_colocation_with_soft_placement_takes_the_first_request() -> None:
    placement = place(_conflicting_colocation_graph(), local_devices(2), allow_soft_placement=True)
    assert {placement[n].device for n in "abc"} == {GPU1}


def test_compatible_colocation_requests_merge() -> None:
    with dg.Graph().as_default() as g:
        a = dg.constant([1.0], name="a")
        with dg.colocate_with(a), dg.device("/job:worker/task:1"):
            dg.square(a, name="b")
        with dg.colocate_with(a), dg.device("/gpu:1"):
            dg.square(a, name="c")
    placement = place(g, multi_job_devices())
    expected = "/job:worker/replica:0/task:1/device:GPU:1"
    assert {placement[n].device for n in "abc"} == {expected}


# -- errors and soft placement ----------------------------------------------------------------
def _int_variable_on_gpu() -> dg.Graph:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            v = dg.Variable(0, name="counter")
        v.assign_add(1, name="step")
    return g


def test_int_variable_on_gpu_raises_without_soft_placement() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        place(_int_variable_on_gpu(), local_devices(2))
    err = info.value
    assert err.op == "counter"
    assert err.requested == "/device:GPU:0"
    assert err.available == [CPU0, GPU0, GPU1]
    message = str(err)
    assert "'counter' (VariableV2)" in message
    assert "no supported kernel for GPU devices" in message
    assert "int32" in message
    assert "allow_soft_placement=True" in message


def test_int_variable_on_gpu_falls_back_to_cpu_with_soft_placement() -> None:
    placement = place(_int_variable_on_gpu(), local_devices(2), allow_soft_placement=True)
    for name in ("counter", "counter/Assign", "counter/read", "step"):
        placed = placement[name]
        assert placed.device == CPU0, name
        assert placed.reason == "soft", name
        assert "requested '/device:GPU:0'" in placed.detail
        assert "no supported kernel for GPU devices" in placed.detail
        assert f"placed on {CPU0}" in placed.detail
    # the int32 initial value has a GPU kernel and stays where it was asked to be
    assert placement["counter/initial_value"].device == GPU0
    assert placement["counter/initial_value"].reason == "explicit"
    assert set(placement.soft_fallbacks()) == {"counter", "counter/Assign", "counter/read", "step"}


def test_missing_gpu_raises_naming_op_request_and_devices() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:2"):
            dg.constant([1.0], name="big")
    with pytest.raises(InvalidArgumentError) as info:
        place(g, local_devices(2))
    err = info.value
    assert err.op == "big"
    assert err.requested == "/device:GPU:2"
    assert err.available == [CPU0, GPU0, GPU1]
    message = str(err)
    assert "'big' (Const)" in message
    assert "'/device:GPU:2'" in message
    assert "no devices matching that specification" in message
    assert GPU1 in message


def test_missing_gpu_with_soft_placement_prefers_another_gpu() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:2"):
            dg.constant([1.0], name="big")
    placement = place(g, local_devices(2), allow_soft_placement=True)
    assert placement["big"].device == GPU0
    assert placement["big"].reason == "soft"
    assert "requested '/device:GPU:2'" in placement["big"].detail


def test_missing_gpu_with_soft_placement_uses_cpu_without_gpus() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            dg.constant([1.0], name="a")
    placement = place(g, local_devices(0), allow_soft_placement=True)
    assert placement["a"].device == CPU0
    assert placement["a"].reason == "soft"


def test_string_constant_on_gpu() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            dg.constant("hello", name="s")
    with pytest.raises(InvalidArgumentError, match="Const with dtype string") as info:
        place(g, local_devices(2))
    assert info.value.op == "s"
    placement = place(g, local_devices(2), allow_soft_placement=True)
    assert placement["s"].device == CPU0
    assert placement["s"].reason == "soft"
    assert "string" in placement["s"].detail


@pytest.mark.parametrize(
    "request_",
    ["/job:nope/device:GPU:0", "/job:nope", "/job:localhost/task:5/cpu:0", "/replica:3/cpu:0"],
    ids=["unknown-job-gpu", "unknown-job", "unknown-task", "unknown-replica"],
)
def test_soft_placement_never_relaxes_job_replica_or_task(request_: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device(request_):
            dg.constant([1.0], name="a")
    with pytest.raises(InvalidArgumentError) as info:
        place(g, local_devices(2), allow_soft_placement=True)
    assert info.value.op == "a"
    assert "no devices matching that specification" in str(info.value)
    # with soft placement on, the message does not suggest turning it on
    assert "Set allow_soft_placement" not in str(info.value)


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ("/job:worker/task:1/gpu:5", "/job:worker/replica:0/task:1/device:GPU:0"),
        ("/job:worker/task:1/cpu:0", "/job:worker/replica:0/task:1/device:GPU:0"),
        ("/job:ps/gpu:0", "/job:ps/replica:0/task:0/device:CPU:0"),
        ("/job:worker/task:0/gpu:3", "/job:worker/replica:0/task:0/device:GPU:0"),
    ],
    ids=["same-task-gpu", "task-without-cpu", "ps-has-no-gpu", "task0-gpu"],
)
def test_soft_placement_keeps_job_and_task(request_: str, expected: str) -> None:
    with dg.Graph().as_default() as g:
        with dg.device(request_):
            dg.constant([1.0], name="a")
    with pytest.raises(InvalidArgumentError):
        place(g, multi_job_devices())
    placement = place(g, multi_job_devices(), allow_soft_placement=True)
    assert placement["a"].device == expected
    assert placement["a"].reason == "soft"


def test_empty_cluster_raises() -> None:
    with dg.Graph().as_default() as g:
        dg.constant(1.0)
    with pytest.raises(InvalidArgumentError, match="no devices") as info:
        place(g, [])
    assert info.value.available == []


def test_unregistered_op_type_raises_not_found() -> None:
    with dg.Graph().as_default() as g:
        g.create_op("Frobnicate", [], dtype=dg.float32, shape=())
    with pytest.raises(NotFoundError, match="'Frobnicate' is not registered"):
        place(g, local_devices(1))


# -- the Placement object and the log ---------------------------------------------------------
def test_placement_accessors() -> None:
    devices = local_devices(2)
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:1"):
            a = dg.constant([1.0], name="a")
        b = dg.square(a, name="b")
    placement = place(g, devices)
    assert len(placement) == 2
    assert placement.devices == tuple(devices)
    assert placement.graph_version == g.version == 2
    assert placement.device_index(a.op) == 2
    assert placement.device_of(b.op) is devices[1]
    assert placement[a.op] == placement["a"]
    assert [name for name, _ in placement.items()] == ["a", "b"]
    assert placement.soft_fallbacks() == {}


def test_format_placement_log() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/cpu:0"):
            a = dg.constant([[1.0]], name="a")
        dg.matmul(a, a, name="MatMul")
        with dg.device("/gpu:0"):
            dg.constant("s", name="s")
    placement = place(g, local_devices(2), allow_soft_placement=True)
    lines = format_placement_log(placement)
    assert lines[:2] == [
        "a: (Const): /job:localhost/replica:0/task:0/device:CPU:0",
        "MatMul: (MatMul): /job:localhost/replica:0/task:0/device:GPU:0",
    ]
    assert len(lines) == 3  # one line per op: the soft-placed op's says it was moved, and why
    assert lines[2].startswith(
        "s: (Const): /job:localhost/replica:0/task:0/device:CPU:0 "
        "(soft placement: requested '/device:GPU:0' but "
    )
    assert lines[2].endswith(")")


def test_format_placement_log_without_fallbacks_has_one_line_per_op() -> None:
    with dg.Graph().as_default() as g:
        v = dg.Variable(1.0, name="v")
        dg.global_variables_initializer()
        v.assign_add(1.0)
    lines = format_placement_log(place(g, local_devices(1)))
    assert lines == [f"{op.name}: ({op.type}): {GPU0}" for op in g.get_operations()]


# -- scale ------------------------------------------------------------------------------------
def test_large_graph_is_placed_correctly() -> None:
    """A 100,000-op graph in four segments: unrequested, /cpu:0, /gpu:1 and int32 MatMuls.

    Only correctness is checked here; the placer's speed belongs in the benchmarks.
    """
    n = 100_000
    segment = n // 4
    with dg.Graph().as_default() as g:
        x = dg.constant([[1.0]], name="x0")
        for _ in range(segment - 1):
            x = dg.identity(x)
        with dg.device("/cpu:0"):
            for _ in range(segment):
                x = dg.identity(x)
        with dg.device("/gpu:1"):
            for _ in range(segment):
                x = dg.identity(x)
        i = dg.constant([[1]], name="i0")
        for _ in range(segment - 1):
            i = dg.matmul(i, i)
    assert len(g) == n
    placement = place(g, local_devices(2))
    expected = (
        [GPU0] * segment + [CPU0] * segment + [GPU1] * segment + [GPU0] + [CPU0] * (segment - 1)
    )
    devices = [d.name for d in placement.devices]
    got = [devices[placement.device_index(op)] for op in g.get_operations()]
    assert got == expected
    assert placement[g.get_operations()[-1]].reason == "automatic"
    assert placement[g.get_operations()[2 * segment]].reason == "explicit"


# -- what placement errors quote ---------------------------------------------------------------
HUGE = 4_000_000  # a 4 MB piece of user input


def test_a_4mb_device_string_is_quoted_shortened_in_the_placement_error() -> None:
    spec = "/job:" + "a" * HUGE + "/device:GPU:0"
    with dg.Graph().as_default() as g:
        with dg.device(spec):
            dg.constant([1.0], name="big")
    with pytest.raises(InvalidArgumentError) as info:
        place(g, local_devices(2))
    message = str(info.value)
    assert len(message) < 1_000
    assert "'/job:aaaaaaaaa" in message and f"... ({HUGE + 18} characters)" in message
    assert "'big' (Const)" in message and "no devices matching" in message
    assert info.value.requested == spec  # the structured field keeps it whole


def test_a_4mb_op_name_is_quoted_shortened_in_placement_errors() -> None:
    name = "n" * HUGE
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:7"):
            dg.constant([1.0], name=name)
    with pytest.raises(InvalidArgumentError) as info:
        place(g, local_devices(2))
    assert len(str(info.value)) < 1_000 and f"... ({HUGE} characters) (Const)" in str(info.value)
    assert info.value.op == name

    with dg.Graph().as_default() as g:
        a = dg.constant([1.0], name="a" * HUGE)
        with dg.colocate_with(a), dg.device("/gpu:1"):
            dg.square(a, name="b" * HUGE)
        with dg.colocate_with(a), dg.device("/device:" + "Z" * HUGE + ":0"):
            dg.square(a, name="c" * HUGE)
    with pytest.raises(InvalidArgumentError, match="Cannot colocate operations") as info:
        place(g, local_devices(2))
    assert len(str(info.value)) < 1_000 and info.value.op == "c" * HUGE


# -- a GPU request on a cluster without GPUs -----------------------------------------------------
def test_a_gpu_request_without_any_gpu_says_how_to_get_virtual_gpus() -> None:
    with dg.Graph().as_default() as g:
        with dg.device("/gpu:0"):
            dg.constant([1.0], name="a")
    with pytest.raises(InvalidArgumentError) as info:
        place(g, local_devices(0))
    message = str(info.value)
    assert "allow_soft_placement=True" in message
    assert "This cluster has no GPU" in message
    assert "DASK_DASKGRAPH__VIRTUAL_GPUS=N" in message and "daskgraph.virtual-gpus" in message


@pytest.mark.parametrize(
    ("devices", "request_"),
    [
        (local_devices(2), "/gpu:2"),
        (local_devices(0), "/job:ps/gpu:0"),
        (local_devices(0), "/cpu:1"),
    ],
    ids=["a-gpu-exists", "the-job-is-missing", "a-cpu-request"],
)
def test_other_unsatisfiable_requests_do_not_mention_virtual_gpus(devices, request_) -> None:
    with dg.Graph().as_default() as g:
        with dg.device(request_):
            dg.constant([1.0], name="a")
    with pytest.raises(InvalidArgumentError) as info:
        place(g, devices)
    assert "VIRTUAL_GPUS" not in str(info.value)
