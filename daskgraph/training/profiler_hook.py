"""TensorFlow 1's ``tf.train.ProfilerHook``: traced runs written as Chrome traces.

Every ``save_steps`` steps or ``save_secs`` seconds the hook asks a monitored session's run
for a full trace (``RunOptions(trace_level=FULL_TRACE)``) and writes what the run's
``step_stats`` recorded (:class:`daskgraph.runtime.worker.execution.DeviceStepStats`: per partition
its
device and each op's start and duration) to ``output_dir/timeline-<global step>.json`` in
the Chrome Trace Format of TensorFlow's ``timeline`` module (``chrome://tracing`` or Perfetto
show it): a ``<device> Compute`` process per device with one complete event per op
(``name``: the op type, ``args``: its name and type), and, with ``show_dataflow``, a flow
arrow for each tensor sent from one device to another.

>>> from daskgraph.runtime.worker.execution import DeviceStepStats, NodeStats
>>> from daskgraph.runtime.client.session import StepStats
>>> node = NodeStats("a", "Const", all_start_micros=10, op_end_rel_micros=2)
>>> step_stats = StepStats([DeviceStepStats("/device:CPU:0", "tcp://w:1", (node,))])
>>> trace = json.loads(chrome_trace(step_stats))["traceEvents"]
>>> [(e["ph"], e["name"], e.get("args")) for e in trace][1:3]
[('M', 'process_name', {'name': '/device:CPU:0 Compute'}), ('M', 'process_name', {'name': \
'/device:CPU:0 Tensors'})]
>>> trace[-1]
{'ph': 'X', 'cat': 'Op', 'name': 'Const', 'pid': 1, 'tid': 0, 'ts': 10, 'dur': 2, 'args': \
{'name': 'a', 'op': 'Const'}}
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from daskgraph.framework.graph import Graph, get_default_graph
from daskgraph.runtime.client.session import RunOptions
from daskgraph.training.global_step import get_global_step
from daskgraph.training.session_hooks import (
    SecondOrStepTimer,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
)

__all__ = ["ProfilerHook", "chrome_trace"]

logger = logging.getLogger("tensorflow")


def chrome_trace(step_stats: Any, graph: Graph | None = None, show_dataflow: bool = True) -> str:
    """``step_stats`` of a traced run in the Chrome Trace Format, as TensorFlow's
    ``Timeline.generate_chrome_trace_format``: process ids 0 (``Allocators``), then two per
    device (``<device> Compute``, ``<device> Tensors``). With ``show_dataflow`` and the run's
    ``graph``, a flow (``s``/``t`` events) joins each producer to its consumers on another
    device."""
    metadata: list[dict] = [_process("Allocators", 0)]
    events: list[dict] = []
    ran: dict[str, tuple[int, int]] = {}  # op name -> (its device's pid, its end)
    for index, device in enumerate(step_stats.dev_stats):
        pid = 1 + 2 * index
        metadata += [_process(f"{device.device} Compute", pid)]
        metadata += [_process(f"{device.device} Tensors", pid + 1)]
        for node in device.node_stats:
            start, duration = node.all_start_micros, node.op_end_rel_micros
            args = {"name": node.node_name, "op": node.op_type}
            events.append(_region(start, duration, pid, node.op_type, args))
            ran[node.node_name] = (pid, start + duration)
    if show_dataflow and graph is not None:
        events += _flows(step_stats, graph, ran)
    return json.dumps({"traceEvents": metadata + events}, indent=4, separators=(",", ": "))


def _process(name: str, pid: int) -> dict:
    return {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}


def _region(start: int, duration: int, pid: int, name: str, args: dict) -> dict:
    return {"ph": "X", "cat": "Op", "name": name, "pid": pid, "tid": 0, "ts": start,
            "dur": duration, "args": args}  # fmt: skip


def _flows(step_stats: Any, graph: Graph, ran: dict[str, tuple[int, int]]) -> list[dict]:
    """A flow from each producer to each consumer that ran on another device."""
    events = []
    for device in step_stats.dev_stats:
        for node in device.node_stats:
            try:
                op = graph.get_operation_by_name(node.node_name)
            except KeyError:
                continue
            pid, _ = ran[node.node_name]
            for tensor in op.inputs:
                source = ran.get(tensor.op.name)
                if source is None or source[0] == pid:
                    continue
                flow_id = len(events) // 2
                common = {"cat": "DataFlow", "name": tensor.name, "id": flow_id, "tid": 0}
                events.append({"ph": "s", "pid": source[0], "ts": source[1], **common})
                events.append({"ph": "t", "pid": pid, "ts": node.all_start_micros, **common})
    return events


class ProfilerHook(SessionRunHook):
    """Writes a Chrome trace of a run every ``save_steps`` steps or ``save_secs`` seconds
    to ``output_dir/timeline-<global step>.json`` (TensorFlow's ``ProfilerHook``).

    ``show_memory`` (tensors' sizes and lifetimes) is not recorded by daskgraph's traces: it
    is refused.
    """

    def __init__(
        self,
        save_steps: int | None = None,
        save_secs: float | None = None,
        output_dir: str = "",
        show_dataflow: bool = True,
        show_memory: bool = False,
    ) -> None:
        if show_memory:
            raise ValueError(
                "ProfilerHook: show_memory is not supported (daskgraph's traces record no "
                "tensor allocations)"
            )
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._show_dataflow = show_dataflow
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self) -> None:
        """Find the global step (and the graph, for the dataflow)."""
        self._next_step: int | None = None
        self._global_step_tensor = get_global_step()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use ProfilerHook.")
        self._graph = get_default_graph()

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        """Fetch the global step; ask for a full trace when a timeline is due."""
        self._request_summary = self._next_step is not None and (
            self._timer.should_trigger_for_step(self._next_step)
        )
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request_summary else None
        return SessionRunArgs({"global_step": self._global_step_tensor}, options=options)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        """Write the run's timeline when it was traced."""
        stale_global_step = int(run_values.results["global_step"])
        if self._next_step is None:
            self._timer.update_last_triggered_step(stale_global_step)
        global_step = stale_global_step + 1
        if self._request_summary:
            global_step = int(run_context.session.run(self._global_step_tensor))
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, run_values.run_metadata.step_stats)
        self._next_step = global_step + 1

    def _save(self, step: int, step_stats: Any) -> None:
        path = self._output_file.format(step)
        logger.info("Saving timeline for %d into '%s'.", step, path)
        with open(path, "w", encoding="utf-8") as out:
            out.write(chrome_trace(step_stats, self._graph, self._show_dataflow))
