"""Unit tests for ``ClusterSpec``: TensorFlow's cluster description (pure data; nothing starts)."""

from __future__ import annotations

import json

import pytest

import daskgraph.compat.v1 as tf
from daskgraph.cluster.server import ClusterSpec

LISTS = {"worker": ["w0:2222", "w1:2222", "w2:2222"], "ps": ["p0:2222"]}


@pytest.fixture
def spec() -> ClusterSpec:
    return ClusterSpec(LISTS)


# -- forms --------------------------------------------------------------------------------------
def test_list_per_job(spec):
    assert spec.jobs == ["worker", "ps"]
    assert spec.num_tasks("worker") == 3
    assert spec.num_tasks("ps") == 1
    assert spec.task_indices("worker") == [0, 1, 2]
    assert spec.job_tasks("worker") == ["w0:2222", "w1:2222", "w2:2222"]
    assert spec.task_address("worker", 2) == "w2:2222"
    assert spec.task_address("ps", 0) == "p0:2222"


def test_tuple_per_job_is_a_list():
    assert ClusterSpec({"worker": ("a:1", "b:2")}) == ClusterSpec({"worker": ["a:1", "b:2"]})


def test_dict_index_to_address_equals_the_list_form():
    dense = ClusterSpec(
        {"worker": {1: "w1:2222", 0: "w0:2222", 2: "w2:2222"}, "ps": {0: "p0:2222"}}
    )
    assert dense == ClusterSpec(LISTS)
    assert dense.task_indices("worker") == [0, 1, 2]  # sorted, whatever the dict's order
    assert dense.as_dict() == LISTS


def test_sparse_dict_has_gaps():
    spec = ClusterSpec({"worker": {1: "w1:2222", 3: "w3:2222"}, "ps": ["p0:2222"]})
    assert spec.num_tasks("worker") == 2
    assert spec.task_indices("worker") == [1, 3]
    assert spec.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert spec.task_address("worker", 3) == "w3:2222"
    with pytest.raises(ValueError, match=r"index 0 in job 'worker'"):
        spec.task_address("worker", 0)
    with pytest.raises(ValueError, match=r"index 2 in job 'worker'"):
        spec.task_address("worker", 2)


def test_mixed_forms_and_empty_job():
    spec = ClusterSpec({"chief": ["c:1"], "worker": {2: "w2:1"}, "evaluator": []})
    assert spec.jobs == ["chief", "worker", "evaluator"]
    assert spec.num_tasks("evaluator") == 0
    assert spec.task_indices("evaluator") == []
    assert spec.job_tasks("evaluator") == []
    assert spec.as_dict() == {"chief": ["c:1"], "worker": {2: "w2:1"}, "evaluator": []}


def test_jobs_keep_the_order_given():
    order = ["ps", "worker", "chief", "evaluator"]
    spec = ClusterSpec({job: [f"{job}:1"] for job in order})
    assert spec.jobs == order
    assert spec.scheduler_address() == "tcp://ps:1"  # first task of the first job


def test_addresses_with_scheme_and_ipv6_are_accepted():
    spec = ClusterSpec({"w": ["tcp://10.0.0.1:2222", "[::1]:2223", "node-3.example.org:80"]})
    assert spec.job_tasks("w") == ["tcp://10.0.0.1:2222", "[::1]:2223", "node-3.example.org:80"]


def test_copy_constructor():
    spec = ClusterSpec(LISTS)
    copy = ClusterSpec(spec)
    assert copy == spec
    assert copy is not spec


def test_compat_train_names_are_the_native_classes_with_tf_protos():
    assert issubclass(tf.train.ClusterSpec, ClusterSpec)  # plus ClusterDefs (test_compat_protos)
    assert tf.train.ClusterSpec(LISTS).num_tasks("worker") == 3


# -- as_dict, equality, truth, repr --------------------------------------------------------------
@pytest.mark.parametrize(
    "cluster",
    [
        LISTS,
        {"worker": {1: "w1:1", 3: "w3:1"}},
        {"a": ["x:1"], "b": {0: "y:1", 5: "z:1"}, "c": []},
        {},
    ],
    ids=["lists", "sparse", "mixed", "empty"],
)
def test_as_dict_round_trip(cluster):
    spec = ClusterSpec(cluster)
    assert ClusterSpec(spec.as_dict()) == spec
    assert spec.as_dict() == cluster
    assert list(spec.as_dict()) == list(cluster)  # job order too


def test_as_dict_survives_json_for_list_jobs():
    spec = ClusterSpec(LISTS)
    assert ClusterSpec(json.loads(json.dumps(spec.as_dict()))) == spec


def test_as_dict_is_a_copy(spec):
    spec.as_dict()["worker"].append("evil:1")
    assert spec.num_tasks("worker") == 3


def test_equality():
    assert ClusterSpec(LISTS) == ClusterSpec({"ps": ["p0:2222"], **LISTS})  # same tasks
    assert ClusterSpec(LISTS) != ClusterSpec({"worker": ["w0:2222"], "ps": ["p0:2222"]})
    assert ClusterSpec({"w": ["a:1"]}) != ClusterSpec({"w": ["b:1"]})
    assert ClusterSpec({"w": ["a:1"]}) != ClusterSpec({"v": ["a:1"]})
    assert ClusterSpec({"w": {1: "a:1"}}) != ClusterSpec({"w": ["a:1"]})
    assert ClusterSpec(LISTS) != LISTS  # a spec is not a dict


def test_truth_and_repr():
    assert ClusterSpec(LISTS)
    assert not ClusterSpec({})
    text = repr(ClusterSpec({"w": ["a:1"]}))
    assert text.startswith("ClusterSpec(") and "'w'" in text and "'a:1'" in text


