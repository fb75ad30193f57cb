"""daskgraph's benchmark suite: daskgraph measured side by side with its peers.

Run it with ``make bench`` (or ``.venv/bin/python -m benchmarks.run``). One module per case
(:mod:`~benchmarks.fine_grained`, :mod:`~benchmarks.compute_bound`, :mod:`~benchmarks.latency`,
:mod:`~benchmarks.scale`, :mod:`~benchmarks.feeds`), shared helpers in
:mod:`~benchmarks.common`, and the table, JSON, plot and ``docs/benchmarks.md`` in
:mod:`~benchmarks.report`. These are scripts, not tests: pytest does not collect them.
"""
