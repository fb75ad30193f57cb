"""Training names in one namespace, as ``tf.train``: optimizers, ``Saver`` and the global step.

``dg.train.AdamOptimizer`` is :class:`daskgraph.optimizers.AdamOptimizer`, and so on; this
module only gathers the names of :mod:`daskgraph.optimizers`,
:mod:`daskgraph.optimizers_more`, :mod:`daskgraph.optimizers_proximal`, :mod:`daskgraph.saver`
and :mod:`daskgraph.global_step`, the learning-rate schedules of :mod:`daskgraph.learning_rate`,
moving averages (:mod:`daskgraph.moving_averages`), threads' :mod:`daskgraph.coordinator`,
checkpoint readers (:mod:`daskgraph.checkpoint_utils`), the :mod:`daskgraph.supervisor` and
:mod:`daskgraph.sync_replicas`, event
files read back (:mod:`daskgraph.summary_reader`),
monitored sessions and their hooks (:mod:`daskgraph.monitored_session`,
:mod:`daskgraph.session_hooks`, :mod:`daskgraph.profiler_hook`,
:mod:`daskgraph.session_manager`) and data-parallel towers from :mod:`daskgraph.replicate`.

>>> import daskgraph as dg
>>> dg.train.Saver is dg.saver.Saver and dg.train.Optimizer is dg.optimizers.Optimizer
True
"""

from daskgraph.checkpoint_utils import (
    NewCheckpointReader,
    checkpoints_iterator,
    init_from_checkpoint,
    list_variables,
    load_checkpoint,
    load_variable,
    warm_start,
)
from daskgraph.coordinator import Coordinator, LooperThread, start_queue_runners
from daskgraph.global_step import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from daskgraph.learning_rate import (
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
from daskgraph.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from daskgraph.moving_averages import ExponentialMovingAverage
from daskgraph.optimizers import (
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
)
from daskgraph.optimizers_more import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    FtrlOptimizer,
    RMSPropOptimizer,
)
from daskgraph.optimizers_proximal import (
    AdagradDAOptimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
)
from daskgraph.profiler_hook import ProfilerHook
from daskgraph.replicate import Replicas, average_gradients, replica_device_setter, replicate
from daskgraph.saver import (
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
from daskgraph.session_hooks import (
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
from daskgraph.session_manager import Scaffold, SessionManager
from daskgraph.summary_reader import summary_iterator
from daskgraph.supervisor import Supervisor, basic_train_loop
from daskgraph.sync_replicas import SyncReplicasOptimizer

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
