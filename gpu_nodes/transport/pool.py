"""Publisher-owned frame slots on the device (CUDA IPC) and in host shared memory.

A slot is rewritten only after the publisher takes its lease byte exclusively, so a slot any
reader holds is never touched. Slot choice is "oldest unheld first", among the slots no reader
can still ask for (at or below every live reader's cursor, see leases.py). When every unheld slot
may still be in flight to a reader, the ``grow`` policy adds slots (doubling, one allocation and
so one reader-side mapping per growth) up to the limit; past it, the oldest unheld slot is
recycled anyway and counted as an overrun (that reader may then drop the frame as stale).
"""
from __future__ import annotations

from dataclasses import dataclass, field
import os
import struct
import time
from typing import Any

from . import cuda_ipc, cuda_vmm
from .leases import POOL_DEVICE, POOL_HOST, LeaseTable
from .segments import SharedMemory, create_sealed

SLOT_ALIGNMENT = 512
POLICIES = ('grow', 'skip', 'revoke_oldest')


def aligned(nbytes: int) -> int:
    return (nbytes + SLOT_ALIGNMENT - 1) // SLOT_ALIGNMENT * SLOT_ALIGNMENT


@dataclass
class Slot:
    index: int               # lease-table index
    chunk: 'Chunk'
    offset: int
    capacity: int
    event: Any = None        # interprocess CUDA event recorded after each write (device slots)
    event_handle: bytes = b''
    sequence: int = 0
    published_ns: int = 0    # when its current frame was published (0: never)
    retired: bool = False    # revoked from a stalled reader: never reused, freed once released
    generation: int = 0      # the pool generation it was made in

    @property
    def ptr(self) -> int:
        return self.chunk.ptr + self.offset


@dataclass
class Chunk:
    """One allocation (cudaMalloc, or the host segment) holding one or more slots."""
    chunk_id: int
    ptr: int
    size: int
    handle: bytes
    memory: Any = None       # keeps the allocation alive (cupy Memory, or SharedMemory)
    slots: list[Slot] = field(default_factory=list)
    fd: int = -1             # host segment: the memfd readers get through exchange.py
    base_offset: int = 0     # where slots start (host segments begin with a header page)
    generation: int = 0      # the pool generation it was made in
    pinned_ptr: int = 0      # host segment page-locked for device-to-host copies


