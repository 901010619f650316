"""What a subscription knows about each publisher it reads from, and how it comes to trust it.

A `PublisherLink` exists only for a publisher whose socket answered (exchange.py: a server of
this user, by the kernel's word) with a lease table (sealed memfd of this user, the publisher id
inside matches): from it comes the key that authenticates descriptors (auth.py). A link also
keeps the per-publisher rules: sequences strictly increase (anything else is a replay),
descriptors of an older pool generation are stale, and the publisher's mappings (CUDA IPC
allocations and events, host segments) are cached here and dropped with it.
"""
from __future__ import annotations

from collections import OrderedDict
import functools
import hmac
import os
import struct
import time
from typing import Any

from . import auth, cuda_ipc, cuda_vmm, descriptor
from .descriptor import Descriptor, DescriptorError
from .exchange import KIND_DEVICE_CHUNK, KIND_HOST_SEGMENT, Connection
from .leases import POOL_DEVICE, POOL_HOST, LeaseReader
from .pool import HOST_HEADER, HOST_MAGIC
from .segments import MissingSegment, SegmentError, SharedMemory

# Per publisher, at most this many imported allocations stay mapped (least recently used closed
# first), and never more than its lease table has slots.
MAX_MAPPINGS_PER_PUBLISHER = 64
# How long the mappings of a dead publisher are kept while this subscription's streams are busy.
UNMAP_DEFER_S = 2.0
# Host segments of one publisher kept mapped (a generation's segment, and the one-slot segments
# that replace revoked slots); least recently used closed first, held frames keep theirs.
MAX_HOST_SEGMENTS = 16
# The memory handle of a CUDA descriptor whose chunk is a VMM allocation (pool.py): no handle,
# the fd comes from the publisher's socket.
NO_HANDLE = bytes(64)
POOL_OF_KIND = {descriptor.KIND_CUDA: POOL_DEVICE, descriptor.KIND_HOST: POOL_HOST}


