"""This machine and its processes as the processes on it see them: the machine's identity
(host name and boot id), a short tag of it for file names, and whether a process of it lives.
Step channels and shared segments name their files after their creator's process and
machine, and remove those of processes that are gone.

>>> len(machine_tag()), alive(os.getpid())
(10, True)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket

__all__ = ["alive", "host_identity", "machine_tag"]


def host_identity() -> str:
    """This machine as the processes on it see it: its host name and boot id (two
    containers on one host differ in the first; a rebooted host in the second)."""
    boot = ""
    with contextlib.suppress(OSError):
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    return f"{socket.gethostname()}/{boot}"


def machine_tag() -> str:
    """A short tag of this machine (:func:`host_identity`) for file names."""
    return hashlib.sha256(host_identity().encode()).hexdigest()[:10]


def alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (another user's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (PermissionError: another user's process)
        return True
    return True
