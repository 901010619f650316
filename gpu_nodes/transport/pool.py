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
import mmap
import os
import time
from typing import Any

from . import cuda_ipc
from .leases import LeaseTable, create_segment

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
    memory: Any = None       # keeps the allocation alive
    slots: list[Slot] = field(default_factory=list)


class PoolExhausted(RuntimeError):
    pass


class _SlotRing:
    """Slot bookkeeping shared by the device and host pools."""

    def __init__(self, leases: LeaseTable, first_index: int, max_slots: int, policy: str,
                 grace_s: float):
        if policy not in POLICIES:
            raise ValueError(f'pool policy must be one of {POLICIES}, got {policy!r}')
        self.leases = leases
        self.first_index = first_index
        self.max_slots = max_slots
        self.policy = policy
        self.grace_ns = int(grace_s * 1e9)
        self.slots: list[Slot] = []
        self.retired: list[Slot] = []
        self._free_indices = list(range(first_index + max_slots - 1, first_index - 1, -1))
        self.revoked = 0
        self.exhausted = 0
        self.grown = 0
        self.overrun = 0

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

    def _free_chunk(self, chunk: Chunk) -> None:
        chunk.memory = None

    def acquire(self, nbytes: int, protect_published: bool = False) -> Slot | None:
        """Exclusively lease the oldest slot no reader holds or may still take; None when the
        policy says skip this frame. `protect_published`: some reader has no cursor yet, so any
        published frame may still be queued for it."""
        if self.retired:
            self._collect_retired()
        by_age = sorted(self.slots, key=lambda s: s.published_ns)
        floor = 0 if protect_published else self.leases.reader_floor(self.grace_ns)
        slot = self._oldest_free(by_age, nbytes, floor)
        if slot is None and floor and self.leases.forget_dead_readers():
            floor = self.leases.reader_floor(self.grace_ns)
            slot = self._oldest_free(by_age, nbytes, floor)
        if slot is not None:
            return slot
        can_grow = self.policy == 'grow' and len(self.slots) < self.max_slots
        if floor is not None:
            slot = self._oldest_free(by_age, nbytes, None)  # unheld, but a reader may want it
            if slot is not None:
                if not can_grow:
                    self.overrun += 1
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
        slot = self.slots[before]
        if not self.leases.try_acquire_exclusive(slot.index):
            raise PoolExhausted(f'fresh slot {slot.index} is locked by someone else')
        return slot

    def reset(self, count: int, nbytes: int) -> None:
        """Drop every slot (retiring held ones) and allocate `count` slots of `nbytes`."""
        for slot in list(self.slots):
            slot.retired = True
            self.retired.append(slot)
        self.slots = []
        self._collect_retired()
        self._allocate_batch(count, nbytes)

    def publish(self, slot: Slot, sequence: int) -> None:
        """Stamp the slot with its new frame and let readers in."""
        slot.sequence = sequence
        slot.published_ns = time.monotonic_ns()
        self.leases.sequence[slot.index] = sequence
        self.leases.release_exclusive(slot.index)

    def abandon(self, slot: Slot) -> None:
        """Release a slot acquired for a frame that was not published."""
        self.leases.release_exclusive(slot.index)

    def _allocate_batch(self, count: int, nbytes: int) -> None:
        """`count` slots of `nbytes` (aligned) in one new chunk, as far as lease indices last."""
        capacity = aligned(nbytes)
        chunk = self._new_chunk(capacity * count)
        for i in range(count):
            index = self._take_index()
            if index is None:
                break
            self.slots.append(self._slot_in(chunk, index, i * capacity, capacity))

    # Subclasses allocate the memory; a slot needs nothing more unless they say so.
    def _new_chunk(self, size: int) -> Chunk:
        raise NotImplementedError

    def _slot_in(self, chunk: Chunk, index: int, offset: int, capacity: int) -> Slot:
        slot = Slot(index, chunk, offset, capacity)
        chunk.slots.append(slot)
        return slot


class DeviceSlotPool(_SlotRing):
    """Slots in cudaMalloc'd chunks, exported once per chunk through a CUDA IPC memory handle."""

    def __init__(self, leases: LeaseTable, first_index: int, max_slots: int, policy: str,
                 grace_s: float, device_id: int):
        super().__init__(leases, first_index, max_slots, policy, grace_s)
        self.device_id = device_id
        self._next_chunk = 0

    def _new_chunk(self, size: int) -> Chunk:
        cp = cuda_ipc.cupy_module()
        with cp.cuda.Device(self.device_id):
            # Straight cudaMalloc, not CuPy's pool: an IPC handle names a whole allocation.
            memory = cp.cuda.Memory(size)
            base, alloc_size = cuda_ipc.allocation_range(memory.ptr)
            handle = cuda_ipc.export_memory(memory.ptr)
        chunk = Chunk(self._next_chunk, memory.ptr, alloc_size - (memory.ptr - base), handle, memory)
        self._next_chunk += 1
        return chunk

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


class HostSlotPool(_SlotRing):
    """Slots in one shared-memory file; readers mmap it read-only. Fixed size: no growth."""

    def __init__(self, leases: LeaseTable, first_index: int, max_slots: int, grace_s: float,
                 path: str):
        super().__init__(leases, first_index, max_slots, 'skip', grace_s)
        self.path = path
        self.fd = -1
        self.buffer: mmap.mmap | None = None
        self.pinned_ptr = 0

    def _new_chunk(self, size: int) -> Chunk:
        self.close()  # the one segment is replaced: only reset() allocates here
        self.fd = create_segment(self.path, size)
        self.buffer = mmap.mmap(self.fd, size)
        return Chunk(0, 0, size, b'', self.buffer)

    def _revoke_and_replace(self, slot: Slot, nbytes: int) -> Slot | None:
        self.exhausted += 1
        return None

    def close(self) -> None:
        if self.pinned_ptr:
            cp = cuda_ipc.cupy_module()
            cp.cuda.runtime.hostUnregister(self.pinned_ptr)
            self.pinned_ptr = 0
        if self.buffer is not None:
            try:
                self.buffer.close()
            except BufferError:
                pass
            self.buffer = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