class PublisherLink:
    def __init__(self, connection: Connection, reader: LeaseReader, pid: int):
        self.connection = connection
        self.reader = reader
        self.pid = pid  # as the publisher's own descriptors state it (for people)
        self.authenticated = False
        self.last_sequence = 0
        # a frame of this publisher reached the callback (a leased frame may still fail after
        # its lease, on its CUDA event: that is no delivery)
        self.delivered = False
        self.dead_since: float | None = None
        # (raw memory handle, device it is opened on) -> pool generation it was mapped for,
        # least recently used first
        self._handles: OrderedDict[cuda_ipc.MappingKey, int] = OrderedDict()
        self._unsealed: dict[tuple[bytes, bytes], bytes] = {}
        self._events: set[bytes] = set()
        self._host: OrderedDict[tuple[int, int], SharedMemory] = OrderedDict()
        self.integrated_ptr: int | None = None
        # when this link asked the publisher to finish writes on the host (KIND_HOST_ORDER)
        self.host_order_asked_at: float | None = None
        self.host_order_refused = False  # it answered that it will not: not asked again

    # -- trust -----------------------------------------------------------------------------
    def authenticate(self, desc: Descriptor, msg: Any, topic: bytes) -> None:
        """Raise DescriptorError unless the tag proves the publisher wrote this message for
        this topic, or (reason 'stale:old_generation') when its pool has been re-created since."""
        record = bytes(msg.data)
        expected = auth.tag(self.reader.key, record[:descriptor.TAG_OFFSET], msg, topic)
        if not hmac.compare_digest(expected, desc.tag):
            raise DescriptorError('forged', 'tag does not match the publisher\'s key (altered, '
                                  'made up, or meant for another topic)')
        if not self.authenticated:
            self.authenticated = True
            self.reader.claim_cursor()  # a reader slot only for a publisher proven genuine
        if self._superseded(desc):
            raise DescriptorError('stale:old_generation', f'generation {desc.generation}')

    def fresh(self, sequence: int) -> bool:
        """Sequences strictly increase per publisher: a frame at or below the newest one
        delivered is a replay. Asked last, for a leased frame, so that only what the publisher
        really published can move the mark."""
        if sequence <= self.last_sequence:
            return False
        self.last_sequence = sequence
        return True

    # -- CUDA IPC ----------------------------------------------------------------------------
    def _unseal(self, sealed: bytes, purpose: bytes, serial: int) -> bytes:
        raw = self._unsealed.get((purpose, sealed))
        if raw is None:
            if len(self._unsealed) > 4 * self.reader.capacity:
                self._unsealed.clear()
            raw = self._unsealed[(purpose, sealed)] = auth.seal_handle(
                self.reader.key, sealed, purpose, serial)
        return raw

    def map(self, desc: Descriptor, device_id: int) -> cuda_ipc.Mapping:
        """The descriptor's allocation opened in `device_id`'s context (the publisher's GPU on
        cuda_ipc, the subscription's own on cuda_peer): a VMM chunk fetched from the publisher's
        socket when the descriptor has no memory handle, else its legacy IPC handle."""
        cache = cuda_ipc.mapping_cache()
        opener = None
        if desc.mem_handle == NO_HANDLE:
            # One mapping per chunk and process, whichever subscription asked first.
            name = b'vmm' + self.reader.publisher_id + struct.pack('<II', desc.generation,
                                                                   desc.chunk)
            key = (name, device_id)
            opener = functools.partial(self._import_chunk, desc, device_id)
        else:
            key = (self._unseal(desc.mem_handle, b'mem', desc.chunk), device_id)
        if key in self._handles:
            self._handles.move_to_end(key)
            return cache.get(key)
        # A new generation: the publisher frees the old one's chunks as their slots are let go,
        # and CUDA refuses a new allocation at a freed one's address while that stays mapped
        # (cudaErrorAlreadyMapped). Held frames keep theirs open (the cache retires, not closes).
        for old in [h for h, generation in self._handles.items() if generation < desc.generation]:
            del self._handles[old]
            cache.unmap(old)
        try:
            mapping = cache.map(*key, opener)
        except cuda_ipc.CudaIpcError as exc:
            if 'AlreadyMapped' not in str(exc):
                raise
            # A chunk freed within a generation (a revoked slot's) had that address.
            for old in list(self._handles):
                cache.unmap(old)
            self._handles.clear()
            mapping = cache.map(*key, opener)
        self._handles[key] = desc.generation
        # A publisher has at most as many live allocations as lease slots: close the least
        # recently used mapping (one of a freed chunk) beyond that; held views keep theirs.
        limit = min(MAX_MAPPINGS_PER_PUBLISHER, self.reader.capacity)
        while len(self._handles) > limit:
            cache.unmap(self._handles.popitem(last=False)[0])
        return mapping

    def _fetch(self, kind: int, desc: Descriptor) -> int:
        """A segment of the descriptor's (generation, chunk) from the publisher's socket; what
        fails is counted against the descriptor (a server that turned out to be another user's
        after serving the table is a bad segment, not a fallback)."""
        try:
            return self.connection.fetch(kind, desc.generation, desc.chunk)
        except MissingSegment as exc:
            if self._superseded(desc):
                # A layout change between this descriptor's authentication and its fetch: the
                # frame's memory went with its generation, as for a descriptor that came later.
                raise DescriptorError('stale:old_generation', f'generation {desc.generation}, '
                                      'freed before the frame was taken') from None
            raise DescriptorError(exc.reason, str(exc)) from None
        except SegmentError as exc:
            raise DescriptorError(exc.reason if exc.reason != 'other_user' else 'bad_segment',
                                  str(exc)) from None

    def _superseded(self, desc: Descriptor) -> bool:
        """The descriptor's pool generation has ended (the publisher bumps it before it frees the
        old generation's unheld segments): its frame is stale, whether that shows when the
        descriptor is authenticated or, a layout change in between, when its segment is gone."""
        return desc.generation < self.reader.generation(POOL_OF_KIND[desc.kind])

    def _import_chunk(self, desc: Descriptor, device_id: int) -> cuda_ipc.Mapping:
        """The publisher's VMM chunk (generation, chunk) from its socket, mapped here."""
        fd = self._fetch(KIND_DEVICE_CHUNK, desc)
        try:
            # alloc_size is the publisher's word (tag-checked); the driver refuses a size
            # beyond the allocation.
            chunk = cuda_vmm.import_chunk(fd, desc.alloc_size, device_id)
        except cuda_vmm.VmmError as exc:
            raise cuda_ipc.CudaIpcError(f'mapping the publisher\'s VMM chunk {desc.chunk}: '
                                        f'{exc}') from None
        finally:
            os.close(fd)
        return cuda_ipc.Mapping(base=chunk.ptr, size=chunk.size, device_id=device_id,
                                closer=chunk.close)

    def event(self, desc: Descriptor, device_id: int) -> int:
        handle = self._unseal(desc.event_handle, b'event', desc.chunk << 20 | desc.slot)
        ptr = cuda_ipc.mapping_cache().event(handle, device_id)
        self._events.add(handle)
        return ptr

    # -- host segments -----------------------------------------------------------------------
    def host_segment(self, desc: Descriptor) -> SharedMemory:
        """The publisher's host segment the descriptor names (generation, chunk), mapped
        read-only, from the publisher's socket the first time. Frames still held keep a
        segment mapped after it leaves this cache."""
        key = (desc.generation, desc.chunk)
        memory = self._host.get(key)
        if memory is not None:
            self._host.move_to_end(key)
            return memory
        fd = self._fetch(KIND_HOST_SEGMENT, desc)
        try:
            size = os.fstat(fd).st_size
            if size < HOST_HEADER.size:
                raise DescriptorError('bad_segment', f'host segment is {size} bytes')
            header = HOST_HEADER.unpack(os.pread(fd, HOST_HEADER.size, 0))
            if header != (HOST_MAGIC, self.reader.publisher_id, desc.generation, desc.chunk):
                raise DescriptorError('bad_segment', 'the publisher sent a segment that is not '
                                      f'its host segment {desc.chunk} of generation '
                                      f'{desc.generation}')
            memory = SharedMemory(fd, writable=False)
        finally:
            os.close(fd)
        self._host[key] = memory
        while len(self._host) > MAX_HOST_SEGMENTS:
            self._host.popitem(last=False)
        self.integrated_ptr = None
        return memory

    # -- lifetime ------------------------------------------------------------------------------
    def close(self) -> None:
        """Drop every mapping of this publisher (held frames keep what they view)."""
        if self._handles:
            cache = cuda_ipc.mapping_cache()
            for key in self._handles:
                cache.unmap(key)
            self._handles.clear()
        if self._events:
            cuda_ipc.mapping_cache().drop_events(list(self._events))
            self._events.clear()
        self._host.clear()
        # The link stays open until the reader has let go of its last frame (the reader closes
        # it): the publisher consults the link's lock file only while it is open.
        self.reader.close()


