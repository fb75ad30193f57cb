"""Reading checkpoints by name: TensorFlow 1's ``tf.train`` checkpoint utilities.

:func:`NewCheckpointReader` opens a checkpoint written by :class:`~daskgraph.training.saver.Saver`
(``get_tensor``, ``has_tensor``, the shape and dtype maps, ``debug_string``; shapes and
dtypes are read from the file's headers, values only when asked for). :func:`load_checkpoint`,
:func:`load_variable` and :func:`list_variables` take a checkpoint or a directory (its latest
checkpoint). :func:`init_from_checkpoint` replaces variables' initializers, as TensorFlow 1
does, so that running them loads the checkpoint's values: each variable's initial value
becomes a ``RestoreV2`` op (:func:`daskgraph.ops.checkpoint_ops.restore_v2`, on the CPU of the
variable's device) read when the initializer runs. :func:`warm_start` does
it for variables picked by name, TensorFlow 1's way. :func:`checkpoints_iterator` yields new
checkpoints of a directory as they appear.

>>> import os, tempfile
>>> import daskgraph as dg
>>> directory = tempfile.mkdtemp()
>>> with dg.Graph().as_default():
...     with dg.variable_scope("old"):
...         w = dg.get_variable("w", initializer=[1.0, 2.0])
...     with dg.Session() as sess:
...         sess.run(w.initializer)
...         _ = dg.train.Saver().save(sess, os.path.join(directory, "model"), global_step=3)
>>> list_variables(directory), load_variable(directory, "old/w").tolist()
([('old/w', [2])], [1.0, 2.0])
>>> with dg.Graph().as_default():
...     with dg.variable_scope("new"):
...         v = dg.get_variable("w", shape=[2], initializer=dg.zeros_initializer())
...     init_from_checkpoint(directory, {"old/": "new/"})
...     with dg.Session() as sess:
...         sess.run(dg.global_variables_initializer())
...         sess.run(v).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from daskgraph.errors import NotFoundError
from daskgraph.framework import dtypes, scopes
from daskgraph.framework.graph import GLOBAL_VARIABLES, TRAINABLE_VARIABLES, get_default_graph
from daskgraph.kernels.checkpoint_files import checkpoint_shapes, read_checkpoint
from daskgraph.ops.checkpoint_ops import restore_v2, tf_dtype_name
from daskgraph.ops.state import Variable, assign
from daskgraph.ops.variable_scope import stored_variables
from daskgraph.training.saver import latest_checkpoint

__all__ = [
    "CheckpointReader",
    "NewCheckpointReader",
    "checkpoints_iterator",
    "init_from_checkpoint",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "wait_for_new_checkpoint",
    "warm_start",
]

logger = logging.getLogger("tensorflow")


class CheckpointReader:
    """The tensors of one checkpoint, by name (TensorFlow's ``CheckpointReader``).

    Parameters
    ----------
    filepattern
        The checkpoint's prefix (``dir/model-7``), as ``Saver.save`` returns it.
    """

    def __init__(self, filepattern: str) -> None:
        self._prefix = os.fspath(filepattern)
        self._headers = checkpoint_shapes(self._prefix)

    def has_tensor(self, tensor_str: str) -> bool:
        """Whether the checkpoint holds a tensor named ``tensor_str``."""
        return tensor_str in self._headers

    def get_tensor(self, tensor_str: str) -> np.ndarray:
        """The saved value of ``tensor_str`` (a NumPy array, or a NumPy scalar for a scalar);
        NotFoundError when the checkpoint has none."""
        if tensor_str not in self._headers:
            raise NotFoundError(
                f"Key {tensor_str} not found in checkpoint", op=None, variable=tensor_str
            )
        value = read_checkpoint(self._prefix, [tensor_str])[tensor_str]
        return value[()] if value.ndim == 0 else value

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        """Every tensor's shape, as a list of ints."""
        return {name: list(shape) for name, (shape, _) in self._headers.items()}

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        """Every tensor's dtype."""
        return {name: dtypes.as_dtype(dtype) for name, (_, dtype) in self._headers.items()}

    def debug_string(self) -> bytes:
        """One line per tensor, by name: ``name (DT_FLOAT) [2,3]``, as TensorFlow's."""
        lines = []
        for name in sorted(self._headers):
            shape, dtype = self._headers[name]
            kind = "DT_" + tf_dtype_name(dtype).upper()
            lines.append(f"{name} ({kind}) [{','.join(str(d) for d in shape)}]\n")
        return "".join(lines).encode("utf-8")

    def __repr__(self) -> str:
        return f"<CheckpointReader {self._prefix!r}: {len(self._headers)} tensors>"


def NewCheckpointReader(filepattern: str) -> CheckpointReader:  # TensorFlow's name
    """A :class:`CheckpointReader` of the checkpoint ``filepattern``; NotFoundError when there
    is none."""
    return CheckpointReader(filepattern)


def _checkpoint_filename(ckpt_dir_or_file: Any) -> str | None:
    path = os.fspath(ckpt_dir_or_file)
    return latest_checkpoint(path) if os.path.isdir(path) else path


def load_checkpoint(ckpt_dir_or_file: Any) -> CheckpointReader:
    """The reader of ``ckpt_dir_or_file``: a checkpoint, or a directory (its latest
    checkpoint); ValueError when the directory has none."""
    filename = _checkpoint_filename(ckpt_dir_or_file)
    if filename is None:
        raise ValueError(
            f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}"
        )
    return NewCheckpointReader(filename)


