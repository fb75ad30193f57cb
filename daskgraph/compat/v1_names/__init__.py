"""The names of :mod:`daskgraph.compat.v1` (``tf.*``), one module per concept.

Its one job is to gather them: each module names one concept's objects (graphs, running,
variables, arrays, math, ...), and :mod:`daskgraph.compat.v1` re-exports :data:`__all__`.
Import ``daskgraph.compat.v1``, not these modules.
"""

from daskgraph.compat.v1_names import (
    array_ops,
    control_flow,
    data_flow,
    graphs,
    math_ops,
    namespaces,
    random_ops,
    running,
    sparse_ops,
    state,
    string_ops,
)
from daskgraph.compat.v1_names.array_ops import *  # noqa: F403
from daskgraph.compat.v1_names.control_flow import *  # noqa: F403
from daskgraph.compat.v1_names.data_flow import *  # noqa: F403
from daskgraph.compat.v1_names.graphs import *  # noqa: F403
from daskgraph.compat.v1_names.math_ops import *  # noqa: F403
from daskgraph.compat.v1_names.namespaces import *  # noqa: F403
from daskgraph.compat.v1_names.random_ops import *  # noqa: F403
from daskgraph.compat.v1_names.running import *  # noqa: F403
from daskgraph.compat.v1_names.sparse_ops import *  # noqa: F403
from daskgraph.compat.v1_names.state import *  # noqa: F403
from daskgraph.compat.v1_names.string_ops import *  # noqa: F403

__all__ = [
    *namespaces.__all__,
    *graphs.__all__,
    *running.__all__,
    *state.__all__,
    *array_ops.__all__,
    *math_ops.__all__,
    *random_ops.__all__,
    *control_flow.__all__,
    *data_flow.__all__,
    *sparse_ops.__all__,
    *string_ops.__all__,
]
