"""tf.train.ClusterDef, JobDef and ServerDef, ClusterSpec.as_cluster_def, Server.server_def and
tf.test.TestCase.assertProtoEquals with ``tf`` being daskgraph's compat.v1: what TensorFlow's
server_lib tests also check (a ServerDef's cluster and task, a ClusterSpec's forms, accessors,
truth and equality, a server's session config), values TensorFlow 2.21 gives, and the wire
format against bytes TensorFlow 2.21 serialized. No server is started."""

from __future__ import annotations

import pytest
from google.protobuf import text_format

import daskgraph.compat.v1 as tf
from daskgraph.cluster.cluster_spec import ClusterSpec as NativeClusterSpec
from daskgraph.compat import protos

# -- ServerDef and ClusterSpec, behaviours TensorFlow's server_lib tests also check ---------------
#: name -> (the spec as a dict, the server's job, its task index)
SPECS = {
    "one task": ({"chief": ["10.0.0.1:5000"]}, "chief", 0),
    "two tasks of a job": ({"trainer": ["h1:7001", "h1:7002"]}, "trainer", 1),
    "three jobs": (
        {"param": ["p0:90", "p1:90", "p2:90"], "eval": ["e:1"], "io": ["q:3", "r:3"]},
        "param",
        2,
    ),
    "a sparse job": ({"gaps": {1: "g1:80", 4: "g4:80"}, "full": ["f0:80"]}, "gaps", 4),
}


def _as_tasks(tasks: list | dict) -> dict[int, str]:
    """A job's tasks as ClusterDef holds them: task index -> address."""
    return dict(enumerate(tasks)) if isinstance(tasks, list) else dict(tasks)


@pytest.mark.parametrize("name", list(SPECS))
def test_a_server_def_holds_the_cluster_and_the_task(name: str) -> None:
    jobs, job_name, task_index = SPECS[name]
    cluster_def = tf.train.ClusterSpec(jobs).as_cluster_def()
    server_def = tf.train.ServerDef(
        cluster=cluster_def, job_name=job_name, task_index=task_index, protocol="grpc"
    )
    assert [job.name for job in server_def.cluster.job] == sorted(jobs)  # jobs sorted by name
    assert {job.name: dict(job.tasks) for job in server_def.cluster.job} == {
        key: _as_tasks(tasks) for key, tasks in jobs.items()
    }
    assert (server_def.job_name, server_def.task_index, server_def.protocol) == (
        job_name,
        task_index,
        "grpc",
    )
    again = tf.train.ClusterSpec(cluster_def)  # ClusterDef -> ClusterSpec -> ClusterDef
    assert again.as_cluster_def() == cluster_def
    assert again.as_cluster_def().SerializeToString(deterministic=True) == (
        cluster_def.SerializeToString(deterministic=True)
    )


@pytest.mark.parametrize("name", list(SPECS))
def test_a_cluster_spec_is_the_same_from_each_of_its_forms(name: str) -> None:
    spec = tf.train.ClusterSpec(SPECS[name][0])
    expected = spec.as_cluster_def()
    for form in (spec, spec.as_cluster_def(), spec.as_dict()):
        rebuilt = tf.train.ClusterSpec(form)
        assert rebuilt.as_cluster_def() == expected
        assert rebuilt == spec


def test_a_job_without_tasks_stays_in_the_cluster_def() -> None:
    spec = tf.train.ClusterSpec({"idle": [], "busy": ["b:1"]})
    cluster_def = spec.as_cluster_def()
    assert [(job.name, dict(job.tasks)) for job in cluster_def.job] == [
        ("busy", {0: "b:1"}),
        ("idle", {}),
    ]
    for form in (spec, cluster_def, spec.as_dict()):
        assert tf.train.ClusterSpec(form).as_cluster_def() == cluster_def
    assert spec.as_dict() == {"idle": {}, "busy": ["b:1"]}  # TensorFlow 2.21's, as given
    assert (spec.num_tasks("idle"), spec.task_indices("idle")) == (0, [])


def test_cluster_spec_str_lists_jobs_by_name() -> None:
    spec = tf.train.ClusterSpec({"w": ["a:1", "b:2"], "c": ["x:9"]})
    assert str(spec) == "ClusterSpec({'c': ['x:9'], 'w': ['a:1', 'b:2']})"  # TensorFlow 2.21's