def load_variable(ckpt_dir_or_file: Any, name: str) -> np.ndarray:
    """The saved value of the variable ``name`` (a trailing ``:0`` is ignored)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file: Any) -> list[tuple[str, list[int]]]:
    """``[(name, shape), ...]`` of every tensor of the checkpoint, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


# -- waiting for checkpoints ----------------------------------------------------------------------
def wait_for_new_checkpoint(
    checkpoint_dir: str,
    last_checkpoint: str | None = None,
    seconds_to_sleep: float = 1,
    timeout: float | None = None,
) -> str | None:
    """The latest checkpoint of ``checkpoint_dir`` once it is not ``last_checkpoint``
    (checked every ``seconds_to_sleep``); None after ``timeout`` seconds."""
    logger.info("Waiting for new checkpoint at %s", checkpoint_dir)
    stop_time = time.time() + timeout if timeout is not None else None
    while True:
        path = latest_checkpoint(checkpoint_dir)
        if path is not None and path != last_checkpoint:
            logger.info("Found new checkpoint at %s", path)
            return path
        if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
            return None
        time.sleep(seconds_to_sleep)


def checkpoints_iterator(
    checkpoint_dir: str,
    min_interval_secs: float = 0,
    timeout: float | None = None,
    timeout_fn: Callable[[], bool] | None = None,
) -> Iterator[str]:
    """Yield each new checkpoint of ``checkpoint_dir`` as it appears, at most one every
    ``min_interval_secs``. After ``timeout`` seconds without one, stop, unless ``timeout_fn``
    is given and returns false (then wait again), as TensorFlow's."""
    checkpoint_path = None
    while True:
        new_path = wait_for_new_checkpoint(checkpoint_dir, checkpoint_path, timeout=timeout)
        if new_path:
            start = time.time()
            checkpoint_path = new_path
            yield checkpoint_path
            remaining = start + min_interval_secs - time.time()
            if remaining > 0:
                time.sleep(remaining)
        elif timeout_fn is None:
            logger.info("Timed-out waiting for a checkpoint (without timeout_fn).")
            return
        if timeout_fn is not None and timeout_fn():
            logger.info("Done. No new checkpoints will be generated.")
            return


