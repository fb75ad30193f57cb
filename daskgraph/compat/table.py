"""docs/compat.md from the code: which of TensorFlow 1's names ``daskgraph.compat.v1`` has.

Its one job is to write that table. For every name of the snapshot of ``tf.compat.v1``
(``tf1_api.json`` next to this module, written by ``docs/tools/tf1_names.py`` where TensorFlow
is installed) it looks the name up in :mod:`daskgraph.compat.v1` and its namespaces
(``tf.nn.relu`` is ``v1.nn.relu``) and says:

* **supported**: daskgraph has it;
* **partial**: it has it, with a known difference (:data:`DIFFERENCES`); a namespace that
  lacks some of its names is partial too;
* **missing**: it has not.

A last section lists the compatibility suite (tests/compat_suite: public TF1 programs run with
only their import changed) from the programs' own headers. Regenerate the page with::

    python -m daskgraph.compat.table > docs/compat.md

>>> status("", "Session")[0], status("", "sparse_mask")[0]
('partial', 'missing')
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DIFFERENCES",
    "Entry",
    "SuiteProgram",
    "entries",
    "render",
    "resolve",
    "status",
    "suite_programs",
]

SNAPSHOT = pathlib.Path(__file__).with_name("tf1_api.json")
SUITE = pathlib.Path(__file__).resolve().parents[2] / "tests" / "compat_suite"
STATUSES = ("supported", "partial", "missing")
_MISSING = object()

#: What a name daskgraph has does differently from TensorFlow 1 (key: ``name`` at the top
#: level, ``namespace.name`` elsewhere).
DIFFERENCES: dict[str, str] = {
    "Session": "no `partial_run`; the target is a Dask scheduler address or a `Server`'s target",
    "ConfigProto": "`log_device_placement`, `allow_soft_placement`, `gpu_options`, "
    "`device_count`, `operation_timeout_in_ms` are honoured; TensorFlow 1's other fields (thread "
    "pools, graph and rewriter options, `experimental`) are kept, not honoured; a field "
    "TensorFlow does not have raises its `AttributeError`/`ValueError`, as protobuf does",
    "placeholder": "a fed value is converted to the placeholder's dtype when every element "
    "survives the cast (float 0.0/1.0 labels feed an int32 placeholder), as in TensorFlow; one "
    "the cast would change (3.7 or NaN to an integer, -1 to uint8, 2**53+1 to float64) is refused "
    "with a `LossyCastError` naming the element; float64 to float32 rounds as TensorFlow does, "
    "and only overflow to infinity is refused",
    "GPUOptions": "`allow_growth`, `per_process_gpu_memory_fraction`, `visible_device_list`, "
    "`virtual_devices` only",
    "RunOptions": "`trace_level` and `timeout_in_ms` only",
    "RunMetadata": "`step_stats` says each partition's device and worker; no timings",
    "device": "a field given twice (`'/job:a/job:b'`) or a negative task is refused; "
    "TensorFlow keeps the last one / accepts it",
    "Variable": "reference variables only; `variable_def`, `expected_shape`, "
    "`import_scope`, `use_resource`, `synchronization`, `aggregation` are ignored; `constraint` "
    "is refused",
    "get_variable": "`partitioner`, `custom_getter` and `constraint` are refused",
    "xla": "`experimental.jit_scope` only: its ops' fused kernels take transcendental "
    "functions (no XLA)",
    "assign": "`validate_shape` and `use_locking` are ignored",
    "matmul": "`a_is_sparse`/`b_is_sparse` and `grad_*` are ignored; `output_type` is refused",
    "linalg.matmul": "`a_is_sparse`/`b_is_sparse` and `grad_*` are ignored; `output_type` is "
    "refused",
    "gradients": "`gate_gradients` and `aggregation_method` are accepted and change nothing (the "
    "gradients reaching a tensor are added by one `AddN`); gradients are colocated with their ops "
    "unless `colocate_gradients_with_ops=False` (TF1's default is False)",
    "cond": "builds and runs both branches (the taken one's result is selected): a branch may "
    "not update variables, and an op failing in the branch not taken fails the run",
    "Print": "prints to stderr where it runs; in both branches of a `cond`, both print",
    "IndexedSlices": "fetched, fed and made dense as TF's; `tf.gradients` gives dense tensors, "
    "never IndexedSlices",
    "print": "prints on the worker that runs it (the program's own process on the embedded "
    "cluster); `output_stream` is stdout or stderr only",
    "name_scope": "TF1's `(name, default_name, values)`; scopes are made unique as in TF",
    "string": "string tensors run on the CPU only (no GPU kernels, as in TensorFlow)",
    "random_normal": "TF1's seed rules, NumPy's generators: other values than TensorFlow's",
    "random_uniform": "TF1's seed rules, NumPy's generators: other values than TensorFlow's; "
    "an integer dtype's `minval`/`maxval` must be known when the graph is built",
    "truncated_normal": "TF1's seed rules, NumPy's generators: other values than TensorFlow's",
    "set_random_seed": "same seed rules as TF1, other random values",
    "nn.conv2d": "NHWC only, no dilations",
    "nn.max_pool": "NHWC only",
    "nn.avg_pool": "NHWC only",
    "nn.avg_pool2d": "NHWC only",
    "nn.max_pool2d": "NHWC only",
    "nn.conv2d_transpose": "NHWC only, no dilations",
    "nn.embedding_lookup": "the partitions are concatenated for each lookup (the whole table "
    "is copied) and the gradient is dense (TensorFlow's is `IndexedSlices`)",
    "nn.embedding_lookup_sparse": "`allow_fast_lookup` is ignored; the gradient is dense "
    "(TensorFlow's is `IndexedSlices`)",
    "sparse": "27 of TF1's 35 `tf.sparse` names: no `mask` (daskgraph has no `IndexedSlices`), "
    "`merge`, `cross`, `cross_hashed`, `bincount`, `reduce_max_sparse`, `reduce_sum_sparse`, "
    "`SparseConditionalAccumulator`",
    "sparse_reduce_sum": "`axis` must be Python ints (TensorFlow also takes a tensor)",
    "sparse_reduce_max": "`axis` must be Python ints (TensorFlow also takes a tensor)",
    "sparse_split": "`num_split` and `axis` must be Python ints",
    "sparse_transpose": "`perm` must be Python ints and the rank known when the graph is built",
    "sparse_segment_sum": "`sparse_gradient` is ignored (the gradient is dense); with "
    "`num_segments`, unsorted segment ids are accepted (TensorFlow refuses them)",
    "sparse_segment_mean": "`sparse_gradient` is ignored (the gradient is dense); with "
    "`num_segments`, unsorted segment ids are accepted (TensorFlow refuses them)",
    "sparse_segment_sqrt_n": "`sparse_gradient` is ignored (the gradient is dense); with "
    "`num_segments`, unsorted segment ids are accepted (TensorFlow refuses them)",
    "sparse_fill_empty_rows": "runs on the CPU only (TensorFlow 2 has a GPU kernel)",
    "string_split": "`result_type='RaggedTensor'` is refused (daskgraph has no RaggedTensor)",
    "nn.fused_batch_norm": "composed of ordinary ops; a float16 `x` needs float16 `scale`, "
    "`offset`, `mean`, `variance` (TensorFlow takes float32)",
    "nn.swish": "no second derivative (`sigmoid`'s gradient has none)",
    "nn.silu": "no second derivative (`sigmoid`'s gradient has none)",
    "nn.dropout": "TF1's seed rules, NumPy's generators: other masks than TensorFlow's",
    "random.normal": "other values than TensorFlow's for the same seed",
    "random.uniform": "other values than TensorFlow's for the same seed; an integer dtype's "
    "`minval`/`maxval` must be known when the graph is built",
    "random.truncated_normal": "other values than TensorFlow's for the same seed",
    "config.experimental": "device listing and visibility, memory growth, virtual device "
    "configuration and `get_device_details` only (no memory info, device policy, ...); a virtual "
    "GPU keeps its memory growth without effect; settings are frozen once an embedded cluster "
    "runs",
    "config.threading": "the inter-op count is the embedded CPU worker's threads "
    "(`daskgraph.local.cpu-threads`); the intra-op count is kept, not used",
    "config.set_logical_device_configuration": "the visible NVIDIA GPUs must all be split alike "
    "(one `virtual_devices` list); a virtual GPU split in n makes n virtual GPU workers (their "
    "memory limits unused); the CPU split in n makes n CPU devices, as `device_count`; no "
    "priorities or ordinals",
    "config.set_visible_devices": "the CPU cannot be hidden; hiding a virtual GPU starts one "
    "virtual GPU worker fewer (the visible ones are GPU:0, GPU:1, ...); hiding every NVIDIA GPU "
    "while a virtual one stays visible is refused",
    "config.list_logical_devices": "the devices a `Session()` on the embedded cluster will have, "
    "without starting it (the settings are frozen from then on, as in TensorFlow)",
    "random_shuffle": "TF1's seed rules, NumPy's generators: other orders than TensorFlow's",
    "random.shuffle": "TF1's seed rules, NumPy's generators: other orders than TensorFlow's",
    "random_crop": "TF1's seed rules, NumPy's generators: other offsets than TensorFlow's",
    "multinomial": "TF1's seed rules, NumPy's generators: other draws than TensorFlow's",
    "random.multinomial": "other draws than TensorFlow's for the same seed",
    "random.categorical": "other draws than TensorFlow's for the same seed",
    "random_gamma": "TF1's seed rules, NumPy's generators: other values than TensorFlow's; no "
    "gradient with respect to `alpha` (TensorFlow has one)",
    "random.gamma": "other values than TensorFlow's for the same seed; no gradient with respect "
    "to `alpha` (TensorFlow has one)",
    "random_poisson": "TF1's seed rules, NumPy's generators: other values than TensorFlow's",
    "random.poisson": "other values than TensorFlow's for the same seed",
    "random.stateless_uniform": "a function of the seed, but other values than TensorFlow's "
    "(NumPy's generator, not Philox); `alg` is ignored; integer bounds must be Python ints",
    "random.stateless_normal": "a function of the seed, but other values than TensorFlow's "
    "(NumPy's generator, not Philox); `alg` is ignored",
    "random.stateless_truncated_normal": "a function of the seed, but other values than "
    "TensorFlow's (NumPy's generator, not Philox); `alg` is ignored",
    "random.stateless_categorical": "a function of the seed, but other draws than TensorFlow's "
    "(NumPy's generator, not Philox)",
    "random.stateless_multinomial": "a function of the seed, but other draws than TensorFlow's "
    "(NumPy's generator, not Philox)",
    "train.ExponentialMovingAverage": "a variable's average starts at the variable's initial "
    "value (TensorFlow: its current value when it is already initialized)",
    "PaddingFIFOQueue": "no padding: `dequeue_many` stacks elements of one shape only",
    "QueueBase": "when its session closes, a blocked enqueue/dequeue on a worker of the "
    "session's own process is cancelled (`CancelledError`, as TF); on a worker of another "
    "process the run raises `CancelledError` at once but the kernel keeps its worker thread "
    "until the queue moves or the run's deadline passes; queue handles are `variant` tensors "
    "(TF: `resource`); a dequeue's components are `BundleGet` ops under the dequeue op",
    "train.QueueRunner": "no `queue_runner_def`/`to_proto` (built from its ops only)",
    "summary.FileWriter": "no `session` (TF2 writer resource), `add_run_metadata` or "
    "`add_meta_graph`; the graph's nodes carry names, op types, inputs, requested devices, "
    "dtypes and output shapes, not constants' values",
    "summary.image": "encoding the PNG images needs Pillow",
    "summary.tensor_summary": "`summary_description` and `display_name` are ignored; of "
    "`summary_metadata` only the plugin name is kept",
    "train.WorkerSessionCreator": "variables live per session in daskgraph, so a non-chief's "
    "session never sees the chief's initialization: it waits `max_wait_secs`, then fails",
    "train.MonitoredTrainingSession": "`is_chief=False` waits for a chief whose variables it "
    "cannot share (see `WorkerSessionCreator`); no meta graph is written",
    "train.CheckpointSaverHook": "no meta graph (`.meta`) is written; `graph.pbtxt` and the "
    "event file's graph are daskgraph's GraphDef (no constants' values)",
    "train.write_graph": "a daskgraph graph is written as daskgraph's GraphDef (names, op types, "
    "inputs, devices, dtypes, shapes; no constants' values)",
    "train.Saver": "writes TensorFlow's V2 checkpoints (`.index` and one data shard; TensorFlow "
    "restores them) and reads them (sharded ones, partitioned variables assembled; bfloat16 "
    "tensors as `ml_dtypes.bfloat16`; a damaged file raises `DataLossError` naming it) and "
    "daskgraph's older `.npz` files; `sharded=True` writes one shard; no meta graph is written "
    "(`write_meta_graph` is ignored) and there is no `export_meta_graph`, `as_saver_def` or "
    "`to_proto`",
    "train.init_from_checkpoint": "no partitioned variables (a list of variables is refused)",
    "train.remove_checkpoint": "`checkpoint_format_version` is ignored: the files there are "
    "removed (TensorFlow's V2 files, or an older `.npz`, and a `.meta` file)",
    "train.SyncReplicasOptimizer": "every replica is built in the one graph (an "
    "`apply_gradients` call each) and a step is one run: the call completing "
    "`max(total_num_replicas, replicas_to_aggregate)` replicas applies the mean of all their "
    "gradients in its train op (no backup replica's gradient is dropped; the other replicas' "
    "train ops alone do not update); no token queues: no gradient is dropped as stale "
    "(TensorFlow drops the round after its initial tokens), `get_init_tokens_op` is a no-op, "
    "the chief queue runner starts no thread; fewer replicas than a step takes are refused (no "
    "accumulation over runs); no sparse (`IndexedSlices`) gradients",
    "train.ProfilerHook": "`show_memory` is refused (daskgraph's traces record no tensor "
    "allocations) and no run metadata goes to an event file; each op's time is its kernel's "
    "call on its partition's worker (one thread lane per device)",
    "train.warm_start": "no `var_name_to_vocab_info` (vocabulary remapping; `VocabInfo` is "
    "missing)",
    "train.Supervisor": "no meta graph: none in the event file, no `.meta` checkpoint files; "
    "`graph.pbtxt` and the event file's graph are daskgraph's GraphDef; checkpoints as "
    "`Saver`'s",
    "train.Server": "one Dask scheduler for the cluster (at the first task) with a worker per "
    "device of each task; the ServerDef's `protocol` is kept, not used (Dask's tcp, or tls with "
    "`security`), a non-zero `port` is refused; of a `default_session_config` only the fields "
    "of `train.ServerDef`'s ConfigProto are read",
    "train.ClusterSpec": "job names must match `[A-Za-z][A-Za-z0-9_-]*` (TensorFlow takes any "
    "string); a ClusterSpec equals only a ClusterSpec (TensorFlow's also a dict of job -> "
    "{index: address})",
    "train.ServerDef": "`default_session_config` is a ConfigProto message with only the fields "
    "daskgraph honours (`device_count`, `gpu_options` with `per_process_gpu_memory_fraction`, "
    "`allow_growth`, `visible_device_list`, `allow_soft_placement`, `log_device_placement`, "
    "`operation_timeout_in_ms`; TensorFlow's field numbers); no `replica` or "
    "`cluster_device_filters` fields",
    "while_loop": "one op running `cond` and `body` in-process on one device, which has kernels "
    "for all their ops (they are not placed one by one); no gradients; the body may not create "
    "or update variables (it reads their values of the run); `parallel_iterations` and "
    "`swap_memory` are ignored",
    "map_fn": "one op applying `fn` in-process on one device; no gradients; `fn` may not create "
    "or update variables",
    "scan": "as `map_fn`: one op, no gradients",
    "foldl": "as `map_fn`: one op, no gradients",
    "foldr": "as `map_fn`: one op, no gradients",
    "data.Dataset": "`from_tensor_slices`, `from_tensors`, `from_generator`, `range`, `zip`, "
    "`batch`, `unbatch`, `repeat`, `shuffle`, `map`, `filter`, `take`, `skip`, `concatenate`, "
    "`enumerate`, `apply`, `prefetch`/`cache` (no-ops: `cache` does not keep a shuffled "
    "epoch's order) and the iterators only (no file readers, `padded_batch`, `interleave`, "
    "`flat_map`, ...); `map`/`filter` functions are traced once, run on the CPU worker and may "
    "not create or update variables; shuffled orders differ from TensorFlow's",
    "nest": "tuples, lists, dicts and named tuples nest (not `attrs` classes or other "
    "mappings); `expand_composites` is ignored (no composite tensors)",
    "data.Iterator": "no string handles (`from_string_handle`, `string_handle`), no "
    "`get_next_as_optional`",
    "eye": "sizes and `batch_shape` must be known when the graph is built",
    "linalg.eye": "sizes and `batch_shape` must be known when the graph is built",
    "matrix_band_part": "`num_lower`/`num_upper` must be known when the graph is built",
    "linalg.band_part": "`num_lower`/`num_upper` must be known when the graph is built",
    "matrix_diag": "`k` is one diagonal (no band of diagonals `(low, high)`)",
    "matrix_diag_part": "`k` is one diagonal (no band of diagonals `(low, high)`)",
    "matrix_set_diag": "`k` is one diagonal (no band of diagonals `(low, high)`)",
    "linalg.diag": "`k` is one diagonal (no band of diagonals `(low, high)`)",
    "linalg.diag_part": "`k` is one diagonal (no band of diagonals `(low, high)`)",
    "linalg.set_diag": "`k` is one diagonal (no band of diagonals `(low, high)`)",
    "lin_space": "scalar `start` and `stop` only (no `axis`)",
    "linspace": "scalar `start` and `stop` only (no `axis`)",
    "qr": "its gradient needs m >= n (and a square matrix with `full_matrices`)",
    "linalg.qr": "its gradient needs m >= n (and a square matrix with `full_matrices`)",
    "svd": "only the singular values `s` have a gradient (not `u`, `v`)",
    "linalg.svd": "only the singular values `s` have a gradient (not `u`, `v`)",
    "einsum": "no gradient for an operand with a repeated letter (`ii`) or `...` after a letter",
    "linalg.einsum": "no gradient for an operand with a repeated letter (`ii`) or `...` after a "
    "letter",
    "tensordot": "`axes` must be Python ints and the ranks known when the graph is built",
    "linalg.tensordot": "`axes` must be Python ints and the ranks known when the graph is built",
    "gather_nd": "`batch_dims` must be 0",
    "space_to_depth": "NHWC only",
    "depth_to_space": "NHWC only",
    "linalg.lstsq": "always the fast path (Cholesky on the regularised normal equations), as "
    "with `fast=True`; the matrix's size must be known when the graph is built",
    "layers.Layer": "no `input_spec`, `get_weights`/`set_weights`, `losses`/`updates` per "
    "input; weight constraints are refused; an unnamed layer's `name` is its scope's (TF counts "
    "layer objects per class)",
    "layers.dense": "`kernel_constraint`/`bias_constraint` are refused",
    "layers.Dense": "`kernel_constraint`/`bias_constraint` are refused",
    "layers.conv2d": "`dilation_rate` must be 1; constraints are refused",
    "layers.Conv2D": "`dilation_rate` must be 1; constraints are refused",
    "layers.flatten": "needs the batch size or the other dimensions known when the graph is built",
    "layers.Flatten": "needs the batch size or the other dimensions known when the graph is built",
    "layers.dropout": "TF1's seed rules, NumPy's generators: other masks than TensorFlow's; a "
    "bool tensor `training` runs both branches (see `cond`)",
    "layers.Dropout": "TF1's seed rules, NumPy's generators: other masks than TensorFlow's",
    "layers.batch_normalization": "`axis` is one int; `renorm`, `virtual_batch_size`, "
    "`adjustment` and constraints are refused; with a bool tensor `training` the two update ops "
    "(AssignSub, not TF's `cond` outputs) always run, moving the averages by zero when false",
    "layers.BatchNormalization": "`axis` is one int; `renorm`, `virtual_batch_size`, "
    "`adjustment` and constraints are refused; updates as `batch_normalization`'s",
    "losses.compute_weighted_loss": "`weights` are checked against the losses' static shapes "
    "only (TF adds a run-time check when they are unknown); so is every loss's",
    "losses.sparse_softmax_cross_entropy": "a last label axis of size 1 is squeezed by static "
    "rank only",
    "gfile.GFile": "over fsspec; modes `r+`/`w+`/`a+` read and write at one position, as "
    "Python's files (TensorFlow's keep separate read and write streams)",
    "gfile.Open": "as `gfile.GFile`",
    "gfile.FastGFile": "as `gfile.GFile`",
    "test.TestCase": "sessions are daskgraph's (the embedded cluster, or the Dask config's); no "
    "`captureWritesToStream`; `assertProtoEquals` has no `relative_tolerance` and compares "
    "floats exactly (TensorFlow normalizes their precision first); `evaluate` takes tensors "
    "and SparseTensors, not callables or ragged values",
    "test.is_gpu_available": "counts NVIDIA GPUs and virtual GPUs (`daskgraph.virtual-gpus`); "
    "`cuda_only=True` counts NVIDIA GPUs only; a virtual GPU's compute capability is (0, 0)",
    "test.gpu_device_name": "`/device:GPU:0` where an NVIDIA or virtual GPU would be a session's",
    "test.is_built_with_cuda": "whether CuPy (daskgraph's GPU arrays) is installed",
    "test.is_built_with_gpu_support": "whether CuPy is installed or virtual GPUs are configured",
    "test.compute_gradient": "real float dtypes only; a gradient that is None counts as zeros",
    "test.compute_gradient_error": "real float dtypes only; a gradient that is None counts as "
    "zeros",
    "cumsum": "`axis` must be known when the graph is built (an int or a constant)",
    "cumprod": "`axis` must be known when the graph is built (an int or a constant)",
    "math.cumsum": "`axis` must be known when the graph is built (an int or a constant)",
    "math.cumprod": "`axis` must be known when the graph is built (an int or a constant)",
    "norm": "no spectral norm (`ord=2` over two axes)",
    "confusion_matrix": "`num_classes` must be a Python int or None",
    "math.confusion_matrix": "`num_classes` must be a Python int or None",
    "add_check_numerics_ops": "outputs of stateful ops (variables, assignments, random ops) are "
    "not checked: checking them would run them again",
    "rint": "integer tensors come back unchanged (TensorFlow refuses them)",
    "math.rint": "integer tensors come back unchanged (TensorFlow refuses them)",
    "conj": "real tensors only (daskgraph has no complex dtypes)",
    "real": "real tensors only (daskgraph has no complex dtypes)",
    "imag": "real tensors only (daskgraph has no complex dtypes)",
    "angle": "real tensors only (daskgraph has no complex dtypes)",
    "math.conj": "real tensors only (daskgraph has no complex dtypes)",
    "math.real": "real tensors only (daskgraph has no complex dtypes)",
    "math.imag": "real tensors only (daskgraph has no complex dtypes)",
    "math.angle": "real tensors only (daskgraph has no complex dtypes)",
    "assert_rank": "a rank given as a tensor computed at run time is not itself checked to be a "
    "scalar",
    "assert_rank_at_least": "a rank given as a tensor computed at run time is not itself "
    "checked to be a scalar",
    "make_template": "`custom_getter_` is refused",
    "hessians": "the loop over the elements of `x` is unrolled, so `x`'s size must be known when "
    "the graph is built; refused where the gradient goes through an op without a second "
    "derivative in daskgraph (the gradients of `reduce_max`/`reduce_min`, of segment reductions, "
    "`digamma`'s derivative); `gate_gradients`, `aggregation_method` change nothing; gradients are "
    "colocated with their ops unless `colocate_gradients_with_ops=False` (TF1's default is False)",
    "custom_gradient": "with several outputs, `grad_fn` is called (and its ops built) once per "
    "output that receives a gradient, the others' gradients zeros (the sum is TF's); variables "
    "read by the function are found as reads of the graph's global and local variables",
    "container": "changes nothing: daskgraph keeps variables per session and device, not in "
    "resource containers",
    "VariableAggregation": "accepted by `tf.Variable`/`tf.get_variable` and ignored (one copy of "
    "each variable)",
    "VariableSynchronization": "accepted by `tf.Variable`/`tf.get_variable` and ignored (one "
    "copy of each variable)",
    "AggregationMethod": "accepted by `tf.gradients` and ignored: one `AddN` per tensor",
    "GraphDef": "a named tuple of the protocol buffer's fields (`node`, `versions`), as "
    "`Graph.as_graph_def()` returns it: no serialization, no empty construction",
    "NodeDef": "a named tuple of the protocol buffer's fields (`name`, `op`, `input`, `device`, "
    "`attr`): no serialization",
    "case": "a chain of `cond`: every branch is built and runs (the taken one's result is "
    "selected), so a branch may not update variables, and an op failing in a branch not taken "
    "fails the run",
    "switch_case": "a chain of `cond`: every branch is built and runs (the taken one's result is "
    "selected), so a branch may not update variables, and an op failing in a branch not taken "
    "fails the run",
    "strings": "`as_string`, `format`, `join`, `length`, `lower`, `upper`, `strip`, `to_number`, "
    "`regex_replace`, `regex_full_match`, `substr`, `reduce_join` only (no `split`, `bytes_split`, "
    "`ngrams`, `unicode_*`, `to_hash_bucket*`); strings on the CPU only, as in TensorFlow",
    "regex_replace": "Python's `re` (TensorFlow's is RE2: the same common syntax); `pattern` and "
    "`rewrite` must be known when the graph is built",
}

#: tf.metrics: what their shapes must be (TF matches the ranks at run time, with ``cond``)
_METRIC_RANKS = (
    "labels, predictions and weights of unknown rank are refused (TensorFlow matches their "
    "ranks at run time)"
)
_METRIC_AT_K = (
    "dense labels only (no `SparseTensor`); the ranks and the numbers of labels and of "
    "predicted ids per row must be known when the graph is built"
)
for _name in (
    "accuracy auc false_negatives false_negatives_at_thresholds false_positives "
    "false_positives_at_thresholds mean mean_absolute_error mean_cosine_distance "
    "mean_relative_error mean_squared_error mean_tensor percentage_below precision "
    "precision_at_thresholds recall recall_at_thresholds root_mean_squared_error "
    "sensitivity_at_specificity specificity_at_sensitivity true_negatives "
    "true_negatives_at_thresholds true_positives true_positives_at_thresholds"
).split():
    DIFFERENCES[f"metrics.{_name}"] = _METRIC_RANKS
for _name in ("precision_at_k", "precision_at_top_k", "recall_at_k", "recall_at_top_k",
              "sparse_precision_at_k"):  # fmt: skip
    DIFFERENCES[f"metrics.{_name}"] = _METRIC_AT_K


@dataclass(frozen=True)
class Entry:
    """One TF1 name: its namespace (``""`` = top level), kind, status and note."""

    namespace: str
    name: str
    kind: str
    status: str
    note: str = ""

    @property
    def qualified(self) -> str:
        """``tf.name`` or ``tf.namespace.name``."""
        return ".".join(["tf", self.namespace, self.name] if self.namespace else ["tf", self.name])


def snapshot() -> dict[str, Any]:
    """The stored snapshot of ``tf.compat.v1``'s public names."""
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def resolve(namespace: str, name: str) -> Any:
    """The object ``tf.namespace.name`` is in :mod:`daskgraph.compat.v1`, or a sentinel.

    >>> import daskgraph.compat.v1 as tf
    >>> resolve("nn", "relu") is tf.nn.relu
    True
    """
    owner: Any = importlib.import_module("daskgraph.compat.v1")
    for part in (namespace.split(".") if namespace else []) + [name]:
        owner = getattr(owner, part, _MISSING)
        if owner is _MISSING:
            return _MISSING
    return owner


