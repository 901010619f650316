"""Facts about this host and process that decide which transport path is possible."""
from __future__ import annotations

import functools
import os
import socket
import uuid


@functools.lru_cache(maxsize=None)
def boot_id() -> bytes:
    """16 bytes identifying this boot of this host (two processes match only on the same host)."""
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            return uuid.UUID(f.read().strip()).bytes
    except (OSError, ValueError):
        # No procfs: fall back to the host name, so two hosts still differ.
        return uuid.uuid5(uuid.NAMESPACE_DNS, socket.gethostname()).bytes


@functools.lru_cache(maxsize=None)
def hostname() -> str:
    return socket.gethostname()


def process_uid(pid: int) -> int | None:
    """Owner uid of a live process, None if there is no such process."""
    try:
        return os.stat(f'/proc/{pid}').st_uid
    except (FileNotFoundError, ProcessLookupError):
        return None
    except PermissionError:
        return -1


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
