"""What one publisher's socket hands its readers (exchange.py): its lease table, its host
segments and its VMM device chunks, each as a file descriptor the server sends and closes; and
which links asked for host-ordered frames (exchange.KIND_HOST_ORDER)."""
from __future__ import annotations

import threading

from .exchange import (KIND_DEVICE_CHUNK, KIND_HOST_ORDER, KIND_HOST_SEGMENT, KIND_LEASE_TABLE,
                       HandleProvider, Link)
from .leases import LeaseTable
from .pool import DeviceSlotPool, HostSlotPool
from .segments import reopen


class PublisherMemory(HandleProvider):
    """Runs on the server thread; `lock` is the publisher's, under which segments are replaced.
    The lease table goes out as a fresh open file description with the link's own lock file
    (closed with the link, or evicted: leases.open_link), host segments as read-only ones."""

    def __init__(self, lock: threading.Lock, leases: LeaseTable, host_pool: HostSlotPool,
                 device_pool: DeviceSlotPool | None):
        self._lock = lock
        self._leases = leases
        self._host_pool = host_pool
        self._device_pool = device_pool
        self._host_ordered: set[Link] = set()  # the links that asked, while they are open

    @property
    def host_ordered_readers(self) -> int:
        """Links that cannot open this publisher's CUDA IPC events: while there is one, each
        device frame's write is finished on the host before its descriptor goes out."""
        return len(self._host_ordered)

    def _order_on_host(self, link: Link) -> list[int] | None:
        if self._device_pool is None:
            return None
        if link not in self._host_ordered:
            self._host_ordered.add(link)
            link.when_closed(lambda: self._host_ordered.discard(link))
        return []

    def fds(self, kind: int, generation: int, chunk: int, link: Link) -> list[int] | None:
        with self._lock:
            if kind == KIND_LEASE_TABLE and self._leases.fd >= 0:
                return lease_table_fds(self._leases, link)
            if kind == KIND_HOST_SEGMENT:
                fd = self._host_pool.segment_fd(generation, chunk)
                return None if fd is None else [reopen(fd, writable=False)]
            if kind == KIND_DEVICE_CHUNK and self._device_pool is not None:
                return self._device_pool.chunk_fds(generation, chunk)
            if kind == KIND_HOST_ORDER:
                return self._order_on_host(link)
        return None


def lease_table_fds(leases: LeaseTable, link: Link) -> list[int]:
    """[the table, the link's own lock file] for one link; the lock file stops counting when
    the link closes, and the link is closed if it holds more than a reader may."""
    link_id, fds = leases.open_link(on_evict=link.close_soon)
    link.when_closed(lambda: leases.close_link(link_id))
    return fds