# -- initializing from a checkpoint ---------------------------------------------------------------
def init_from_checkpoint(ckpt_dir_or_file: Any, assignment_map: Any) -> None:
    """Replace the initializers of variables so that they load values of a checkpoint.

    The values are read when the initializers run (``global_variables_initializer()``),
    from ``ckpt_dir_or_file`` (a checkpoint, or a directory: its latest checkpoint now).
    ``assignment_map`` (a dict, or a list of pairs) maps checkpoint names to variables, as
    TensorFlow 1's:

    * ``'old_scope/': 'new_scope/'``: every variable of ``new_scope`` (made with
      ``get_variable``) from the checkpoint's tensor of the same name under ``old_scope``;
      ``'/'`` is the root;
    * ``'old_scope/w': 'new_scope/w'``: one variable, by its ``get_variable`` name;
    * ``'old_scope/w': variable``: that :class:`~daskgraph.ops.state.Variable`.

    Raises
    ------
    ValueError
        When the checkpoint lacks a tensor, shapes differ, or a scope maps to a variable name.
    """
    ckpt_file = _checkpoint_filename(ckpt_dir_or_file)
    reader = load_checkpoint(ckpt_dir_or_file)
    variable_map = reader.get_variable_to_shape_map()
    pairs = assignment_map.items() if isinstance(assignment_map, Mapping) else assignment_map
    store = stored_variables()
    for tensor_name, current in sorted(pairs, key=lambda pair: pair[0]):
        var = _variable_for(current, store)
        if var is not None:
            if tensor_name not in variable_map:
                raise ValueError(
                    f"Tensor {tensor_name} is not found in {ckpt_dir_or_file} checkpoint "
                    f"{variable_map}"
                )
            _check_shape(var, tensor_name, variable_map[tensor_name])
            _set_checkpoint_initializer(var, ckpt_file, tensor_name)
            logger.debug("Initialize variable %s from checkpoint %s with %s", var.name,
                         ckpt_dir_or_file, tensor_name)  # fmt: skip
        else:
            _init_scope(ckpt_dir_or_file, ckpt_file, tensor_name, current, variable_map, store)


def _variable_for(current: Any, store: dict[str, Variable]) -> Variable | None:
    """The variable ``current`` stands for: itself, or the stored variable of that name."""
    if isinstance(current, Variable):
        return current
    if isinstance(current, (list, tuple)):
        raise ValueError(
            "init_from_checkpoint: a list of variables stands for a partitioned variable in "
            "TensorFlow; daskgraph has no partitioned variables: map each variable on its own"
        )
    if not isinstance(current, str):
        raise TypeError(
            f"init_from_checkpoint: assignment_map values must be variables or names; got "
            f"{current!r}"
        )
    return store.get(current)


def _check_shape(var: Variable, tensor_name: str, saved: list[int]) -> None:
    if not var.get_shape().is_compatible_with(saved):
        raise ValueError(
            f"Shape of variable {var.name} ({var.get_shape()}) doesn't match with shape of "
            f"tensor {tensor_name} ({saved}) from checkpoint reader."
        )


def _init_scope(
    ckpt_dir_or_file: Any,
    ckpt_file: str,
    tensor_name: str,
    current: str,
    variable_map: dict[str, list[int]],
    store: dict[str, Variable],
) -> None:
    """``'old_scope/': 'new_scope/'``: every stored variable of the scope, from the
    checkpoint's tensor of the same name under ``old_scope`` (TensorFlow's rules)."""
    scope = current[: current.rindex("/")] if "/" in current else ""
    if not tensor_name.endswith("/"):
        raise ValueError(
            f"Assignment map with scope only name {scope} should map to scope only "
            f"{tensor_name}. Should be 'scope/': 'other_scope/'."
        )
    for var_name in sorted(n for n in store if not scope or n.startswith(scope + "/")):
        full_name = var_name[len(scope) :]
        if current != "/":
            full_name = full_name[1:]
        if tensor_name != "/":
            full_name = tensor_name + full_name
        full_name = full_name.removesuffix("/")
        if full_name not in variable_map:
            raise ValueError(
                f"Tensor {full_name} ({var_name[len(scope) + 1 :]} in {tensor_name}) is not "
                f"found in {ckpt_dir_or_file} checkpoint"
            )
        _set_checkpoint_initializer(store[var_name], ckpt_file, full_name)
        logger.debug("Initialize variable %s from checkpoint %s with %s", var_name,
                     ckpt_dir_or_file, full_name)  # fmt: skip


