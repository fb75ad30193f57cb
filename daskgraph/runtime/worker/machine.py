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
import re
import socket
from collections.abc import Callable

__all__ = ["alive", "host_identity", "leftovers", "machine_tag"]


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


def leftovers(folder: str, name: re.Pattern, kind: Callable[[int], bool]) -> list[str]:
    """The paths of the entries of ``folder`` that processes of this machine left behind: a
    name ``name`` matches (its groups 1 and 2: the creator's process id and
    :func:`machine_tag`), whose creator is gone, owned by this user, of ``kind`` (a test of
    ``st_mode``: ``stat.S_ISDIR``, ``stat.S_ISREG``). Entries of live processes, of other
    users and of other machines are left out; a folder that cannot be read has none.

    >>> import stat
    >>> leftovers("/nonexistent-folder", re.compile("x-(1)-(2)"), stat.S_ISREG)
    []
    """
    mine, found = machine_tag(), []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            match = name.match(entry.name)
            if match is None or match.group(2) != mine or alive(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if kind(info.st_mode) and info.st_uid == os.getuid():
                    found.append(entry.path)
    return found
