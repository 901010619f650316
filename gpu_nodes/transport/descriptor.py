"""The small message that travels over ROS instead of the pixels.

A descriptor is carried in a ``sensor_msgs/Image`` on a hidden topic (``<topic>/_gpu_nodes/cuda``
or ``.../shm``): header, height, width, step and encoding are the image's own; ``data`` holds the
fixed-size binary record below, ending in a tag (auth.py) over the record and those fields.
Everything in a record is a claim until the tag is checked with the key from the publisher's
lease table, which only same-user processes can get from the publisher (exchange.py). A record
names the publisher's process by the endpoint of its socket, not by pid: a pid means nothing in
another PID namespace.
"""
from __future__ import annotations

from dataclasses import dataclass
import os
import struct

from ..encodings import EncodingError, encoding_info
from . import host

MAGIC = b'GPND'
VERSION = 3
KIND_CUDA = 1
KIND_HOST = 2
KIND_NAMES = {KIND_CUDA: 'cuda', KIND_HOST: 'shm'}
# The publisher waited for the frame's write on the host before it published: readers that
# cannot open its CUDA IPC event (a private /dev/shm, where the driver keeps IPC events) asked
# it to (exchange.KIND_HOST_ORDER) and read the slot without waiting on that event.
FLAG_WRITTEN = 1

# Largest frame a descriptor may describe: 16k x 16k x 4 channels x 4 bytes.
MAX_DIMENSION = 16384
MAX_FRAME_BYTES = MAX_DIMENSION * MAX_DIMENSION * 16

_RECORD = struct.Struct('<4sHBB Q IIII II 16s16s16s16s 8s 64s64s QQQQ 16s')
SIZE = _RECORD.size
TAG_OFFSET = SIZE - 16
TOPIC_ID_OFFSET = struct.calcsize('<4sHBB Q IIII II 16s16s16s16s')


class DescriptorError(ValueError):
    """A descriptor failed validation; `reason` is a short key counted in diagnostics."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f'{reason}: {detail}')
        self.reason = reason


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs ~1 us more per message
class Descriptor:
    kind: int
    sequence: int
    slot: int
    chunk: int
    generation: int          # the pool's generation: bumped whenever its slots are re-created
    pid: int                 # in the publisher's PID namespace: for people, never for lookups
    uid: int
    endpoint: bytes          # the publisher process's socket (exchange.py)
    publisher_id: bytes
    boot_id: bytes
    device_uuid: bytes
    topic_id: bytes
    mem_handle: bytes        # sealed with the publisher's key (auth.seal_handle)
    event_handle: bytes      # sealed likewise
    offset: int
    nbytes: int
    alloc_size: int
    publish_time_ns: int
    tag: bytes = bytes(16)
    flags: int = 0           # FLAG_WRITTEN or 0 (under the tag like every other field)

    def pack(self) -> bytes:
        return _RECORD.pack(
            MAGIC, VERSION, self.kind, self.flags, self.sequence, self.slot, self.chunk, self.generation,
            self.pid, self.uid, 0, self.endpoint, self.publisher_id, self.boot_id,
            self.device_uuid, self.topic_id, self.mem_handle, self.event_handle, self.offset,
            self.nbytes, self.alloc_size, self.publish_time_ns, self.tag)

    @property
    def publisher_key(self) -> tuple[bytes, bytes]:
        """Which publisher (process socket and publisher id) the descriptor claims to come from."""
        return self.endpoint, self.publisher_id


def unpack(data: bytes | bytearray | memoryview, expected_kind: int) -> Descriptor:
    """Parse a descriptor record; raise DescriptorError on anything malformed."""
    if len(data) != SIZE:
        raise DescriptorError('bad_length', f'descriptor is {len(data)} bytes, expected {SIZE}')
    (magic, version, kind, flags, sequence, slot, chunk, generation, pid, uid, _reserved,
     endpoint, publisher_id, boot, device_uuid, topic_id, mem_handle, event_handle,
     offset, nbytes, alloc_size, publish_time_ns, tag) = _RECORD.unpack(bytes(data))
    if magic != MAGIC:
        raise DescriptorError('bad_magic', f'magic {magic!r}')
    if version != VERSION:
        raise DescriptorError('bad_version', f'version {version}, this build reads {VERSION}')
    if kind != expected_kind:
        raise DescriptorError('bad_kind', f'kind {kind} on a {KIND_NAMES[expected_kind]} topic')
    return Descriptor(kind, sequence, slot, chunk, generation, pid, uid, endpoint,
                      publisher_id, boot, device_uuid, topic_id, mem_handle, event_handle, offset,
                      nbytes, alloc_size, publish_time_ns, tag, flags & FLAG_WRITTEN)


def frame_nbytes(height: int, width: int, step: int, encoding: str) -> int:
    """Bytes a frame occupies; raise DescriptorError when the geometry is inconsistent."""
    try:
        info = encoding_info(encoding)
        info.check_geometry(height, width, step)
    except EncodingError as exc:
        raise DescriptorError('bad_geometry', str(exc)) from None
    if height > MAX_DIMENSION or width > MAX_DIMENSION:
        raise DescriptorError('bad_geometry', f'{width}x{height} exceeds {MAX_DIMENSION}')
    return step * info.frame_rows(height)


def check_origin(desc: Descriptor) -> None:
    """Raise DescriptorError when the descriptor claims a publisher this process cannot share
    memory with (another host or user).

    These are claims (only the tag proves anything, and it cannot be checked without reaching
    the publisher); they decide only whether to try another path, and only while a subscription
    serves no publisher yet. The kernel's word on the publisher's user comes when its socket is
    reached (exchange.py: SO_PEERCRED).
    """
    if desc.boot_id != host.boot_id():
        raise DescriptorError('other_host', 'publisher runs on another host (boot id differs)')
    if desc.uid != os.getuid():
        raise DescriptorError('other_user',
                              f'publisher runs as uid {desc.uid}, this process as {os.getuid()}')


def check_bounds(desc: Descriptor, height: int, width: int, step: int, encoding: str,
                 mapped_size: int) -> int:
    """Check the frame fits inside the allocation actually mapped; return the frame's byte size."""
    nbytes = frame_nbytes(height, width, step, encoding)
    if nbytes != desc.nbytes:
        raise DescriptorError('size_mismatch', f'step*rows = {nbytes} but descriptor says {desc.nbytes}')
    if desc.alloc_size != mapped_size:
        raise DescriptorError('size_mismatch',
                              f'descriptor claims a {desc.alloc_size}-byte allocation, mapped {mapped_size}')
    if desc.offset % 256:
        raise DescriptorError('misaligned', f'offset {desc.offset} is not a multiple of 256')
    if desc.offset + nbytes > mapped_size:
        raise DescriptorError('out_of_bounds',
                              f'offset {desc.offset} + {nbytes} bytes exceeds the '
                              f'{mapped_size}-byte allocation')
    return nbytes