def found(namespace: str, name: str) -> bool:
    """Whether :mod:`daskgraph.compat.v1` has ``tf.namespace.name``."""
    return resolve(namespace, name) is not _MISSING


def status(namespace: str, name: str, listed: dict[str, dict[str, str]] | None = None):
    """``(status, note)`` of one TF1 name; ``listed`` is the snapshot's namespaces."""
    if not found(namespace, name):
        return "missing", ""
    key = f"{namespace}.{name}" if namespace else name
    if key in DIFFERENCES:
        return "partial", DIFFERENCES[key]
    names = (listed or {}).get(name) if not namespace else None
    if names:
        lacking = sum(not found(name, inner) for inner in names)
        if lacking:
            return "partial", f"{len(names) - lacking} of {len(names)} names (see `tf.{name}`)"
    return "supported", ""


def entries(namespaces: dict[str, dict[str, str]] | None = None) -> list[Entry]:
    """Every name of the snapshot with its status, namespace by namespace."""
    namespaces = namespaces if namespaces is not None else snapshot()["namespaces"]
    result = []
    for namespace, names in namespaces.items():
        for name, kind in names.items():
            state, note = status(namespace, name, namespaces)
            result.append(Entry(namespace, name, kind, state, note))
    return result


@dataclass(frozen=True)
class SuiteProgram:
    """A program of the compatibility suite, described by its ``# Field: value`` header."""

    path: pathlib.Path
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The program's file name without ``.py``."""
        return self.path.stem

    @property
    def virtual_gpus(self) -> int:
        """The virtual GPUs it runs with (``# Virtual GPUs: N``)."""
        return int(self.fields.get("Virtual GPUs", "0"))

    @property
    def run_with(self) -> str:
        """The programs it runs together with, as subprocesses (``# Run: with ...``)."""
        return self.fields.get("Run", "")

    @property
    def needs(self) -> str:
        """What daskgraph lacks for it (``# Needs: ...``); empty where it passes."""
        return self.fields.get("Needs", "")


