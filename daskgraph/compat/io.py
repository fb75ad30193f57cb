"""``tf.io``'s names that daskgraph has: ``tf.io.gfile`` (:mod:`daskgraph.compat.io_gfile`)."""

from daskgraph.compat import io_gfile as gfile

__all__ = ["gfile"]


def __getattr__(name: str) -> object:
    """A name tf.io does not have: the AttributeError pointing to docs/compat.md."""
    from daskgraph.errors import missing_name

    raise missing_name("tf.io", name, globals())
