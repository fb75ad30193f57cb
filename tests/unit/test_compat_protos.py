"""tf.train.ClusterDef, JobDef and ServerDef, ClusterSpec.as_cluster_def, Server.server_def and
tf.test.TestCase.assertProtoEquals: TensorFlow's server_lib tests about them (ServerDefTest,
ClusterSpecTest, GrpcServerTest.testSetConfiguration of
tensorflow/python/training/server_lib_test.py) with ``tf`` being daskgraph's compat.v1, plus
the wire format against bytes TensorFlow 2.21 serialized. No server is started."""

from __future__ import annotations

import pytest
from google.protobuf import text_format

import daskgraph.compat.v1 as tf
from daskgraph.cluster_spec import ClusterSpec as NativeClusterSpec
from daskgraph.compat import protos

# -- TensorFlow's ServerDefTest --------------------------------------------------------------------
# Source: tensorflow/python/training/server_lib_test.py, class ServerDefTest (testLocalServer,
# testTwoProcesses, testTwoJobs, testDenseAndSparseJobs), with tensorflow_server_pb2.ServerDef
# as tf.train.ServerDef and server_lib.ClusterSpec as tf.train.ClusterSpec.


class ServerDefTest(tf.test.TestCase):
    def testLocalServer(self):
        cluster_def = tf.train.ClusterSpec({"local": ["localhost:2222"]}).as_cluster_def()
        server_def = tf.train.ServerDef(
            cluster=cluster_def, job_name="local", task_index=0, protocol="grpc"
        )

        self.assertProtoEquals(
            """
    cluster {
      job { name: 'local' tasks { key: 0 value: 'localhost:2222' } }
    }
    job_name: 'local' task_index: 0 protocol: 'grpc'
    """,
            server_def,
        )

        # Verifies round trip from Proto->Spec->Proto is correct.
        cluster_spec = tf.train.ClusterSpec(cluster_def)
        self.assertProtoEquals(cluster_def, cluster_spec.as_cluster_def())

    def testTwoProcesses(self):
        cluster_def = tf.train.ClusterSpec(
            {"local": ["localhost:2222", "localhost:2223"]}
        ).as_cluster_def()
        server_def = tf.train.ServerDef(
            cluster=cluster_def, job_name="local", task_index=1, protocol="grpc"
        )

        self.assertProtoEquals(
            """
    cluster {
      job { name: 'local' tasks { key: 0 value: 'localhost:2222' }
                          tasks { key: 1 value: 'localhost:2223' } }
    }
    job_name: 'local' task_index: 1 protocol: 'grpc'
    """,
            server_def,
        )

        # Verifies round trip from Proto->Spec->Proto is correct.
        cluster_spec = tf.train.ClusterSpec(cluster_def)
        self.assertProtoEquals(cluster_def, cluster_spec.as_cluster_def())

    def testTwoJobs(self):
        cluster_def = tf.train.ClusterSpec(
            {
                "ps": ["ps0:2222", "ps1:2222"],
                "worker": ["worker0:2222", "worker1:2222", "worker2:2222"],
            }
        ).as_cluster_def()
        server_def = tf.train.ServerDef(
            cluster=cluster_def, job_name="worker", task_index=2, protocol="grpc"
        )

        self.assertProtoEquals(
            """
    cluster {
      job { name: 'ps' tasks { key: 0 value: 'ps0:2222' }
                       tasks { key: 1 value: 'ps1:2222' } }
      job { name: 'worker' tasks { key: 0 value: 'worker0:2222' }
                           tasks { key: 1 value: 'worker1:2222' }
                           tasks { key: 2 value: 'worker2:2222' } }
    }
    job_name: 'worker' task_index: 2 protocol: 'grpc'
    """,
            server_def,
        )

        # Verifies round trip from Proto->Spec->Proto is correct.
        cluster_spec = tf.train.ClusterSpec(cluster_def)
        self.assertProtoEquals(cluster_def, cluster_spec.as_cluster_def())

    def testDenseAndSparseJobs(self):
        cluster_def = tf.train.ClusterSpec(
            {"ps": ["ps0:2222", "ps1:2222"], "worker": {0: "worker0:2222", 2: "worker2:2222"}}
        ).as_cluster_def()
        server_def = tf.train.ServerDef(
            cluster=cluster_def, job_name="worker", task_index=2, protocol="grpc"
        )

        self.assertProtoEquals(
            """
    cluster {
      job { name: 'ps' tasks { key: 0 value: 'ps0:2222' }
                       tasks { key: 1 value: 'ps1:2222' } }
      job { name: 'worker' tasks { key: 0 value: 'worker0:2222' }
                           tasks { key: 2 value: 'worker2:2222' } }
    }
    job_name: 'worker' task_index: 2 protocol: 'grpc'
    """,
            server_def,
        )

        # Verifies round trip from Proto->Spec->Proto is correct.
        cluster_spec = tf.train.ClusterSpec(cluster_def)
        self.assertProtoEquals(cluster_def, cluster_spec.as_cluster_def())


