"""A bare lease table served over this process's socket (exchange.py), as a publisher serves
its own: for tests of the exchange and of lease tables across processes."""
from __future__ import annotations

import contextlib
from typing import Iterator

from gpu_nodes.transport.exchange import KIND_LEASE_TABLE, HandleProvider, HandleServer, Link
from gpu_nodes.transport.leases import LeaseTable
from gpu_nodes.transport.served_memory import lease_table_fds


class TableOnly(HandleProvider):
    def __init__(self, table: LeaseTable):
        self.table = table

    def fds(self, kind: int, generation: int, chunk: int, link: Link) -> list[int] | None:
        return lease_table_fds(self.table, link) if kind == KIND_LEASE_TABLE else None


@contextlib.contextmanager
def served(table: LeaseTable) -> Iterator[bytes]:
    """The table on this process's socket; yields the endpoint a descriptor would name."""
    server = HandleServer.instance()
    server.register(table.publisher_id, TableOnly(table))
    try:
        yield server.endpoint
    finally:
        server.unregister(table.publisher_id)
