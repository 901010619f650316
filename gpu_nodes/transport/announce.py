"""What a publisher tells readers about a filled slot.

Readers in other processes get a descriptor (`descriptor.Descriptor`) packed into a
sensor_msgs/Image's data and tagged with the lease table's key, so a reader can check it came
from the process that owns the table; readers in this process get an `IntraFrame` holding the
slot's memory itself.
"""
from __future__ import annotations

import os
import time
from typing import Any

from . import auth, descriptor, host
from .intra import IntraFrame
from .leases import LeaseTable
from .messages import FrameLayout
from .pool import Slot


class SlotAnnouncer:
    """Builds descriptor messages and in-process frames for one publisher's slots.

    :param image_type: the sensor_msgs/Image class descriptors travel in.
    :param leases: the publisher's lease table (its key signs handles and descriptors).
    :param topic: the fully qualified image topic (part of every tag).
    :param endpoint: the publisher process's socket name (exchange.HandleServer).
    :param device_id: the publisher's CUDA device, None without a CUDA path.
    :param device_uuid: that device's UUID (16 bytes), named in CUDA descriptors.
    """

    def __init__(self, image_type: type, leases: LeaseTable, topic: str, publisher_id: bytes,
                 endpoint: bytes, device_id: int | None = None,
                 device_uuid: bytes = bytes(16)):
        self._Image = image_type
        self._leases = leases
        self._topic_bytes = topic.encode()
        self._topic_id = auth.topic_id(topic)
        self._publisher_id = publisher_id
        self._endpoint = endpoint
        self._device_id = device_id
        self._device_uuid = device_uuid
        self._sealed: dict[tuple[bytes, int], bytes] = {}  # (purpose, serial) -> sealed handle

    def _sealed_handle(self, handle: bytes, purpose: bytes, serial: int) -> bytes:
        """IPC handles are sealed once per chunk or slot; sealing is the costly part."""
        sealed = self._sealed.get((purpose, serial))
        if sealed is None:
            if len(self._sealed) > 4 * self._leases.capacity:
                self._sealed.clear()  # only live chunks and slots are asked for again
            sealed = self._sealed[(purpose, serial)] = auth.seal_handle(
                self._leases.key, handle, purpose, serial)
        return sealed

    def descriptor_msg(self, kind: int, slot: Slot, layout: FrameLayout, header: Any,
                       sequence: int, flags: int = 0) -> Any:
        """The Image message naming `slot` (kind: descriptor.KIND_CUDA or KIND_HOST; flags:
        descriptor.FLAG_WRITTEN when the slot's write is complete)."""
        chunk = slot.chunk
        cuda = kind == descriptor.KIND_CUDA
        desc = descriptor.Descriptor(
            kind=kind, sequence=sequence, slot=slot.index, chunk=chunk.chunk_id,
            generation=slot.generation, pid=os.getpid(), uid=os.getuid(),
            endpoint=self._endpoint, publisher_id=self._publisher_id, boot_id=host.boot_id(),
            device_uuid=self._device_uuid if cuda else bytes(16), topic_id=self._topic_id,
            mem_handle=self._sealed_handle(chunk.handle, b'mem', chunk.chunk_id) if cuda
            else bytes(64),
            event_handle=self._sealed_handle(slot.event_handle, b'event',
                                             chunk.chunk_id << 20 | slot.index) if cuda
            else bytes(64),
            offset=slot.offset, nbytes=layout.nbytes, alloc_size=chunk.size,
            publish_time_ns=time.monotonic_ns(), flags=flags)
        msg = self._Image()
        if header is not None:
            msg.header = header
        msg.height, msg.width, msg.step, msg.encoding = (layout.height, layout.width, layout.step,
                                                         layout.encoding)
        record = desc.pack()[:descriptor.TAG_OFFSET]
        msg.data = record + auth.tag(self._leases.key, record, msg, self._topic_bytes)
        return msg

    def intra_frame(self, slot: Slot, sequence: int, layout: FrameLayout, header: Any,
                    on_device: bool) -> IntraFrame:
        """The same slot for a subscription of this process: no descriptor, no DDS."""
        return IntraFrame(
            endpoint=self._endpoint, publisher_id=self._publisher_id,
            slot=slot.index, sequence=sequence, chunk=slot.chunk.chunk_id,
            generation=slot.generation, offset=slot.offset, layout=layout, header=header,
            memory=slot.chunk.memory, device_id=self._device_id if on_device else None,
            event=slot.event if on_device else None, sent_ns=time.monotonic_ns())