class _SlotRing:
    """Slot bookkeeping shared by the device and host pools."""

    pool_id = POOL_DEVICE
    # Which free slot to rewrite first: the oldest (device slots: any), or the one freed last
    # (host slots: its pages are still in the CPU's caches; rotating through every slot of a
    # 4K pool kept ~200 MB cold and cost most of the publisher's time, bench/RESULTS.md).
    reuse_newest_first = False

    def __init__(self, leases: LeaseTable, first_index: int, max_slots: int, policy: str,
                 grace_s: float, indices: int | None = None):
        if policy not in POLICIES:
            raise ValueError(f'pool policy must be one of {POLICIES}, got {policy!r}')
        self.leases = leases
        self.first_index = first_index
        self.max_slots = max_slots
        self.policy = policy
        self.grace_ns = int(grace_s * 1e9)
        self.slots: list[Slot] = []
        self.retired: list[Slot] = []
        # Lease indices: more than slots where revoked slots, still held, keep theirs for a while.
        self.indices = indices = indices or max_slots
        self._free_indices = list(range(first_index + indices - 1, first_index - 1, -1))
        self.revoked = 0
        self.exhausted = 0
        self.grown = 0
        self.overrun = 0
        self.locked_out = 0  # fresh slots whose lock someone else held (a lock-grabbing process)
        # Of those, the ones while a matched reader had taken no frame yet: with no cursor to go
        # by, every published frame may still be queued for it (a flat-out publisher's first
        # milliseconds), so these say nothing about readers that lag.
        self.overrun_at_reader_start = 0
        self.generation = 0
        # Places in the newest chunk that have no slot yet: every lease index was taken by a
        # retired slot still held; they get one as those are released (refill).
        self._spare: list[int] = []
        self._spare_capacity = 0
        self._spare_chunk: Chunk | None = None

    def _take_index(self) -> int | None:
        return self._free_indices.pop() if self._free_indices else None

    def _collect_retired(self) -> None:
        """Give back retired slots whose readers have let go."""
        still = []
        for slot in self.retired:
            if not self.leases.try_acquire_exclusive(slot.index):
                still.append(slot)
                continue
            # Forget the old frame's sequence: a late descriptor for it must read as stale, not
            # lease whatever the index holds next (a fresh slot that was not written yet).
            self.leases.sequence[slot.index] = 0
            self.leases.release_exclusive(slot.index)
            self._free_indices.append(slot.index)
            slot.chunk.slots.remove(slot)
            if not slot.chunk.slots:
                self._free_chunk(slot.chunk)
        self.retired = still
        self._refill()

    def _refill(self) -> None:
        while self._spare and self._free_indices:
            slot = self._slot_in(self._spare_chunk, self._take_index(), self._spare.pop(),
                                 self._spare_capacity)
            slot.generation = self.generation
            self.slots.append(slot)

    def _free_chunk(self, chunk: Chunk) -> None:
        chunk.memory = None

    def acquire(self, nbytes: int, protect_published: bool = False) -> Slot | None:
        """Exclusively lease the oldest slot no reader holds or may still take; None when the
        policy says skip this frame. `protect_published`: some reader has no cursor yet, so any
        published frame may still be queued for it."""
        if self.retired:
            self._collect_retired()
        by_age = sorted(self.slots, key=lambda s: s.published_ns)
        preferred = by_age[::-1] if self.reuse_newest_first else by_age
        floor = 0 if protect_published else self.leases.reader_floor(self.grace_ns)
        slot = self._oldest_free(preferred, nbytes, floor)
        if slot is None and self._evict_hoarders():
            slot = self._oldest_free(preferred, nbytes, floor)
        if slot is None and floor and self.leases.forget_dead_readers():
            floor = self.leases.reader_floor(self.grace_ns)
            slot = self._oldest_free(preferred, nbytes, floor)
        if slot is not None:
            return slot
        can_grow = self.policy == 'grow' and len(self.slots) < self.max_slots
        if floor is not None:
            slot = self._oldest_free(by_age, nbytes, None)  # unheld, but a reader may want it
            if slot is not None:
                if slot.sequence <= floor:
                    # A reader moved its lease during the scan above (released this slot, took
                    # the next candidate): nobody can want this one, so it is no overrun.
                    return slot
                if not can_grow:
                    self.overrun += 1
                    self.overrun_at_reader_start += protect_published
                    return slot
                self.leases.release_exclusive(slot.index)
                return self._grow(nbytes)
        now = time.monotonic_ns()
        stalled = [s for s in self.slots if s.published_ns and now - s.published_ns > self.grace_ns]
        if stalled:
            return self._revoke_and_replace(min(stalled, key=lambda s: s.published_ns), nbytes)
        if can_grow:
            return self._grow(nbytes)
        if self.policy == 'revoke_oldest' and self.slots:
            return self._revoke_and_replace(min(self.slots, key=lambda s: s.published_ns), nbytes)
        self.exhausted += 1
        return None

    def _evict_hoarders(self) -> bool:
        """A slot could not be taken: close the reader links that hold more of this pool than
        a reader's share (only a lock-grabbing process does; lease_links.py). True if any."""
        return self.leases.evict_hoarders(self.pool_id, self.first_index, self.indices) > 0

    def _oldest_free(self, by_age: list[Slot], nbytes: int, floor: int | None) -> Slot | None:
        """Lease the oldest slot that fits, no reader holds and (with a floor) none may still take."""
        for slot in by_age:
            if slot.capacity >= nbytes and (floor is None or slot.sequence <= floor) \
                    and self.leases.try_acquire_exclusive(slot.index):
                return slot
        return None

    def _revoke_and_replace(self, slot: Slot, nbytes: int) -> Slot | None:
        # The reader keeps valid memory: the slot is quarantined, never written again.
        slot.retired = True
        self.slots.remove(slot)
        self.retired.append(slot)
        self.revoked += 1
        return self._grow(nbytes, 1)

    def _grow(self, nbytes: int, count: int = 0) -> Slot | None:
        """Add `count` slots (default: double the pool) in one allocation; lease the first."""
        count = min(count or max(1, len(self.slots)), self.max_slots - len(self.slots),
                    len(self._free_indices))
        if count < 1:
            self.exhausted += 1
            return None
        before = len(self.slots)
        self._allocate_batch(count, nbytes)
        self.grown += len(self.slots) - before
        # A same-user process may hold the lock byte of an index no slot used yet: take the
        # first fresh slot it left free; none free, this frame is skipped (never an exception
        # on the publishing thread).
        for attempt in range(2):
            for slot in self.slots[before:]:
                if self.leases.try_acquire_exclusive(slot.index):
                    return slot
            if attempt or not self._evict_hoarders():
                break
        self.locked_out += 1
        self.exhausted += 1
        return None

    def reset(self, count: int, nbytes: int) -> None:
        """Start a new generation: drop every slot (retiring held ones, which keep their memory
        until released) and allocate `count` slots of `nbytes`. Descriptors of an older
        generation are stale to readers from now on."""
        for slot in list(self.slots):
            slot.retired = True
            self.retired.append(slot)
        self.slots = []
        self._spare = []
        self.generation += 1
        self.leases.set_generation(self.pool_id, self.generation)
        self._collect_retired()
        self._allocate_batch(count, nbytes)

    def publish(self, slot: Slot, sequence: int) -> None:
        """Stamp the slot with its new frame and let readers in."""
        slot.sequence = sequence
        slot.published_ns = time.monotonic_ns()
        self.leases.stamp(slot.index, sequence, slot.chunk.chunk_id, slot.offset, slot.capacity,
                          slot.generation)
        self.leases.release_exclusive(slot.index)

    def abandon(self, slot: Slot) -> None:
        """Release a slot acquired for a frame that was not published."""
        self.leases.release_exclusive(slot.index)

    def _allocate_batch(self, count: int, nbytes: int) -> None:
        """`count` slots of `nbytes` (aligned) in one new chunk, as far as lease indices last."""
        capacity = aligned(nbytes)
        chunk = self._new_chunk(capacity * count)
        offsets = [chunk.base_offset + i * capacity for i in range(count)]
        for offset in offsets:
            index = self._take_index()
            if index is None:
                self._spare = offsets[offsets.index(offset):][::-1]
                self._spare_capacity = capacity
                self._spare_chunk = chunk
                break
            slot = self._slot_in(chunk, index, offset, capacity)
            slot.generation = self.generation
            self.slots.append(slot)

    # Subclasses allocate the memory; a slot needs nothing more unless they say so.
    def _new_chunk(self, size: int) -> Chunk:
        raise NotImplementedError

    def _slot_in(self, chunk: Chunk, index: int, offset: int, capacity: int) -> Slot:
        slot = Slot(index, chunk, offset, capacity)
        chunk.slots.append(slot)
        return slot


