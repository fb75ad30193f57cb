"""Kernels: what a worker runs for an op, apart from how a graph is built of it.

A kernel is an array function ``kernel(xp, *inputs, **attrs)`` (``xp`` NumPy on a CPU, CuPy
on a GPU), registered for its op type by the op's builder in :mod:`daskgraph.ops`. The
modules here import no graph builder, gradient or session: a worker process loads only the
kernels of the ops it is sent, and never the planner's world: a program's kernels pickle as
references to the modules here, one per op family (:mod:`~daskgraph.kernels.math`,
:mod:`~daskgraph.kernels.array`, :mod:`~daskgraph.kernels.state`, :mod:`~daskgraph.kernels.nn`,
:mod:`~daskgraph.kernels.random`, :mod:`~daskgraph.kernels.queues`, ... named after the
:mod:`daskgraph.ops` module that registers them), so a worker imports the families it runs.
Fused chains
(:mod:`~daskgraph.kernels.fused`, :mod:`~daskgraph.kernels.fused_cuda`, a fused kernel's
next call: :mod:`~daskgraph.kernels.fused_again`, what fuses:
:mod:`~daskgraph.kernels.fusable`), their compiler thread
(:mod:`~daskgraph.kernels.compile_thread`), compile server
(:mod:`~daskgraph.kernels.compile_server`) and cache on disk
(:mod:`~daskgraph.kernels.kernel_cache`), BLAS's threads per product
(:mod:`~daskgraph.kernels.blas_threads`), the threads a kernel may use
(:mod:`~daskgraph.kernels.kernel_threads`, set by the worker runtime) and loops split over them
(:mod:`~daskgraph.kernels.split_loops`) live here too, as do the optimizers' updates
(:mod:`~daskgraph.kernels.training`), in place in one pass where the store alone holds the
buffers (:mod:`~daskgraph.kernels.slot_updates`, :mod:`~daskgraph.kernels.slot_loops`), traced
functions as a loop (:mod:`~daskgraph.kernels.loops`) or a dataset's ``map``
(:mod:`~daskgraph.kernels.dataset_ops`) runs them (:mod:`~daskgraph.kernels.subgraph`), and
TensorFlow's V2 checkpoint format, which ``RestoreV2`` (:mod:`~daskgraph.kernels.checkpoint_ops`)
reads where it runs and :class:`~daskgraph.training.saver.Saver` writes on the client
(:mod:`~daskgraph.kernels.checkpoint_files`, :mod:`~daskgraph.kernels.tensor_bundle`,
:mod:`~daskgraph.kernels.checkpoint_table`, :mod:`~daskgraph.kernels.checkpoint_slices`, and
protobuf's messages in :mod:`daskgraph.kernels.protos`).
"""
