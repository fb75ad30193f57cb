"""TensorFlow 1's top-level control-flow names: conditionals, loops, assertions, Python calls.

Its one job is to name ``tf.cond``, ``tf.while_loop``, ``tf.map_fn``, ``tf.group``,
``tf.Assert`` and ``tf.assert_*``, ``tf.check_numerics``, ``tf.py_func``, ``tf.print``
and their kin.
"""

from daskgraph.ops import (
    Print,
    cond,
    foldl,
    foldr,
    group,
    map_fn,
    no_op,
    numpy_function,
    py_func,
    scan,
    tuple,
    while_loop,
)
from daskgraph.ops import (
    print_v2 as print,
)
from daskgraph.ops.asserts import (
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_near,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_rank_at_least,
    assert_same_float_dtype,
    assert_scalar,
    assert_type,
)
from daskgraph.ops.branching import (
    case,
    switch_case,
)
from daskgraph.ops.numerics import (
    add_check_numerics_ops,
    check_numerics,
    verify_tensor_all_finite,
)

__all__ = [
    "Assert",
    "Print",
    "add_check_numerics_ops",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_integer",
    "assert_less",
    "assert_less_equal",
    "assert_near",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_none_equal",
    "assert_positive",
    "assert_rank",
    "assert_rank_at_least",
    "assert_same_float_dtype",
    "assert_scalar",
    "assert_type",
    "case",
    "check_numerics",
    "cond",
    "foldl",
    "foldr",
    "group",
    "map_fn",
    "no_op",
    "numpy_function",
    "print",
    "py_func",
    "scan",
    "switch_case",
    "tuple",
    "verify_tensor_all_finite",
    "while_loop",
]