def header_fields(source: str) -> dict[str, str]:
    """The ``# Field: value`` lines of a program's leading comment (``#   `` continues one).

    >>> header_fields("# Source: a\\n#   b\\n# Needs: tf.x\\nimport os\\n# Run: no")
    {'Source': 'a b', 'Needs': 'tf.x'}
    """
    fields: dict[str, str] = {}
    last = None
    for line in source.splitlines():
        if not line.startswith("#"):
            break
        match = re.match(r"# ([A-Z][\w ]*): (.*)$", line)
        if match:
            last = match.group(1)
            fields[last] = match.group(2).strip()
        elif last and line.startswith("#   "):
            fields[last] += " " + line[1:].strip()
    return fields


def suite_programs(folder: pathlib.Path = SUITE) -> list[SuiteProgram]:
    """The suite's programs in ``folder``, by name (none where the folder is absent)."""
    paths = sorted(p for p in folder.glob("*.py") if p.name != "conftest.py")
    return [SuiteProgram(p, header_fields(p.read_text(encoding="utf-8"))) for p in paths]


def _names(items: Iterable[Entry | SuiteProgram]) -> str:
    return ", ".join(f"`{e.name}`" for e in items)


def _counts_table(groups: dict[str, list[Entry]]) -> list[str]:
    lines = ["| namespace | supported | partial | missing | names |", "|---|--:|--:|--:|--:|"]
    for namespace, items in groups.items():
        counts = Counter(e.status for e in items)
        row = " | ".join(str(counts[s]) for s in STATUSES)
        lines.append(f"| `{'.'.join(['tf', namespace]).rstrip('.')}` | {row} | {len(items)} |")
    return lines