# -- TensorFlow's ClusterSpecTest ------------------------------------------------------------------
# Source: tensorflow/python/training/server_lib_test.py, class ClusterSpecTest (every method;
# assertNotEquals is assertNotEqual, its alias removed from Python 3.12's unittest).


class ClusterSpecTest(tf.test.TestCase):
    def testStringConversion(self):
        cluster_spec = tf.train.ClusterSpec(
            {"ps": ["ps0:1111"], "worker": ["worker0:3333", "worker1:4444"]}
        )

        expected_str = (
            "ClusterSpec({'ps': ['ps0:1111'], 'worker': ['worker0:3333', 'worker1:4444']})"
        )
        self.assertEqual(expected_str, str(cluster_spec))

    def testProtoDictDefEquivalences(self):
        cluster_spec = tf.train.ClusterSpec(
            {
                "ps": ["ps0:2222", "ps1:2222"],
                "worker": ["worker0:2222", "worker1:2222", "worker2:2222"],
            }
        )

        expected_proto = """
    job { name: 'ps' tasks { key: 0 value: 'ps0:2222' }
                     tasks { key: 1 value: 'ps1:2222' } }
    job { name: 'worker' tasks { key: 0 value: 'worker0:2222' }
                         tasks { key: 1 value: 'worker1:2222' }
                         tasks { key: 2 value: 'worker2:2222' } }
    """

        self.assertProtoEquals(expected_proto, cluster_spec.as_cluster_def())
        self.assertProtoEquals(expected_proto, tf.train.ClusterSpec(cluster_spec).as_cluster_def())
        self.assertProtoEquals(
            expected_proto,
            tf.train.ClusterSpec(cluster_spec.as_cluster_def()).as_cluster_def(),
        )
        self.assertProtoEquals(
            expected_proto, tf.train.ClusterSpec(cluster_spec.as_dict()).as_cluster_def()
        )

    def testProtoDictDefEquivalencesWithZeroWorker(self):
        cluster_spec = tf.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"], "worker": []})

        expected_proto = """
    job { name: 'ps' tasks { key: 0 value: 'ps0:2222' }
                     tasks { key: 1 value: 'ps1:2222' } }
    job { name: 'worker' }
    """

        self.assertProtoEquals(expected_proto, cluster_spec.as_cluster_def())
        self.assertProtoEquals(expected_proto, tf.train.ClusterSpec(cluster_spec).as_cluster_def())
        self.assertProtoEquals(
            expected_proto,
            tf.train.ClusterSpec(cluster_spec.as_cluster_def()).as_cluster_def(),
        )
        self.assertProtoEquals(
            expected_proto, tf.train.ClusterSpec(cluster_spec.as_dict()).as_cluster_def()
        )

    def testClusterSpecAccessors(self):
        original_dict = {
            "ps": ["ps0:2222", "ps1:2222"],
            "worker": ["worker0:2222", "worker1:2222", "worker2:2222"],
            "sparse": {0: "sparse0:2222", 3: "sparse3:2222"},
        }
        cluster_spec = tf.train.ClusterSpec(original_dict)

        self.assertEqual(original_dict, cluster_spec.as_dict())

        self.assertEqual(2, cluster_spec.num_tasks("ps"))
        self.assertEqual(3, cluster_spec.num_tasks("worker"))
        self.assertEqual(2, cluster_spec.num_tasks("sparse"))
        with self.assertRaises(ValueError):
            cluster_spec.num_tasks("unknown")

        self.assertEqual("ps0:2222", cluster_spec.task_address("ps", 0))
        self.assertEqual("sparse0:2222", cluster_spec.task_address("sparse", 0))
        with self.assertRaises(ValueError):
            cluster_spec.task_address("unknown", 0)
        with self.assertRaises(ValueError):
            cluster_spec.task_address("sparse", 2)

        self.assertEqual([0, 1], cluster_spec.task_indices("ps"))
        self.assertEqual([0, 1, 2], cluster_spec.task_indices("worker"))
        self.assertEqual([0, 3], cluster_spec.task_indices("sparse"))
        with self.assertRaises(ValueError):
            cluster_spec.task_indices("unknown")

        # NOTE(mrry): `ClusterSpec.job_tasks()` is not recommended for use
        # with sparse jobs.
        self.assertEqual(["ps0:2222", "ps1:2222"], cluster_spec.job_tasks("ps"))
        self.assertEqual(
            ["worker0:2222", "worker1:2222", "worker2:2222"], cluster_spec.job_tasks("worker")
        )
        self.assertEqual(
            ["sparse0:2222", None, None, "sparse3:2222"], cluster_spec.job_tasks("sparse")
        )
        with self.assertRaises(ValueError):
            cluster_spec.job_tasks("unknown")

    def testEmptyClusterSpecIsFalse(self):
        self.assertFalse(tf.train.ClusterSpec({}))

    def testNonEmptyClusterSpecIsTrue(self):
        self.assertTrue(tf.train.ClusterSpec({"job": ["host:port"]}))

    def testEq(self):
        self.assertEqual(tf.train.ClusterSpec({}), tf.train.ClusterSpec({}))
        self.assertEqual(
            tf.train.ClusterSpec({"job": ["host:2222"]}),
            tf.train.ClusterSpec({"job": ["host:2222"]}),
        )
        self.assertEqual(
            tf.train.ClusterSpec({"job": {0: "host:2222"}}),
            tf.train.ClusterSpec({"job": ["host:2222"]}),
        )

    def testNe(self):
        self.assertNotEqual(tf.train.ClusterSpec({}), tf.train.ClusterSpec({"job": ["host:2223"]}))
        self.assertNotEqual(
            tf.train.ClusterSpec({"job1": ["host:2222"]}),
            tf.train.ClusterSpec({"job2": ["host:2222"]}),
        )
        self.assertNotEqual(
            tf.train.ClusterSpec({"job": ["host:2222"]}),
            tf.train.ClusterSpec({"job": ["host:2223"]}),
        )
        self.assertNotEqual(
            tf.train.ClusterSpec({"job": ["host:2222", "host:2223"]}),
            tf.train.ClusterSpec({"job": ["host:2223", "host:2222"]}),
        )


