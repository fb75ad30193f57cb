"""Session configuration: ``SessionConfig`` and ``GPUOptions``, and daskgraph's Dask config keys.

``SessionConfig`` carries what TensorFlow's ``ConfigProto`` does for placement
(``log_device_placement``, ``allow_soft_placement``, ``device_count``) and GPU memory
(``gpu_options``). Values are validated when the session starts, so a mistake is reported
with the field's name before anything runs.

Cluster-wide settings live in Dask's config under ``daskgraph`` (defaults in
``daskgraph.yaml``): ``daskgraph.virtual-gpus`` (environment ``DASK_DASKGRAPH__VIRTUAL_GPUS``)
adds N virtual GPU workers to the embedded cluster; ``daskgraph.cache-dir`` (environment
``DASK_DASKGRAPH__CACHE_DIR``; default ``$XDG_CACHE_HOME/daskgraph`` or ``~/.cache/daskgraph``)
is where compiled kernels are kept between processes
(:mod:`daskgraph.kernels.kernel_cache`), and ``daskgraph.compile-process`` whether fused
chains compile in a process of their own (:mod:`daskgraph.kernels.compile_server`).

>>> cfg = SessionConfig(allow_soft_placement=True)
>>> cfg.gpu_options.allow_growth = True
>>> cfg.validate().gpu_options.allow_growth
True
>>> SessionConfig(gpu_options=GPUOptions(per_process_gpu_memory_fraction=1.5)).validate()
Traceback (most recent call last):
...
ValueError: gpu_options.per_process_gpu_memory_fraction must be in [0, 1] (0 means no cap); got 1.5
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field

import dask.config
import yaml

__all__ = [
    "GPUOptions",
    "SessionConfig",
    "check_timeout_ms",
    "default_session_config",
    "set_session_defaults",
    "virtual_gpu_count",
    "worker_template",
]

_defaults = yaml.safe_load((pathlib.Path(__file__).parent / "daskgraph.yaml").read_text())
dask.config.update_defaults(_defaults)


@dataclass
class GPUOptions:
    """GPU memory options, as TensorFlow's ``GPUOptions``.

    Attributes
    ----------
    allow_growth
        Grow the GPU memory pool on demand instead of reserving it up front.
    per_process_gpu_memory_fraction
        Cap each GPU worker at this fraction of its device's memory (0: no cap).
    visible_device_list
        Comma-separated GPU ids the embedded cluster may use ('' for all).
    virtual_devices
        Memory limits in MiB: split each physical GPU into that many logical GPUs, one worker
        each, capped at its limit (TensorFlow's logical device configuration).
    """

    allow_growth: bool = False
    per_process_gpu_memory_fraction: float = 0.0
    visible_device_list: str = ""
    virtual_devices: list[int] = field(default_factory=list)

    def validate(self) -> GPUOptions:
        """Check every field's type and range; return ``self`` or raise ``TypeError`` /
        ``ValueError`` naming the bad field."""
        if not isinstance(self.allow_growth, bool):
            raise TypeError(f"gpu_options.allow_growth must be a bool; got {self.allow_growth!r}")
        fraction = self.per_process_gpu_memory_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
            raise TypeError(
                f"gpu_options.per_process_gpu_memory_fraction must be a number; got {fraction!r}"
            )
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(
                "gpu_options.per_process_gpu_memory_fraction must be in [0, 1] (0 means no cap);"
                f" got {fraction!r}"
            )
        limits = self.virtual_devices
        if not isinstance(limits, (list, tuple)) or any(
            isinstance(mb, bool) or not isinstance(mb, int) or mb <= 0 for mb in limits
        ):
            raise ValueError(
                "gpu_options.virtual_devices must be a list of memory limits in MiB (ints > 0), "
                f"one per logical GPU; got {limits!r}"
            )
        if not isinstance(self.visible_device_list, str):
            raise TypeError(
                "gpu_options.visible_device_list must be a string of GPU ids like '0,1'; got "
                f"{self.visible_device_list!r}"
            )
        ids = [s.strip() for s in self.visible_device_list.split(",") if s.strip()]
        if any(not s.isdigit() for s in ids):
            raise ValueError(
                "gpu_options.visible_device_list must be comma-separated GPU ids like '0,1'; got "
                f"{self.visible_device_list!r}"
            )
        return self


@dataclass
class SessionConfig:
    """How a :class:`~daskgraph.runtime.client.session.Session` places and runs ops.

    Attributes
    ----------
    log_device_placement
        Log the device mapping and each op's device (logger ``daskgraph.placement`` and stderr).
    allow_soft_placement
        Fall back to an available device when a request cannot be met.
    gpu_options
        GPU memory options (:class:`GPUOptions`).
    device_count
        Maximum number of devices of a type to use, e.g. ``{"GPU": 0}`` to hide GPUs.
    operation_timeout_in_ms
        Deadline of every run, in milliseconds (0: none); a run past it is cancelled with
        ``DeadlineExceededError``. ``RunOptions.timeout_in_ms`` overrides it for one run.
    place_pruned_graph
        Place only the ops each run needs (TensorFlow's ``GraphOptions.place_pruned_graph``,
        on for ``InteractiveSession``): an op no run needs may ask for a device there is not.
        Off, the whole graph is placed at the first run, and such an op fails every run.
    global_jit
        Compile every op that can be (TensorFlow's ``global_jit_level`` ``ON_1``/``ON_2``):
        fused kernels also take transcendental functions, within a few units in the last
        place of NumPy's results (:data:`daskgraph.kernels.fusable.RELAXED_RTOL`).
    """

    log_device_placement: bool = False
    allow_soft_placement: bool = False
    gpu_options: GPUOptions = field(default_factory=GPUOptions)
    device_count: dict[str, int] = field(default_factory=dict)
    operation_timeout_in_ms: int = 0
    place_pruned_graph: bool = False
    global_jit: bool = False

    def places_pruned_graph(self) -> bool:
        """Whether sessions of this config place each run's pruned graph."""
        return self.place_pruned_graph

    def jit_compiles_graph(self) -> bool:
        """Whether sessions of this config compile every op they can, as under TensorFlow's
        ``global_jit_level`` (their fused kernels then take transcendental functions too;
        see :mod:`daskgraph.kernels.fused`)."""
        return self.global_jit

    def validate(self) -> SessionConfig:
        """Check every field (and the GPU options); return ``self`` or raise ``TypeError`` /
        ``ValueError`` naming the bad field."""
        for name in (
            "log_device_placement",
            "allow_soft_placement",
            "place_pruned_graph",
            "global_jit",
        ):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool; got {getattr(self, name)!r}")
        if not isinstance(self.gpu_options, GPUOptions):
            raise TypeError(f"gpu_options must be a GPUOptions; got {self.gpu_options!r}")
        self.gpu_options.validate()
        check_timeout_ms("operation_timeout_in_ms", self.operation_timeout_in_ms)
        for key, value in dict(self.device_count).items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"device_count[{key!r}] must be an int >= 0; got {value!r}")
        return self


#: what makes the config of a Session made without one (None: a plain SessionConfig)
_session_defaults: list[Callable[[], SessionConfig]] = []


def set_session_defaults(make: Callable[[], SessionConfig] | None) -> None:
    """Have every ``Session`` made without a config from now on take ``make()`` (a new
    :class:`SessionConfig` each call; None: a plain one again), as TensorFlow's sessions take
    the process's context config when given none (``tf.config``'s device settings,
    :mod:`daskgraph.compat.config`, install theirs here)."""
    _session_defaults[:] = [] if make is None else [make]


def default_session_config() -> SessionConfig:
    """The config of a ``Session`` made without one (see :func:`set_session_defaults`).

    >>> default_session_config() == SessionConfig()
    True
    """
    return _session_defaults[0]() if _session_defaults else SessionConfig()


def check_timeout_ms(name: str, value: object) -> None:
    """Refuse a timeout in milliseconds that is not an int >= 0, naming it.

    >>> check_timeout_ms("timeout_in_ms", 500)
    >>> check_timeout_ms("timeout_in_ms", "5s")
    Traceback (most recent call last):
    ...
    TypeError: timeout_in_ms must be an int number of milliseconds >= 0 (0: no deadline); got '5s'
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int number of milliseconds >= 0 (0: no deadline); got {value!r}"
        )
    if value < 0:
        raise ValueError(f"{name} must be >= 0 milliseconds (0: no deadline); got {value}")


def worker_template() -> list[str] | None:
    """The modules of the template process the embedded cluster's nannies fork their workers
    from (``daskgraph.local.template-modules``), or None where they spawn fresh interpreters
    (``daskgraph.local.multiprocessing-method``: ``"spawn"``).

    >>> worker_template()[:2]
    ['numpy', 'distributed']
    >>> with dask.config.set({"daskgraph.local.multiprocessing-method": "spawn"}):
    ...     worker_template() is None
    True
    """
    method = dask.config.get("daskgraph.local.multiprocessing-method", "forkserver")
    if method not in ("forkserver", "spawn"):
        raise ValueError(
            "daskgraph.local.multiprocessing-method (DASK_DASKGRAPH__LOCAL__MULTIPROCESSING_METHOD)"
            f' must be "forkserver" or "spawn"; got {method!r}'
        )
    if method == "spawn":
        return None
    return [str(m) for m in dask.config.get("daskgraph.local.template-modules", ())]


def virtual_gpu_count() -> int:
    """How many virtual GPU workers the embedded cluster adds (``daskgraph.virtual-gpus``)."""
    value = dask.config.get("daskgraph.virtual-gpus", 0)
    try:
        count = int(value)
        if isinstance(value, bool) or count != float(value):
            count = -1
    except (TypeError, ValueError):
        count = -1
    if count < 0:
        raise ValueError(
            "daskgraph.virtual-gpus (DASK_DASKGRAPH__VIRTUAL_GPUS) must be an int >= 0; "
            f"got {value!r}"
        )
    return count