def _namespace_section(namespace: str, items: list[Entry]) -> list[str]:
    title = ".".join(["tf", namespace]).rstrip(".")
    by_status = {s: [e for e in items if e.status == s] for s in STATUSES}
    lines = [f"## `{title}`", ""]
    if by_status["supported"]:
        lines += [
            f"**Supported ({len(by_status['supported'])}):** {_names(by_status['supported'])}",
            "",
        ]
    if by_status["partial"]:
        lines += [f"**Partial ({len(by_status['partial'])}):**", ""]
        lines += [f"- `{e.name}`: {e.note}" for e in by_status["partial"]] + [""]
    if by_status["missing"]:
        lines += [f"**Missing ({len(by_status['missing'])}):** {_names(by_status['missing'])}", ""]
    return lines


def _suite_section(programs: list[SuiteProgram]) -> list[str]:
    passing = sum(not p.needs for p in programs)
    lines = [
        "## Compatibility suite",
        "",
        f"{len(programs)} public TF1 programs in `tests/compat_suite/`, run with only their "
        "import changed by `tests/integration/test_compat_suite.py`, which compares what each "
        "prints with what TensorFlow printed (`tests/compat_suite/expected/`). "
        f"{passing} pass; the others are expected failures until daskgraph has what they need.",
        "",
        "| program | part of its source | virtual GPUs | status | changed |",
        "|---|---|--:|---|---|",
    ]
    for p in programs:
        state = f"xfail, needs {p.needs}" if p.needs else "passes"
        section, changed = p.fields.get("Section", ""), p.fields.get("Changed", "")
        lines.append(f"| `{p.name}` | {section} | {p.virtual_gpus} | {state} | {changed} |")
    lines += ["", "Sources:", ""]
    sources: dict[str, list[SuiteProgram]] = {}
    for p in programs:
        sources.setdefault(p.fields.get("Source", "?"), []).append(p)
    for source, group in sources.items():
        license_ = group[0].fields.get("License", "")
        lines.append(f"- {source}: {_names(group)}. License: {license_}")
    return [*lines, ""]