# -- TensorFlow's GrpcServerTest.testSetConfiguration ----------------------------------------------
# Source: tensorflow/python/training/server_lib_test.py, GrpcServerTest.testSetConfiguration
# (config_pb2 as tf, tensorflow_server_pb2.ServerDef as tf.train.ServerDef; start=False).


class ServerConfigurationTest(tf.test.TestCase):
    def testSetConfiguration(self):
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.1))

        # Configure a server using the default local server options.
        server = tf.train.Server.create_local_server(config=config, start=False)
        gpu_options = server.server_def.default_session_config.gpu_options
        self.assertEqual(0.1, gpu_options.per_process_gpu_memory_fraction)

        # Configure a server using an explicit ServerDefd with an
        # overridden config.
        cluster_def = tf.train.ClusterSpec({"localhost": ["localhost:0"]}).as_cluster_def()
        server_def = tf.train.ServerDef(
            cluster=cluster_def, job_name="localhost", task_index=0, protocol="grpc"
        )
        server = tf.train.Server(server_def, config=config, start=False)
        gpu_options = server.server_def.default_session_config.gpu_options
        self.assertEqual(0.1, gpu_options.per_process_gpu_memory_fraction)


# -- beyond TensorFlow's tests -------------------------------------------------------------------
#: TensorFlow 2.21's ServerDef(cluster=ClusterSpec({"ps": ["ps0:2222"], "worker": {0: "w0:2222",
#: 2: "w2:2222"}}).as_cluster_def(), job_name="worker", task_index=2, protocol="grpc") with
#: default_session_config.gpu_options.per_process_gpu_memory_fraction = 0.5 and
#: allow_soft_placement = True, serialized (TensorFlow writes a map's entries in any order)
TF_SERVER_DEF = (
    b'\n8\n\x12\n\x02ps\x12\x0c\x08\x00\x12\x08ps0:2222\n"\n\x06worker\x12\x0b\x08\x02\x12\x07'
    b'w2:2222\x12\x0b\x08\x00\x12\x07w0:2222\x12\x06worker\x18\x02"\r2\t\t\x00\x00\x00\x00\x00'
    b"\x00\xe0?8\x01*\x04grpc"
)


def test_the_wire_format_is_tensorflows() -> None:
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222"], "worker": {0: "w0:2222", 2: "w2:2222"}})
    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.per_process_gpu_memory_fraction = 0.5
    mine = tf.train.Server(spec, "worker", 2, config=config, start=False).server_def
    theirs = tf.train.ServerDef.FromString(TF_SERVER_DEF)
    assert theirs == mine
    assert theirs.default_session_config.gpu_options.per_process_gpu_memory_fraction == 0.5
    assert tf.train.ServerDef.FromString(mine.SerializeToString()) == theirs
    assert [job.name for job in theirs.cluster.job] == ["ps", "worker"]
    assert dict(theirs.cluster.job[1].tasks) == {0: "w0:2222", 2: "w2:2222"}


