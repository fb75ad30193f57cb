"""Looking at plans and runs: plans as data and pictures, scheduler-side records and the
``/daskgraph`` dashboard page."""
