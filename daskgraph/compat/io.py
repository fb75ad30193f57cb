"""``tf.io``'s names that daskgraph has: ``tf.io.gfile`` (:mod:`daskgraph.compat.io_gfile`)."""

from daskgraph.compat import io_gfile as gfile

__all__ = ["gfile"]
