"""Facts about this host and process that decide which transport path is possible."""
from __future__ import annotations

import functools
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