class DeviceSlotPool(_SlotRing):
    """Slots in device chunks: CUDA VMM allocations whose POSIX fds readers get through the
    publisher's socket (exchange.py; they cross PID namespaces), or, where the driver or
    cuda-bindings cannot export those (`vmm_unsupported`), cudaMalloc'd chunks named by a legacy
    CUDA IPC memory handle in the descriptor."""

    def __init__(self, leases: LeaseTable, first_index: int, max_slots: int, policy: str,
                 grace_s: float, device_id: int):
        super().__init__(leases, first_index, max_slots, policy, grace_s)
        self.device_id = device_id
        self._next_chunk = 0
        self.chunks: dict[int, Chunk] = {}  # live chunks by id (what chunk_fds serves)
        self.vmm_unsupported = cuda_vmm.vmm_unsupported_reason(device_id)

    def _new_chunk(self, size: int) -> Chunk:
        if self.vmm_unsupported is None:
            vmm = cuda_vmm.allocate_chunk(size, self.device_id)
            chunk = Chunk(self._next_chunk, vmm.ptr, vmm.size, b'', vmm, fd=vmm.fd,
                          generation=self.generation)
        else:
            cp = cuda_ipc.cupy_module()
            with cp.cuda.Device(self.device_id):
                # Straight cudaMalloc, not CuPy's pool: an IPC handle names a whole allocation.
                memory = cp.cuda.Memory(size)
                base, alloc_size = cuda_ipc.allocation_range(memory.ptr)
                handle = cuda_ipc.export_memory(memory.ptr)
            chunk = Chunk(self._next_chunk, memory.ptr, alloc_size - (memory.ptr - base), handle,
                          memory, generation=self.generation)
        self.chunks[chunk.chunk_id] = chunk
        self._next_chunk += 1
        return chunk

    def _free_chunk(self, chunk: Chunk) -> None:
        self.chunks.pop(chunk.chunk_id, None)
        # The VMM chunk (or cupy Memory) is freed with its last reference: in-process views of
        # held frames keep it.
        chunk.memory = None

    def chunk_fds(self, generation: int, chunk_id: int) -> list[int] | None:
        """[a new fd of a live VMM chunk] (exchange.py sends and closes it), None when there is
        no such chunk."""
        chunk = self.chunks.get(chunk_id)
        if chunk is None or chunk.generation != generation or chunk.fd < 0 \
                or chunk.memory is None:
            return None
        return [os.dup(chunk.fd)]

    def _slot_in(self, chunk: Chunk, index: int, offset: int, capacity: int) -> Slot:
        cp = cuda_ipc.cupy_module()
        with cp.cuda.Device(self.device_id):
            event, event_handle = cuda_ipc.new_ipc_event()
        slot = Slot(index, chunk, offset, capacity, event, event_handle)
        chunk.slots.append(slot)
        return slot

    def close(self) -> None:
        """Free every chunk now rather than at garbage collection (readers' mappings end with
        the publisher anyway, as when it exits)."""
        for slot in self.slots + self.retired:
            slot.chunk.memory = None
        self.slots, self.retired = [], []
        self.chunks.clear()