def _set_checkpoint_initializer(variable: Variable, ckpt_file: str, tensor_name: str) -> None:
    """Make ``variable``'s initializer assign the checkpoint's ``tensor_name``, read by a
    ``RestoreV2`` op on the CPU of the variable's device (TensorFlow replaces the same two
    attributes of the variable)."""
    graph = variable.graph
    with graph.as_default(), scopes.device(variable.device):
        value = restore_v2(
            ckpt_file,
            tensor_name,
            variable.dtype,
            shape=variable.shape,
            name="checkpoint_initializer",
        )
        initializer = assign(variable, value).op
    variable._initializer_op = initializer
    variable._initial_value = value


# -- warm starts ----------------------------------------------------------------------------------
def warm_start(
    ckpt_to_initialize_from: Any,
    vars_to_warm_start: Any = ".*",
    var_name_to_vocab_info: Any = None,
    var_name_to_prev_var_name: dict[str, str] | None = None,
) -> None:
    """Initialize variables from a checkpoint (:func:`init_from_checkpoint` underneath), as
    TensorFlow 1's ``tf.train.warm_start``.

    ``vars_to_warm_start`` picks them: a regular expression matched (from the start) against
    the names of the trainable variables, a list of expressions matched against every global
    variable, or a list of variables; None picks none. Each loads the checkpoint's tensor of
    its own name, or of ``var_name_to_prev_var_name[name]``. Remapping vocabularies
    (``var_name_to_vocab_info``) is not supported.
    """
    if var_name_to_vocab_info:
        raise ValueError(
            "warm_start: var_name_to_vocab_info (remapping vocabularies) is not supported"
        )
    grouped = _grouped_variables(vars_to_warm_start)
    renames = dict(var_name_to_prev_var_name or {})
    logger.info("Warm-starting from: %s", ckpt_to_initialize_from)
    vocabless: dict[str, Variable] = {}
    for var_name, variable in grouped.items():
        if not vars_to_warm_start:
            continue
        prev_name = renames.get(var_name) or var_name
        if prev_name in vocabless:  # one checkpoint tensor for two variables: one at a time
            init_from_checkpoint(ckpt_to_initialize_from, vocabless)
            vocabless.clear()
        vocabless[prev_name] = variable
    if vocabless:
        init_from_checkpoint(ckpt_to_initialize_from, vocabless)
    unused = set(renames) - set(grouped)
    if unused:
        raise ValueError(
            "You provided the following variables in var_name_to_prev_var_name that were not "
            f"used: {unused}.  Perhaps you misspelled them?  Here is the list of viable "
            f"variable names: {grouped.keys()}"
        )
    logger.info("Warm-started %d variables.", len(grouped) if vars_to_warm_start else 0)


def _grouped_variables(vars_to_warm_start: Any) -> dict[str, Variable]:
    """The variables ``vars_to_warm_start`` picks, by name (TensorFlow's rules)."""
    graph = get_default_graph()
    if isinstance(vars_to_warm_start, str) or vars_to_warm_start is None:
        found = _matching(graph.get_collection(TRAINABLE_VARIABLES), vars_to_warm_start)
    elif isinstance(vars_to_warm_start, list):
        if all(isinstance(v, str) for v in vars_to_warm_start):
            found = []
            for pattern in vars_to_warm_start:
                found += _matching(graph.get_collection(GLOBAL_VARIABLES), pattern)
        elif all(isinstance(v, Variable) for v in vars_to_warm_start):
            found = list(vars_to_warm_start)
        else:
            raise ValueError(
                "If `vars_to_warm_start` is a list, it must be all `Variable` or all `str`.  "
                f"Given types are {[type(v) for v in vars_to_warm_start]}"
            )
    else:
        raise ValueError(
            "`vars_to_warm_start must be a `list` or `str`.  Given type is "
            f"{type(vars_to_warm_start)}"
        )
    return {v.op.name: v for v in found}


def _matching(variables: list[Variable], pattern: str | None) -> list[Variable]:
    if pattern is None:
        return list(variables)
    regex = re.compile(pattern)
    return [v for v in variables if regex.match(v.name)]