def test_the_messages_are_tensorflows_names_and_numbers() -> None:
    server = tf.train.ServerDef.DESCRIPTOR
    assert server.full_name == "tensorflow.ServerDef"
    assert server.file.name == "tensorflow/core/protobuf/tensorflow_server.proto"
    assert {f.name: f.number for f in server.fields} == {
        "cluster": 1,
        "job_name": 2,
        "task_index": 3,
        "default_session_config": 4,
        "protocol": 5,
        "port": 6,
    }
    assert tf.train.ClusterDef.DESCRIPTOR.fields_by_name["job"].number == 1
    tasks = tf.train.JobDef.DESCRIPTOR.fields_by_name["tasks"]
    assert tasks.number == 2 and tasks.message_type.GetOptions().map_entry
    text = 'job { name: "w" tasks { key: 3 value: "h:1" } }'
    assert dict(text_format.Parse(text, tf.train.ClusterDef()).job[0].tasks) == {3: "h:1"}


def test_a_server_from_a_server_def_takes_its_task_and_config() -> None:
    config = tf.ConfigProto(device_count={"GPU": 0}, log_device_placement=True)
    server_def = tf.train.ServerDef(
        cluster=tf.train.ClusterSpec({"ps": ["h:1"], "worker": ["h:2", "h:3"]}).as_cluster_def(),
        job_name="worker",
        task_index=1,
        protocol="grpc",
        default_session_config=protos.config_to_proto(config),
    )
    server = tf.train.Server(server_def, start=False)
    assert (server.job_name, server.task_index, server.address) == ("worker", 1, "h:3")
    assert server.config.device_count == {"GPU": 0} and server.config.log_device_placement
    assert server.server_def == server_def and server.server_def is not server_def
    assert server.cluster_spec == NativeClusterSpec({"ps": ["h:1"], "worker": ["h:2", "h:3"]})
    other = tf.train.Server(server_def, job_name="ps", task_index=0, protocol="grpc+x", start=False)
    assert (other.address, other.server_def.protocol, other.server_def.job_name) == (
        "h:1",
        "grpc+x",
        "ps",
    )
    from_cluster_def = tf.train.Server(server_def.cluster, "ps", start=False)
    assert from_cluster_def.server_def.task_index == 0 and from_cluster_def.address == "h:1"


def test_a_server_is_refused_what_tensorflow_refuses() -> None:
    with pytest.raises(ValueError, match=r"Must specify an explicit `job_name`\."):
        tf.train.Server({"a": ["h:1"], "b": ["h:2"]}, start=False)
    with pytest.raises(ValueError, match=r"Must specify an explicit `task_index`\."):
        tf.train.Server({"a": ["h:1", "h:2"]}, start=False)
    with pytest.raises(TypeError, match="Could not convert `server_or_cluster_def`"):
        tf.train.Server(3, start=False)
    server_def = tf.train.ServerDef(
        cluster=tf.train.ClusterSpec({"a": ["h:1"]}).as_cluster_def(), job_name="a", port=5
    )
    with pytest.raises(tf.errors.UnimplementedError, match=r"ServerDef\.port"):
        tf.train.Server(server_def, start=False)


def test_cluster_spec_repr_and_as_dict_are_tensorflows() -> None:
    """The values TensorFlow 2.21 gives for a spec with an empty job and a sparse one."""
    spec = tf.train.ClusterSpec({"b": [], "a": {1: "x:1"}})
    assert repr(spec) == "ClusterSpec({'a': {1: 'x:1'}, 'b': {}})"
    assert spec.as_dict() == {"b": {}, "a": {1: "x:1"}}
    assert [job.name for job in spec.as_cluster_def().job] == ["a", "b"]
    assert isinstance(spec, NativeClusterSpec) and spec == NativeClusterSpec(spec.as_dict())


class AssertProtoEqualsTest(tf.test.TestCase):
    def test_a_mismatch_fails_with_both_texts(self):
        job = tf.train.JobDef(name="w", tasks={1: "h:1"})
        self.assertProtoEquals("name: 'w' tasks { key: 1 value: 'h:1' }", job)
        self.assertProtoEquals(b"name: 'w' tasks { key: 1 value: 'h:1' }", job)
        with self.assertRaises(AssertionError) as info:
            self.assertProtoEquals("name: 'w' tasks { key: 1 value: 'h:2' }", job)
        self.assertIn('value: "h:2"', str(info.exception))
        self.assertIn('value: "h:1"', str(info.exception))
        with self.assertRaises(AssertionError):
            self.assertProtoEquals(tf.train.JobDef(name="v"), job)
        with self.assertRaisesRegex(AssertionError, "Can't compare protos"):
            self.assertProtoEquals(tf.train.ClusterDef(), job)
