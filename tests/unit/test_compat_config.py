"""tf.config (daskgraph.compat.config): the process's devices and settings, what sessions made
without a config take from them, the embedded cluster's virtual GPUs, TensorFlow's errors."""

from __future__ import annotations

import dask.config
import pytest

import daskgraph as dg
import daskgraph.compat.v1 as tf
from daskgraph import config as native_config
from daskgraph.cluster import embedded
from daskgraph.cluster.gpus import GPUInfo
from daskgraph.compat import config


@pytest.fixture
def fresh(monkeypatch):
    """Settings found anew, on a machine with 2 NVIDIA GPUs (NVML faked) and no virtual GPU;
    other tests' running clusters do not count as initialized devices."""
    gpus = [GPUInfo(str(i), "NVIDIA A100-SXM4-40GB", 40 * 2**30) for i in range(2)]
    monkeypatch.setattr(config, "visible_gpus", lambda: gpus)
    monkeypatch.setattr(embedded, "running", dict)
    config._reset()
    with dask.config.set({"daskgraph.virtual-gpus": 0}):
        yield config
        config._reset()


def test_physical_and_logical_devices(fresh):
    with dask.config.set({"daskgraph.virtual-gpus": 1}):
        config._reset()
        devices = tf.config.list_physical_devices()
        assert [(d.name, d.device_type) for d in devices] == [
            ("/physical_device:CPU:0", "CPU"),
            ("/physical_device:GPU:0", "GPU"),
            ("/physical_device:GPU:1", "GPU"),
            ("/physical_device:GPU:2", "GPU"),  # the virtual GPU, after the NVIDIA ones
        ]
        cpu, gpu0, _, virtual = devices
        assert tf.config.experimental.list_physical_devices("GPU") == devices[1:]
        assert tf.config.get_visible_devices() == devices
        assert tf.config.experimental.get_device_details(cpu) == {}
        assert tf.config.experimental.get_device_details(gpu0) == {
            "device_name": "NVIDIA A100-SXM4-40GB", "compute_capability": (0, 0),
        }  # fmt: skip
        assert tf.config.experimental.get_device_details(virtual)["device_name"] == (
            "virtual GPU (NumPy)"
        )
        assert [d.name for d in tf.config.list_logical_devices("GPU")] == [
            "/device:GPU:0", "/device:GPU:1", "/device:GPU:2",
        ]  # fmt: skip
        with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
            tf.config.experimental.set_memory_growth(gpu0, True)  # listing initialized them


def test_memory_growth_is_the_sessions_allow_growth(fresh):
    gpus = tf.config.experimental.list_physical_devices("GPU")
    assert native_config.default_session_config() == native_config.SessionConfig()
    assert tf.config.experimental.get_memory_growth(gpus[0]) is None
    tf.config.experimental.set_memory_growth(gpus[0], True)
    with pytest.raises(ValueError, match="Memory growth cannot differ between GPU devices"):
        native_config.default_session_config()  # as TensorFlow when the context is made
    tf.config.experimental.set_memory_growth(gpus[1], True)
    made = native_config.default_session_config()
    assert isinstance(made, tf.ConfigProto) and made.gpu_options.allow_growth
    assert tf.config.experimental.get_memory_growth(gpus[1]) is True
    with pytest.raises(ValueError, match="Cannot set memory growth on non-GPU"):
        tf.config.experimental.set_memory_growth(tf.config.list_physical_devices("CPU")[0], True)
    with pytest.raises(ValueError, match="Unrecognized device"):
        tf.config.experimental.set_memory_growth(tf.config.PhysicalDevice("/x:GPU:7", "GPU"), 1)


def test_visible_devices_pick_the_gpus(fresh):
    cpu, gpu0, gpu1 = tf.config.list_physical_devices()
    tf.config.set_visible_devices([gpu1], "GPU")
    assert tf.config.get_visible_devices() == [cpu, gpu1]
    assert tf.config.experimental.get_visible_devices("GPU") == [gpu1]
    assert config.session_config().gpu_options.visible_device_list == "1"
    tf.config.set_visible_devices([], "GPU")
    assert config.session_config().device_count == {"GPU": 0}
    with pytest.raises(ValueError, match="Unrecognized device"):
        tf.config.set_visible_devices([cpu], "GPU")
    with pytest.raises(ValueError, match="cannot be made invisible"):
        tf.config.set_visible_devices([gpu0])


