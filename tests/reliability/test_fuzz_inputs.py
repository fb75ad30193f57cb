"""Fuzzed inputs at the door: device strings, feeds, fetch structures and run arguments.

Every generated input either runs and matches NumPy, or is refused with a clear error that
names it; none corrupts data silently, hangs, or escapes as an unrelated exception. The
oracles are independent of daskgraph's own checks: a feed "fits" when every element, converted
one at a time with Python's exact integers and floats, comes back unchanged (or, for floats,
does not overflow to infinity).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from distributed import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import daskgraph as dg
from daskgraph.cluster.local import local_cluster
from daskgraph.errors import quote
from daskgraph.framework.device import DeviceSpec
from daskgraph.runtime.client.fetches import MAX_FETCH_DEPTH

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# distributed's threads draw from the random module while hypothesis generates examples
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
FEED_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]


@pytest.fixture(scope="module")
def client():
    cluster = local_cluster(virtual_gpus=1, processes=False, cpu_threads=2)
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(2, timeout=60)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def graph_and_session(client):
    """One placeholder per dtype on the virtual GPU, each read on the CPU (feeds cross
    devices), and a session over them."""
    with dg.Graph().as_default() as graph:
        pairs = {}
        for name in FEED_DTYPES:
            with dg.device("/gpu:0"):
                fed = dg.placeholder(dg.as_dtype(name), [None], name=f"p_{name}")
            with dg.device("/cpu:0"):
                pairs[name] = (fed, dg.identity(fed, name=f"read_{name}"))
        session = dg.Session(client, graph=graph)
    yield graph, session, pairs
    session.close()


# -- device strings ----------------------------------------------------------------------
_FIELD = st.one_of(
    st.sampled_from(["job:worker", "job:ps", "job:", "job:9x", "replica:0", "task:1"]),
    st.builds(lambda n: f"task:{n}", st.integers(-5, 2**70)),
    st.builds(lambda n: f"replica:{n}", st.integers(-5, 2**70)),
    st.builds(
        lambda t, n: f"{t}:{n}",
        st.sampled_from(["gpu", "GPU", "cpu", "device:GPU"]),
        st.one_of(st.integers(0, 3), st.integers(2**31, 2**80), st.just("*")),
    ),
    st.builds(lambda k: "gpu:" + "9" * k, st.integers(1, 6000)),
    st.text(alphabet="/:*abcdegjkoprstuvwxCGPU0123456789-_ ", max_size=40),
)
_VALID = st.builds(
    lambda job, task, kind, index: "".join(
        [f"/job:{job}" if job else "", f"/task:{task}" if task is not None else "", kind, index]
    ),
    st.sampled_from([None, "worker", "localhost", "ps"]),
    st.one_of(st.none(), st.integers(0, 3)),
    st.sampled_from(["/gpu:", "/GPU:", "/cpu:", "/device:GPU:", "/device:CPU:", "/device:TPU:"]),
    st.sampled_from(["0", "1", "3", "*"]),
)
DEVICE_STRINGS = st.one_of(
    _VALID,
    st.builds(
        lambda parts, lead: ("/" if lead else "") + "/".join(parts),
        st.lists(_FIELD, max_size=5),
        st.booleans(),
    ),
    st.text(max_size=60),
)


@FUZZ
@given(spec=DEVICE_STRINGS)
def test_fuzzed_device_strings_parse_or_are_refused_quoting_the_input(tally, spec):
    """A device string either parses to a spec that prints and re-parses to itself, or is
    refused with a ValueError that quotes it (shortened when long)."""
    scenario = tally.scenario("fuzzed device strings: parse", limit_s=1.0, expect="either")
    with scenario.trial() as trial:
        parsed = trial.run(lambda: DeviceSpec.from_string(spec), mentions=[quote(spec)[:40]])
        trial.check(str(DeviceSpec.from_string(parsed.to_string())), str(parsed))
    scenario.verify()


@settings(FUZZ, max_examples=80)
@given(spec=DEVICE_STRINGS)
def test_fuzzed_device_scopes_run_or_fail_clearly(tally, client, spec):
    """An op pinned to a fuzzed device runs (with soft placement) and computes its value, or
    the scope or the run is refused with a clear error."""
    scenario = tally.scenario("fuzzed device strings: run", limit_s=10.0, expect="either")
    config = dg.SessionConfig(allow_soft_placement=True)
    with dg.Graph().as_default() as graph, scenario.trial() as trial:

        def build():
            with dg.device(spec):
                return dg.constant(np.arange(4.0, dtype=np.float32)) * 2.0

        out = trial.run(build, mentions=[quote(spec)[:40]])
        with dg.Session(client, graph=graph, config=config) as session:
            value = trial.run(lambda: session.run(out), timeout=30)
        trial.check(value, np.arange(4.0, dtype=np.float32) * 2.0)
    scenario.verify()


# -- feeds --------------------------------------------------------------------------------
def _fits(values: np.ndarray, target: np.dtype) -> bool:
    """Whether every element survives conversion to ``target``, element by element: an integer
    (or a whole float) within the target's range, an integer a float type holds exactly, a float
    into a float type without overflowing to infinity (rounding is TensorFlow's, allowed)."""
    for x in values.tolist():
        if target.kind in "iu":
            info = np.iinfo(target)
            if isinstance(x, float) and (not math.isfinite(x) or x != int(x)):
                return False
            if not info.min <= int(x) <= info.max:
                return False
            continue
        with np.errstate(all="ignore"):
            y = np.array([x]).astype(values.dtype).astype(target)[0].item()
        if values.dtype.kind in "iub" and (not math.isfinite(y) or int(y) != int(x)):
            return False  # integer to float: exact, and finite
        if values.dtype.kind == "f" and math.isinf(y) and math.isfinite(x):
            return False  # float to float: no overflow
    return True


FEED_VALUES = st.sampled_from([*FEED_DTYPES, "uint16", "uint32", "uint64", "bool"]).flatmap(
    lambda name: hnp.arrays(np.dtype(name), st.integers(0, 6))
)


@FUZZ
@given(target=st.sampled_from(FEED_DTYPES), value=FEED_VALUES)
def test_fuzzed_feeds_arrive_exactly_or_are_refused(tally, graph_and_session, target, value):
    """A fed array arrives on another device exactly as NumPy converts it when every value
    fits the placeholder's dtype (whole floats become integers, as TensorFlow's feeds do);
    otherwise the feed is refused naming the placeholder, the value's dtype and the
    placeholder's dtype."""
    _, session, pairs = graph_and_session
    fed, read = pairs[target]
    fits = _fits(value, np.dtype(target))
    scenario = tally.scenario("fuzzed feeds", limit_s=10.0, expect="either")
    with scenario.trial() as trial:
        mentions = [fed.name, str(value.dtype), target]
        got = trial.run(lambda: session.run(read, {fed: value}), timeout=30, mentions=mentions)
        if not fits:
            trial.check("ran", "refused")  # a feed that does not fit ran: silent corruption
        with np.errstate(all="ignore"):
            trial.check(got, value.astype(target))
    scenario.verify()
    if fits and scenario.trials[-1].outcome != "correct":
        pytest.fail(f"a feed that fits was refused: {scenario.trials[-1].detail}")


@pytest.mark.parametrize(
    "target, value",
    [
        ("int32", np.array([2**40], np.int64)),
        ("int32", np.array([np.iinfo(np.uint64).max], np.uint64)),
        ("float16", np.array([1e10])),
        ("float32", np.array([2**53 + 1], np.int64)),
        ("uint8", np.array([-1], np.int16)),
    ],
)
def test_lossy_feeds_are_refused(tally, graph_and_session, target, value):
    """The reported silent conversions: each is refused naming the placeholder and dtypes."""
    _, session, pairs = graph_and_session
    fed, read = pairs[target]
    scenario = tally.scenario("lossy feeds (reported cases)", limit_s=5.0, expect="clear error")
    with scenario.trial() as trial:
        mentions = [fed.name, str(value.dtype), target]
        trial.run(lambda: session.run(read, {fed: value}), timeout=30, mentions=mentions)
    scenario.verify()


def test_one_tensor_fed_under_two_keys_is_refused(tally, graph_and_session):
    _, session, pairs = graph_and_session
    fed, read = pairs["float32"]
    scenario = tally.scenario("one tensor fed under two keys", limit_s=5.0, expect="clear error")
    for key in (fed.name, fed.name.split(":")[0] + ":0"):
        with scenario.trial() as trial:
            feeds = {fed: np.ones(2, np.float32), key: np.zeros(2, np.float32)}
            trial.run(lambda f=feeds: session.run(read, f), timeout=30, mentions=["fed twice"])
    scenario.verify()


# -- fetch structures and run arguments --------------------------------------------------
def _nest(depth: int, leaf: Any, kinds: list[str]) -> Any:
    value = leaf
    for level in range(depth):
        kind = kinds[level % len(kinds)]
        value = {"k": value} if kind == "dict" else [value] if kind == "list" else (value,)
    return value


@settings(FUZZ, max_examples=60)
@given(
    depth=st.one_of(st.integers(0, 120), st.integers(120, 6000)),
    kinds=st.lists(st.sampled_from(["list", "tuple", "dict"]), min_size=1, max_size=3),
    cycle=st.booleans(),
)
def test_fuzzed_fetch_structures(tally, graph_and_session, depth, kinds, cycle):
    """Nested fetches come back in their structure up to the depth limit; deeper ones and
    ones that contain themselves are refused with a ValueError."""
    _, session, pairs = graph_and_session
    fed, read = pairs["float32"]
    fetches = _nest(depth, read, kinds)
    if cycle and depth:
        fetches = [fetches]
        fetches.append(fetches)
    expected = _nest(depth, np.ones(3, np.float32), kinds)
    scenario = tally.scenario("fuzzed fetch structures", limit_s=10.0, expect="either")
    with scenario.trial() as trial:
        got = trial.run(lambda: session.run(fetches, {fed: np.ones(3, np.float32)}), timeout=30)
        if cycle and depth:
            trial.check("ran", "refused")
        trial.check(got, expected)
    scenario.verify()
    if depth + 1 < MAX_FETCH_DEPTH and not cycle:
        assert scenario.trials[-1].outcome == "correct", scenario.trials[-1].detail


RUN_ARGUMENTS = st.one_of(
    st.text(max_size=10),
    st.integers(),
    st.floats(),
    st.lists(st.integers(), max_size=3),
    st.builds(object),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(FUZZ, max_examples=40)
@given(name=st.sampled_from(["options", "run_metadata"]), value=RUN_ARGUMENTS)
def test_fuzzed_run_arguments_are_refused_by_name(tally, graph_and_session, name, value):
    _, session, pairs = graph_and_session
    fed, read = pairs["float32"]
    scenario = tally.scenario("fuzzed options / run_metadata", limit_s=5.0, expect="clear error")
    with scenario.trial() as trial:
        kwargs = {name: value}
        trial.run(
            lambda: session.run(read, {fed: np.ones(1, np.float32)}, **kwargs),
            timeout=30,
            mentions=[name],
        )
    scenario.verify()
