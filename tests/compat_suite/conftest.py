"""The compatibility suite's programs are run by tests/integration/test_compat_suite.py, not
collected: importing one (``--doctest-modules`` imports every module) would run it."""

import pathlib

collect_ignore = [
    p.name for p in pathlib.Path(__file__).parent.glob("*.py") if p.name != "conftest.py"
]
