"""Run a Python script in a fresh interpreter and read its report: the JSON object it prints
last, for integration tests whose checks must not share this process's imports or state."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["script_report"]


def script_report(args: Sequence[str], env: Mapping[str, str], timeout: float) -> Any:
    """Run ``python *args`` with environment ``env``; assert it exited 0 (showing the tail of
    its stderr otherwise) and return the JSON of the last line it printed."""
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