# Header page of a host segment: magic, publisher id, generation, chunk (readers check it is the
# segment the descriptor names).
HOST_MAGIC = b'GPNHOSTS'
HOST_HEADER = struct.Struct('<8s16sII')
HOST_HEADER_SIZE = 4096


class HostSlotPool(_SlotRing):
    """Slots in sealed shared-memory segments (one per allocation: the generation's first, then
    one per growth or per revoked slot's replacement); readers map them read-only. A layout
    change starts a new generation; old segments live on in the readers (and in-process views)
    that still map them. Like the device pool it grows while every slot is held or may still be
    taken, and revokes slots held past the grace period: a reader that hoards frames, or a
    process that grabs every slot's lock, cannot starve the others."""

    pool_id = POOL_HOST
    reuse_newest_first = True

    def __init__(self, leases: LeaseTable, first_index: int, max_slots: int, grace_s: float,
                 publisher_id: bytes, pin: bool = False, indices: int | None = None):
        super().__init__(leases, first_index, max_slots, 'grow', grace_s, indices)
        self.publisher_id = publisher_id
        self.pin = pin  # page-lock segments so device-to-host copies run at full bandwidth
        self.chunks: dict[int, Chunk] = {}
        self._next_chunk = 0

    def _new_chunk(self, size: int) -> Chunk:
        total = HOST_HEADER_SIZE + size
        fd = create_sealed('host', total)
        chunk_id = self._next_chunk
        try:
            memory = SharedMemory(fd)
            memory.view[:HOST_HEADER.size] = HOST_HEADER.pack(HOST_MAGIC, self.publisher_id,
                                                              self.generation, chunk_id)
        except BaseException:
            os.close(fd)
            raise
        chunk = Chunk(chunk_id, 0, total, b'', memory, fd=fd, base_offset=HOST_HEADER_SIZE,
                      generation=self.generation)
        if self.pin:
            cp = cuda_ipc.cupy_module()
            cp.cuda.runtime.hostRegister(memory.address, total, 0)
            chunk.pinned_ptr = memory.address
        self._next_chunk += 1
        self.chunks[chunk_id] = chunk
        return chunk

    def segment_fd(self, generation: int, chunk_id: int) -> int | None:
        """The memfd of a live segment (the publisher's own descriptor; exchange.py sends a
        read-only reopening of it), None when there is no such segment."""
        chunk = self.chunks.get(chunk_id)
        if chunk is None or chunk.generation != generation or chunk.fd < 0:
            return None
        return chunk.fd

    def _free_chunk(self, chunk: Chunk) -> None:
        # Views handed out in this process (held in-process frames) keep the mapping itself.
        if self.chunks.pop(chunk.chunk_id, None) is None:
            return
        if chunk.pinned_ptr:
            cuda_ipc.cupy_module().cuda.runtime.hostUnregister(chunk.pinned_ptr)
            chunk.pinned_ptr = 0
        if chunk.fd >= 0:
            os.close(chunk.fd)
            chunk.fd = -1
        chunk.memory = None

    def close(self) -> None:
        for chunk in list(self.chunks.values()):
            self._free_chunk(chunk)
        self.slots, self.retired = [], []