def test_logical_devices_split_a_gpu(fresh):
    cpu, gpu0, gpu1 = tf.config.list_physical_devices()
    halves = [tf.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2
    tf.config.set_logical_device_configuration(gpu0, halves)
    assert tf.config.get_logical_device_configuration(gpu0) == halves
    with pytest.raises(ValueError, match="same logical GPUs"):
        config.session_config()  # daskgraph splits every GPU alike (TF: each its own way)
    tf.config.experimental.set_virtual_device_configuration(
        gpu1, [tf.config.experimental.VirtualDeviceConfiguration(1024)] * 2
    )
    assert config.session_config().gpu_options.virtual_devices == [1024, 1024]
    with pytest.raises(ValueError, match="virtual devices configured"):
        tf.config.experimental.set_memory_growth(gpu0, True)
    with pytest.raises(ValueError, match="memory limit is required for GPU virtual devices"):
        tf.config.set_logical_device_configuration(gpu0, [tf.config.LogicalDeviceConfiguration()])
    with pytest.raises(ValueError, match="memory limit on CPU virtual devices"):
        tf.config.set_logical_device_configuration(cpu, halves)
    assert len(tf.config.list_logical_devices("GPU")) == 4


def test_threads_and_soft_placement(fresh):
    threads = tf.config.threading
    assert threads.get_inter_op_parallelism_threads() == 0
    assert not tf.config.get_soft_device_placement()
    before = dask.config.get("daskgraph.local.cpu-threads")
    threads.set_inter_op_parallelism_threads(2)  # the embedded CPU worker's threads
    threads.set_intra_op_parallelism_threads(3)
    tf.config.set_soft_device_placement(True)
    assert dask.config.get("daskgraph.local.cpu-threads") == 2
    made = config.session_config()
    assert made.allow_soft_placement and made.intra_op_parallelism_threads == 3
    tf.config.list_logical_devices()
    with pytest.raises(RuntimeError, match="Inter op parallelism cannot be modified"):
        threads.set_inter_op_parallelism_threads(4)
    config._reset()
    assert dask.config.get("daskgraph.local.cpu-threads") == before


def test_sessions_without_a_config_take_the_settings(fresh, monkeypatch):
    monkeypatch.undo()  # running embedded clusters count again: they initialize the devices
    monkeypatch.setattr(config, "visible_gpus", list)  # virtual GPUs only, really started
    embedded.shutdown()  # (other tests' clusters)
    shape = {"daskgraph.virtual-gpus": 1, "daskgraph.local.processes": False}
    with dask.config.set(shape):
        config._reset()
        (gpu,) = tf.config.list_physical_devices("GPU")
        halves = [tf.config.LogicalDeviceConfiguration(memory_limit=64)] * 2
        tf.config.set_logical_device_configuration(gpu, halves)
        tf.config.set_soft_device_placement(True)
        assert dask.config.get("daskgraph.virtual-gpus") == 2  # two virtual GPU workers
        with dg.Session() as sess:
            names = [d.name for d in sess.list_devices()]
            with dg.device("/gpu:1"):
                x = dg.constant(2.0) * 3.0
            assert sess.config.allow_soft_placement and sess.run(x) == 6.0
        with tf.Session(config=tf.ConfigProto()) as sess:  # a config of its own: as given
            assert not sess.config.allow_soft_placement
        with pytest.raises(RuntimeError, match="Virtual devices cannot be modified after"):
            tf.config.set_logical_device_configuration(gpu, halves[:1])  # the cluster runs
        config._reset()
        assert dask.config.get("daskgraph.virtual-gpus") == 1
    assert names[-2:] == [
        "/job:localhost/replica:0/task:0/device:GPU:0",
        "/job:localhost/replica:0/task:0/device:GPU:1",
    ]


def test_logical_devices_split_the_cpu_as_device_count_does(fresh):
    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
    assert config.session_config().device_count == {"CPU": 3}
    assert embedded.shape_for(native_config.default_session_config()).cpu_devices == 3
    assert [d.name for d in tf.config.list_logical_devices("CPU")] == [
        "/device:CPU:0", "/device:CPU:1", "/device:CPU:2",
    ]  # fmt: skip
    with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()])


def test_a_cpu_cannot_be_split_into_none_or_given_a_memory_limit(fresh):
    (cpu,) = tf.config.list_physical_devices("CPU")
    with pytest.raises(ValueError, match="at least one"):
        tf.config.set_logical_device_configuration(cpu, [])
    with pytest.raises(ValueError, match="memory limit on CPU"):
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration(memory_limit=64)]
        )
