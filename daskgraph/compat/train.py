"""``tf.train``'s cluster names: ``ClusterSpec`` and ``Server``, from :mod:`daskgraph.server`."""

from daskgraph.server import ClusterSpec, Server

__all__ = ["ClusterSpec", "Server"]
