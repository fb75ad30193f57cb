"""Input pipelines: ``tf.data`` datasets and iterators, and TF1's queues, as graph ops.

The package is ``dg.data``: it gathers the names of :mod:`daskgraph.data.dataset` (TensorFlow
1's ``tf.data``); :mod:`~daskgraph.data.dataset_ops` registers the dataset ops (their
kernels and the pipeline's stages: :mod:`daskgraph.kernels.dataset_ops`),
:mod:`~daskgraph.data.queues` and :mod:`~daskgraph.data.queue_ops` TF1's queues.
"""

from daskgraph.data.dataset import (
    Dataset,
    Iterator,
    make_initializable_iterator,
    make_one_shot_iterator,
)

__all__ = ["Dataset", "Iterator", "make_initializable_iterator", "make_one_shot_iterator"]