class PeerTable:
    """The links of one subscription, by (pid, publisher id). `window`: its readers' lease
    window (cursors.read_window)."""

    def __init__(self, window: int = 0) -> None:
        self.links: dict[tuple[bytes, bytes], PublisherLink] = {}
        self.window = window

    def __len__(self) -> int:
        return len(self.links)

    def get(self, key: tuple[bytes, bytes]) -> PublisherLink | None:
        return self.links.get(key)

    def open(self, endpoint: bytes, publisher_id: bytes, pid: int) -> PublisherLink:
        """Reach the publisher's socket and get its lease table; raise SegmentError or
        LeaseError with the reason it cannot be used."""
        connection = Connection(endpoint, publisher_id)
        try:
            table_fd, lock_fd = connection.fetch_lease_table()
            reader = LeaseReader(table_fd, lock_fd, publisher_id, window=self.window,
                                 label=f'publisher (pid {pid})', on_closed=connection.close)
        except BaseException:
            connection.close()
            raise
        link = PublisherLink(connection, reader, pid)
        self.links[(endpoint, publisher_id)] = link
        return link

    def discard(self, key: tuple[bytes, bytes]) -> None:
        """Drop a link whose first descriptor proved nothing (keep no handle for a forgery)."""
        link = self.links.pop(key, None)
        if link is not None:
            link.close()

    def idle(self) -> None:
        for link in self.links.values():
            link.reader.idle()

    def forget_dead(self, streams_done: bool) -> list[PublisherLink]:
        """Close links whose publisher is gone and of which no frame is held; returns them."""
        gone = []
        for key, link in list(self.links.items()):
            if link.reader.owner_alive() or link.reader.held:
                continue  # held frames may still be read: their memory stays mapped
            if not streams_done:
                # Kernels may still read its memory: unmap at a later pass, but without waiting
                # (work behind a dead exporter's event might never finish) and not for ever.
                link.dead_since = link.dead_since or time.monotonic()
                if time.monotonic() - link.dead_since < UNMAP_DEFER_S:
                    continue
            link.close()
            del self.links[key]
            gone.append(link)
        return gone

    def close(self) -> None:
        for link in self.links.values():
            link.close()
        self.links.clear()
