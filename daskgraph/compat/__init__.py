"""TensorFlow-compatible names for daskgraph.

:mod:`daskgraph.compat.v1` maps TensorFlow 1's names onto daskgraph's, so that a TF1
device-placement program runs after changing only its import to
``import daskgraph.compat.v1 as tf``.
"""
