"""Training names in one namespace, as ``tf.train``: optimizers, ``Saver`` and the global step.

``dg.train.AdamOptimizer`` is :class:`daskgraph.training.optimizers.AdamOptimizer`, and so on; this
module only gathers the names of :mod:`daskgraph.training.optimizers`,
:mod:`daskgraph.training.adaptive_optimizers`, :mod:`daskgraph.training.proximal_optimizers`,
:mod:`daskgraph.training.saver`
and :mod:`daskgraph.training.global_step`, the learning-rate schedules of
:mod:`daskgraph.training.learning_rate`,
moving averages (:mod:`daskgraph.training.moving_averages`), threads'
:mod:`daskgraph.training.coordinator`,
checkpoint readers (:mod:`daskgraph.training.checkpoint_utils`), the
:mod:`daskgraph.training.supervisor` and
:mod:`daskgraph.training.sync_replicas`, event
files read back (:mod:`daskgraph.summary.reader`),
monitored sessions and their hooks (:mod:`daskgraph.training.monitored_session`,
:mod:`daskgraph.training.session_hooks`, :mod:`daskgraph.training.profiler_hook`,
:mod:`daskgraph.training.session_manager`) and data-parallel towers from
:mod:`daskgraph.training.replicate`.

>>> import daskgraph as dg
>>> dg.train.Saver is dg.saver.Saver and dg.train.Optimizer is dg.optimizers.Optimizer
True
"""

from daskgraph.summary.reader import summary_iterator
from daskgraph.training.adaptive_optimizers import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    FtrlOptimizer,
    RMSPropOptimizer,
)
from daskgraph.training.checkpoint_utils import (
    NewCheckpointReader,
    checkpoints_iterator,
    init_from_checkpoint,
    list_variables,
    load_checkpoint,
    load_variable,
    warm_start,
)
from daskgraph.training.coordinator import Coordinator, LooperThread, start_queue_runners
from daskgraph.training.global_step import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from daskgraph.training.learning_rate import (
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from daskgraph.training.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from daskgraph.training.moving_averages import ExponentialMovingAverage
from daskgraph.training.optimizers import (
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
)
from daskgraph.training.profiler_hook import ProfilerHook
from daskgraph.training.proximal_optimizers import (
    AdagradDAOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
)
from daskgraph.training.replicate import (
    Replicas,
    average_gradients,
    replica_device_setter,
    replicate,
)
from daskgraph.training.saver import (
    CheckpointState,
    Saver,
    checkpoint_exists,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from daskgraph.training.session_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
    write_graph,
)
from daskgraph.training.session_manager import Scaffold, SessionManager
from daskgraph.training.supervisor import Supervisor, basic_train_loop
from daskgraph.training.sync_replicas import SyncReplicasOptimizer

__all__ = [
    "AdadeltaOptimizer",
    "AdagradDAOptimizer",
    "AdagradOptimizer",
    "AdamOptimizer",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "CheckpointState",
    "ChiefSessionCreator",
    "Coordinator",
    "ExponentialMovingAverage",
    "FeedFnHook",
    "FinalOpsHook",
    "FtrlOptimizer",
    "GlobalStepWaiterHook",
    "GradientDescentOptimizer",
    "LoggingTensorHook",
    "LooperThread",
    "MomentumOptimizer",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "NewCheckpointReader",
    "Optimizer",
    "ProfilerHook",
    "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer",
    "RMSPropOptimizer",
    "Replicas",
    "Saver",
    "Scaffold",
    "SecondOrStepTimer",
    "SessionCreator",
    "SessionManager",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "SingularMonitoredSession",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "Supervisor",
    "SyncReplicasOptimizer",
    "WorkerSessionCreator",
    "assert_global_step",
    "average_gradients",
    "basic_train_loop",
    "checkpoint_exists",
    "checkpoints_iterator",
    "cosine_decay",
    "cosine_decay_restarts",
    "create_global_step",
    "exponential_decay",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "init_from_checkpoint",
    "inverse_time_decay",
    "latest_checkpoint",
    "linear_cosine_decay",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "natural_exp_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
    "remove_checkpoint",
    "replica_device_setter",
    "replicate",
    "start_queue_runners",
    "summary_iterator",
    "update_checkpoint_state",
    "warm_start",
    "write_graph",
]