def test_cluster_spec_answers_about_jobs_and_tasks() -> None:
    jobs = {
        "dense": ["d0:1", "d1:1"],
        "holes": {2: "h2:1", 5: "h5:1"},
        "single": ["s:1"],
    }
    spec = tf.train.ClusterSpec(jobs)
    assert spec.as_dict() == jobs
    assert spec.jobs == ["dense", "holes", "single"]
    answers = {
        job: (spec.num_tasks(job), spec.task_indices(job), spec.job_tasks(job)) for job in jobs
    }
    assert answers == {
        "dense": (2, [0, 1], ["d0:1", "d1:1"]),
        "holes": (2, [2, 5], [None, None, "h2:1", None, None, "h5:1"]),  # gaps as None
        "single": (1, [0], ["s:1"]),
    }
    assert [spec.task_address("holes", 5), spec.task_address("dense", 1)] == ["h5:1", "d1:1"]
    for ask in (spec.num_tasks, spec.task_indices, spec.job_tasks):
        with pytest.raises(ValueError, match="No such job in cluster: 'nowhere'"):
            ask("nowhere")
    with pytest.raises(ValueError, match="No such job in cluster: 'nowhere'"):
        spec.task_address("nowhere", 0)
    for job, index in (("holes", 3), ("dense", 2)):
        with pytest.raises(ValueError, match=f"No task with index {index} in job '{job}'"):
            spec.task_address(job, index)


def test_cluster_spec_truth_and_equality() -> None:
    ClusterSpec = tf.train.ClusterSpec
    assert not ClusterSpec({}) and bool(ClusterSpec({"j": ["h:1"]}))
    same = [
        (ClusterSpec({}), ClusterSpec({})),
        (ClusterSpec({"j": ["h:1", "h:2"]}), ClusterSpec({"j": {0: "h:1", 1: "h:2"}})),
        (ClusterSpec({"a": ["x:1"], "b": ["y:1"]}), ClusterSpec({"b": ["y:1"], "a": ["x:1"]})),
    ]
    different = [
        (ClusterSpec({}), ClusterSpec({"j": ["h:1"]})),
        (ClusterSpec({"j": ["h:1"]}), ClusterSpec({"k": ["h:1"]})),  # another job name
        (ClusterSpec({"j": ["h:1"]}), ClusterSpec({"j": ["h:9"]})),  # another address
        (ClusterSpec({"j": ["h:1", "h:2"]}), ClusterSpec({"j": ["h:2", "h:1"]})),  # order
        (ClusterSpec({"j": ["h:1"]}), ClusterSpec({"j": {1: "h:1"}})),  # another index
    ]
    assert all(left == right and not left != right for left, right in same)
    assert all(left != right and not left == right for left, right in different)


def test_a_server_keeps_its_session_config_in_its_server_def() -> None:
    config = tf.ConfigProto(
        gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.3, allow_growth=True),
        allow_soft_placement=True,
    )
    local = tf.train.Server.create_local_server(config=config, start=False)
    server_def = tf.train.ServerDef(
        cluster=tf.train.ClusterSpec({"solo": ["localhost:0"]}).as_cluster_def(),
        job_name="solo",
        task_index=0,
        protocol="grpc",
    )
    explicit = tf.train.Server(server_def, config=config, start=False)
    for server in (local, explicit):
        kept = server.server_def.default_session_config
        assert kept.gpu_options.per_process_gpu_memory_fraction == pytest.approx(0.3)
        assert kept.gpu_options.allow_growth and kept.allow_soft_placement
    assert not tf.train.Server(server_def, start=False).server_def.HasField(
        "default_session_config"
    )


# -- the wire format, servers and assertProtoEquals ------------------------------------------------
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
    def test_a_server_def_equals_its_text(self):
        cluster = tf.train.ClusterSpec({"ps": ["p:1"], "worker": {3: "w3:1"}}).as_cluster_def()
        server_def = tf.train.ServerDef(
            cluster=cluster, job_name="worker", task_index=3, protocol="grpc"
        )
        self.assertProtoEquals(
            """job_name: "worker" task_index: 3 protocol: "grpc"
               cluster { job { name: "ps" tasks { key: 0 value: "p:1" } }
                         job { name: "worker" tasks { key: 3 value: "w3:1" } } }""",
            server_def,
        )
        self.assertProtoEquals(cluster, server_def.cluster)
        with self.assertRaises(AssertionError):
            self.assertProtoEquals("job_name: 'worker' task_index: 2", server_def)

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