def render(items: list[Entry], programs: list[SuiteProgram], source: str = "") -> str:
    """The whole page as Markdown."""
    groups: dict[str, list[Entry]] = {}
    for e in items:
        groups.setdefault(e.namespace, []).append(e)
    counts = Counter(e.status for e in items)
    lines = [
        "# TensorFlow 1 compatibility",
        "",
        "Generated by `python -m daskgraph.compat.table > docs/compat.md` (do not edit): every "
        f"public name of `tf.compat.v1` ({source}; top level and the namespaces TF1 programs use "
        "most) looked up in `daskgraph.compat.v1`. **supported**: daskgraph has it; **partial**: "
        "it has it, with the difference noted; **missing**: using it raises `AttributeError`.",
        "",
        f"**In all: {counts['supported']} supported, {counts['partial']} partial, "
        f"{counts['missing']} missing of {len(items)} names.**",
        "",
        *_counts_table(groups),
        "",
    ]
    for namespace, group in groups.items():
        lines += _namespace_section(namespace, group)
    lines += _contrib_section()
    lines += _suite_section(programs)
    return "\n".join(lines)


#: the parts of ``tf.contrib`` (TensorFlow 1.15 only) daskgraph provides
CONTRIB = ("layers", "slim", "framework")


def _contrib_section() -> list[str]:
    """``tf.contrib``'s names provided (every public name of each part's module)."""
    lines = [
        "## `tf.contrib`",
        "",
        "TensorFlow 1.15's `tf.contrib` (gone from `tf.compat.v1`): daskgraph provides the "
        "common subset multi-GPU and distributed TF1 programs use, with TF 1.15's names, "
        "defaults and variable names. Any other name raises an `AttributeError` pointing here.",
        "",
    ]
    for part in CONTRIB:
        module = importlib.import_module(f"daskgraph.compat.contrib.{part}")
        names = sorted(n for n in module.__all__ if n not in CONTRIB)
        lines.append(f"- `tf.contrib.{part}`: {', '.join(f'`{n}`' for n in names)}")
    lines += [
        "- not provided: everything else (`tf.contrib.rnn`, `seq2seq`, `learn`, "
        "`distribute`, `slim.learning`, `slim.nets`, ...); `layers.dropout`'s "
        "`is_training` must be a Python bool",
        "",
    ]
    return lines


def main() -> None:
    """Write docs/compat.md's text to stdout."""
    data = snapshot()
    sys.stdout.write(render(entries(data["namespaces"]), suite_programs(), data["source"]))


if __name__ == "__main__":
    main()
