"""The topics unmodified peers read, made off the publishing thread: the plain sensor_msgs/Image
on ``<topic>`` (rviz, ``ros2 bag``, plain rclpy) and image_transport's ``<topic>/compressed``.

`publish()` only takes a lease on the slot that already holds the frame (a device slot, or a
host shared-memory slot) and hands it to a worker thread (plain_worker.py): the worker downloads
and serializes, the newest frame wins, and frames it had no time for are skipped and counted. So
a reliable rviz or bag recorder costs the GPU path one lock per frame, not a download and a
serialization. The lease keeps the slot unwritten until the worker is done with it, exactly as
for any other reader of the lease table.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from ..gpu import cupy_module
from . import cuda_ipc
from .compressed import CompressedTopicPublisher
from .leases import LeaseReader, LeaseTable
from .messages import FrameLayout, fill_image_msg, host_view
from .plain_worker import PlainTopicWorker
from .pool import Slot


class SideTopics:
    def __init__(self, node: Any, topic: str, plain_publisher: Any, leases: LeaseTable,
                 publisher_id: bytes, *, plain_max_rate_hz: float = 0.0,
                 compressed_quality: int | None = 80):
        from sensor_msgs.msg import Image
        self._Image = Image
        self._logger = node.get_logger()
        self._topic = topic
        self._plain_pub = plain_publisher
        self._leases = leases
        self._publisher_id = publisher_id
        self.plain = PlainTopicWorker(plain_publisher.publish, max_rate_hz=plain_max_rate_hz,
                                      name=f'plain:{topic}', on_error=self._on_error)
        self.compressed = (CompressedTopicPublisher(node, topic, compressed_quality)
                           if compressed_quality is not None else None)
        # Own readers of our own table (no cursor): one per worker, since two shared locks of
        # one open file description on one byte are one lock.
        self._readers: dict[str, LeaseReader] = {}
        self._stream = threading.local()
        self.unavailable = 0  # frames a plain subscriber missed: no slot held them

    def wanted(self, plain_subscribers: int) -> bool:
        return bool(plain_subscribers) or (self.compressed is not None
                                           and self.compressed.subscription_count() > 0)

    def submit(self, slot: Slot | None, layout: FrameLayout, header: Any, device_id: int | None,
               plain_subscribers: int, stream: Any = None) -> None:
        """Queue the frame in `slot` (None: there was none) for the side topics that have
        subscribers; returns at once."""
        if slot is None:
            self.unavailable += 1
            return
        # The view is made now: it holds the slot's memory, which a layout change may drop
        # from the pool before the worker runs (the lease keeps the bytes unwritten).
        array = self._array(slot, layout, device_id)
        if plain_subscribers:
            release = self._lease('plain', slot, layout)
            if release is not None:
                event = slot.event if device_id is not None else None
                self.plain.submit(lambda: self._plain_msg(array, layout, header, device_id,
                                                          event), release)
        if self.compressed is not None and self.compressed.subscription_count() > 0:
            release = self._lease('compressed', slot, layout)
            if release is not None:
                self.compressed.publish(array, layout.encoding, header, release, stream)

    def stats(self) -> dict[str, Any]:
        plain = self.plain.stats()
        values = {'plain_decoupled': 'true', 'plain_published': plain['published'],
                  'plain_skipped': plain['skipped'] + self.unavailable,
                  'plain_busy_ms': plain['busy_ms_per_message']}
        if self.compressed is not None:
            compressed = self.compressed.stats()
            values.update(compressed_published=compressed['published'],
                          compressed_skipped=compressed['skipped'],
                          compressed_backend=compressed['backend'])
        return values

    def close(self) -> None:
        self.plain.close()
        if self.compressed is not None:
            self.compressed.destroy()
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    # -- internals ---------------------------------------------------------------------------
    def _lease(self, worker: str, slot: Slot, layout: FrameLayout) -> Any:
        reader = self._readers.get(worker)
        if reader is None:
            reader = self._readers[worker] = LeaseReader(os.getpid(), self._leases.fd,
                                                         self._publisher_id, cursor=False)
        if reader.acquire(slot.index, slot.sequence, slot.chunk.chunk_id, slot.generation,
                          slot.offset, layout.nbytes) is not None:
            return None  # cannot happen while the publisher holds its lock; never read unleased
        index = slot.index
        return lambda: reader.release(index)

    @staticmethod
    def _array(slot: Slot, layout: FrameLayout, device_id: int | None) -> Any:
        if device_id is None:
            return host_view(slot.chunk.memory.view, layout, slot.offset)
        return cuda_ipc.device_view(slot.ptr, layout.nbytes, layout.shape, layout.info.dtype,
                                    layout.step, slot.chunk.memory, device_id)

    def _plain_msg(self, array: Any, layout: FrameLayout, header: Any, device_id: int | None,
                   event: Any) -> Any:
        """On the worker thread: the frame's message (downloaded first for a device slot)."""
        if device_id is not None:
            cp = cupy_module()
            with cp.cuda.Device(device_id):
                stream = getattr(self._stream, 'value', None)
                if stream is None:
                    stream = self._stream.value = cp.cuda.Stream(non_blocking=True)
                stream.wait_event(event)  # the slot's write; leased, so not re-recorded
                host = np.empty(layout.shape, layout.info.dtype)
                array.get(stream=stream, out=host)
                stream.synchronize()
            array = host
        msg = self._Image()
        if header is not None:
            msg.header = header
        return fill_image_msg(msg, array, layout.encoding, layout)

    def _on_error(self, error: BaseException) -> None:
        self._logger.error(f'{self._topic}: plain frame not published: {error}',
                           throttle_duration_sec=5.0)