# -- scheduler_address ----------------------------------------------------------------------------
def test_scheduler_address_is_the_first_task_of_the_first_job(spec):
    assert spec.scheduler_address() == "tcp://w0:2222"
    assert spec.scheduler_address("tls") == "tls://w0:2222"


def test_scheduler_address_of_a_sparse_first_job_is_its_lowest_index():
    spec = ClusterSpec({"worker": {3: "w3:9", 1: "w1:9"}, "ps": ["p:9"]})
    assert spec.scheduler_address() == "tcp://w1:9"
    assert spec.scheduler_address("tls") == "tls://w1:9"


def test_scheduler_address_keeps_an_explicit_scheme():
    assert ClusterSpec({"w": ["tls://a:1"]}).scheduler_address() == "tls://a:1"


def test_scheduler_address_of_an_empty_spec_raises():
    with pytest.raises(ValueError, match="empty"):
        ClusterSpec({}).scheduler_address()


def test_scheduler_address_when_the_first_job_has_no_tasks():
    spec = ClusterSpec({"evaluator": [], "worker": ["w0:1"]})
    try:
        address = spec.scheduler_address()
    except ValueError as exc:
        assert "empty" not in str(exc) and "'evaluator'" in str(exc), str(exc)
    else:
        assert address == "tcp://w0:1"


# -- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("cluster", [["w:1"], "w:1", None, 42, [("w", ["a:1"])]])
def test_not_a_dict(cluster):
    with pytest.raises(TypeError, match="ClusterSpec expects a dict"):
        ClusterSpec(cluster)


@pytest.mark.parametrize("job", ["", "1worker", "work er", "job/x", "w:1", "-w", 7, None, ("w",)])
def test_bad_job_names_are_named(job):
    with pytest.raises(ValueError, match="job name") as info:
        ClusterSpec({job: ["a:1"]})
    assert repr(job) in str(info.value)


@pytest.mark.parametrize("tasks", ["a:1", 3, None, {"a:1"}])
def test_tasks_of_a_job_must_be_a_list_or_dict(tasks):
    with pytest.raises(TypeError, match=r"tasks of job 'worker'"):
        ClusterSpec({"worker": tasks})


@pytest.mark.parametrize("address", [None, 2222, b"h:1"])
def test_addresses_that_are_not_strings_are_named_with_their_task(address):
    with pytest.raises(ValueError, match=r"/job:worker/task:1") as info:
        ClusterSpec({"worker": ["ok:1", address]})
    assert repr(address) in str(info.value)


@pytest.mark.parametrize(
    "address", ["host", "host:", ":2222", "host:port", "host:22:33", "a/b:1", "", "tcp://"]
)
def test_any_address_string_is_accepted_as_tensorflow_does(address):
    # TensorFlow's ClusterSpec takes any string; the Server of that task refuses it
    assert ClusterSpec({"worker": ["ok:1", address]}).task_address("worker", 1) == address


def test_bad_address_in_a_dict_is_refused_by_its_server_not_the_spec():
    from daskgraph.cluster.server import Server
    from daskgraph.errors import InvalidArgumentError

    spec = ClusterSpec({"ps": {7: "nope"}})
    with pytest.raises(
        InvalidArgumentError, match='Could not parse port for local server from "nope"'
    ):
        Server(spec, "ps", 7, start=False)


@pytest.mark.parametrize("index", [-1, True, False, 1.0, None, "x"])
def test_bad_task_indices_are_named_with_their_job(index):
    with pytest.raises(ValueError, match=r"task index .* of job 'ps'") as info:
        ClusterSpec({"ps": {index: "a:1"}})
    assert repr(index) in str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.num_tasks("nope"),
        lambda s: s.task_indices("nope"),
        lambda s: s.job_tasks("nope"),
        lambda s: s.task_address("nope", 0),
    ],
    ids=["num_tasks", "task_indices", "job_tasks", "task_address"],
)
def test_unknown_job_is_named_with_the_jobs_there_are(spec, call):
    with pytest.raises(ValueError, match=r"No such job in cluster: 'nope'") as info:
        call(spec)
    assert "'worker'" in str(info.value) and "'ps'" in str(info.value)


def test_unknown_task_index(spec):
    with pytest.raises(ValueError, match=r"No task with index 3 in job 'worker'"):
        spec.task_address("worker", 3)
    with pytest.raises(ValueError, match=r"No task with index -1 in job 'worker'"):
        spec.task_address("worker", -1)


def test_task_address_rejects_bool_index(spec):
    with pytest.raises(TypeError, match="task index must be an int"):
        spec.task_address("worker", True)


def test_sparse_dict_from_json_has_string_indices():
    """JSON (cluster.json, TF_CONFIG) has string keys: TensorFlow takes int(index) too."""
    spec = ClusterSpec(json.loads('{"worker": ["w0:1"], "ps": {"3": "p3:1", "1": "p1:1"}}'))
    assert spec.task_indices("ps") == [1, 3]
    assert spec.task_address("ps", 3) == "p3:1"
    assert spec.job_tasks("ps") == [None, "p1:1", None, "p3:1"]
    assert spec == ClusterSpec({"worker": ["w0:1"], "ps": {1: "p1:1", 3: "p3:1"}})
    assert ClusterSpec(json.loads(json.dumps({"w": {"0": "a:1", "1": "b:1"}}))).as_dict() == {
        "w": ["a:1", "b:1"]
    }


@pytest.mark.parametrize("index", ["-1", "x", "1.0", " 1", ""])
def test_string_indices_must_be_digits(index):
    with pytest.raises(ValueError, match=r"task index .* of job 'ps'"):
        ClusterSpec({"ps": {index: "a:1"}})
