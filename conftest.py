"""The project's own test configuration: daskgraph's pytest plugin (opt-in, as for any user)."""

pytest_plugins = ["daskgraph.testing"]
