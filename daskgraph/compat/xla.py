"""``tf.xla``: ``tf.xla.experimental.jit_scope``, TensorFlow 1's per-block JIT switch.

Its one job is that name: ops made in a ``jit_scope`` are marked for compilation
(:func:`daskgraph.framework.scopes.jit_scope`), and daskgraph compiles them into fused
kernels that may take transcendental functions (:mod:`daskgraph.kernels.fused`).

>>> import daskgraph.compat.v1 as tf
>>> with tf.Graph().as_default():
...     with tf.xla.experimental.jit_scope():
...         y = tf.exp(tf.constant(0.0))
>>> y.op.get_attr("_XlaCompile")
True
"""

from types import SimpleNamespace

from daskgraph.framework.scopes import jit_scope

__all__ = ["experimental"]

#: ``tf.xla.experimental``
experimental = SimpleNamespace(jit_scope=jit_scope)


def __getattr__(name: str) -> object:
    """A name tf.xla does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.xla", name, globals(), section="tf")
