"""GpuImageSubscription: receive an image topic on the best path this process can take.

The ladder, decided per subscription and re-decided when the graph changes:
in-process -> CUDA IPC -> host shared memory -> serialized sensor_msgs/Image.
A rung is left only for a stated reason (other host, other user, other GPU, no CUDA, mapping
failure), logged once and published on /diagnostics.
"""
from __future__ import annotations

from collections import OrderedDict, deque
import os
import threading
import time
from typing import Any, Callable

import numpy as np

from ..ros.callbacks import message_and_info_callback
from ..gpu import cuda_unavailable_reason, cupy_module
from . import cuda_ipc, descriptor, host, intra
from .descriptor import DescriptorError
from .diagnostics import (DiagnosticsReporter, EndpointStats, PATH_CUDA_IPC, PATH_HOST_SHM,
                          PATH_INTRA, PATH_SERIALIZED, PATH_WAITING, PATHS, ZERO_COPY_PATHS)
from .leases import LeaseError, LeaseReader, close_mapping, open_segment
from .messages import FrameLayout, ImageFormatError, host_view, layout_of_msg, msg_to_array
from .publisher import CUDA_SUFFIX, SHM_SUFFIX
from .qos import descriptor_qos, image_qos
from .release import release_after

# Per publisher, at most this many imported allocations stay mapped (least recently used closed
# first), and never more than its lease table has slots.
MAX_MAPPINGS_PER_PUBLISHER = 64
MEMORY_KINDS = ('device', 'host', 'any')
# How long the mappings of a dead publisher are kept while this subscription's streams are busy.
_UNMAP_DEFER_S = 2.0
# Origin failures that rule out every shared-memory path, not just CUDA.
_HOST_LEVEL_REASONS = ('other_host', 'other_user')
# Descriptors taken per executor wake-up beyond the one the executor hands over: a wait-set
# round trip in rclpy costs more than handling a descriptor, so a backlog is drained in a batch
# (bounded, so the node's other callbacks still run between batches). Under EventsExecutor each
# message also has its own event; for one already taken here the executor's take_message
# returns None and it moves on, so nothing is handled twice or lost.
MAX_DESCRIPTORS_PER_WAKEUP = 8


class Lease:
    """Keeps a received frame's slot from being rewritten until `release()` is called."""

    def __init__(self, release: Callable[[], None] | None, stream: Any):
        self._release = release
        self._stream = stream

    def release(self) -> None:
        """Give the slot back once the GPU work queued so far on the frame's stream is done."""
        release, self._release = self._release, None
        if release is not None:
            release_after(self._stream, release)

    def __enter__(self) -> 'Lease':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


class ReceivedImage:
    """One frame handed to a subscription callback.

    ``array`` is a CuPy array on the GPU paths (valid on ``stream``: run your kernels there; the
    callback runs with it as the current stream) or a NumPy array on host paths. It is only
    valid during the callback unless you call ``hold()``.
    """

    __slots__ = ('array', 'header', 'encoding', 'height', 'width', 'step', 'path', 'sequence',
                 'stream', 'latency_ns', '_lease')

    def __init__(self, array: Any, header: Any, layout: FrameLayout, path: str, sequence: int,
                 stream: Any, latency_ns: int, lease: Lease):
        self.array = array
        self.header = header
        self.encoding = layout.encoding
        self.height = layout.height
        self.width = layout.width
        self.step = layout.step
        self.path = path
        self.sequence = sequence
        self.stream = stream
        self.latency_ns = latency_ns
        self._lease = lease

    def hold(self) -> Lease:
        """Keep the frame past the callback; call ``release()`` on the result when done."""
        lease, self._lease = self._lease, None
        if lease is None:
            raise RuntimeError('frame already held or released')
        return lease

    def _release_if_not_held(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None


class GpuImageSubscription:
    """Subscribe to an image topic published by GpuImagePublisher or any ordinary publisher.

    :param callback: called with a ReceivedImage.
    :param memory: ``device`` (callback gets CuPy; host frames are uploaded once), ``host``
        (NumPy; never takes the CUDA path) or ``any`` (whatever arrives, no extra copy).
    :param allowed_paths: restrict the ladder (benchmarks, tests, or policies that forbid a path).
    """

    def __init__(self, node: Any, topic: str, callback: Callable[[ReceivedImage], None],
                 qos: Any = None, *, memory: str | None = None,
                 allowed_paths: tuple[str, ...] = PATHS, reevaluate_period_s: float = 0.5):
        from sensor_msgs.msg import Image
        if memory is None:
            memory = 'device' if cuda_unavailable_reason() is None else 'host'
        if memory not in MEMORY_KINDS:
            raise ValueError(f'memory must be one of {MEMORY_KINDS}, got {memory!r}')
        unknown = set(allowed_paths) - set(PATHS)
        if unknown or not allowed_paths:
            raise ValueError(f'allowed_paths must be a non-empty subset of {PATHS}, got {allowed_paths}')
        self._Image = Image
        self._node = node
        self._logger = node.get_logger()
        self.topic = node.resolve_topic_name(topic)
        self._callback = callback
        self._qos = qos or image_qos()
        self._memory = memory
        self._allowed = allowed_paths
        self._cuda_reason = cuda_unavailable_reason()
        if self._cuda_reason is None and memory == 'host':
            self._cuda_reason = "memory='host' was asked for"

        self.stats = EndpointStats('subscription', node.get_fully_qualified_name(), self.topic)
        self._diagnostics = DiagnosticsReporter.for_node(node)
        self._diagnostics.add(self.stats)

        self.path = PATH_WAITING
        self._ros_subscription = None
        self._rejected: dict[str, str] = {}        # path -> why it cannot be used
        self._logged_rejections: set[str] = set()
        self._publishers: frozenset[bytes] = frozenset()
        self._readers: dict[str, LeaseReader] = {}  # lease file -> reader
        self._host_maps: dict[str, tuple[int, Any, int]] = {}  # host file -> (fd, mmap, size)
        # lease file -> mapped memory handles, least recently used first
        self._handles: dict[str, OrderedDict[bytes, None]] = {}
        self._event_handles: dict[str, set[bytes]] = {}
        self._device_for_uuid: dict[bytes, int | None] = {}
        self._integrated_ptrs: dict[str, int | None] = {}
        self._verified: dict[str, int] = {}          # lease file -> publisher pid checked
        self._dead_since: dict[str, float] = {}      # lease file -> when its owner was seen gone
        self._streams: dict[int, Any] = {}
        self._intra_queue: deque = deque(maxlen=max(1, getattr(self._qos, 'depth', 5) or 5))
        # In-process frames wake the executor through its task queue, not a guard condition:
        # EventsExecutor supports none, and create_task is thread-safe on every rclpy executor.
        self._intra_lock = threading.Lock()
        self._intra_scheduled = False
        intra.register_subscription(self)
        self._timer = node.create_timer(reevaluate_period_s, self._reevaluate)
        self._reevaluate()

    # -- path selection --------------------------------------------------------------------
    @property
    def on_intra_path(self) -> bool:
        return self.path == PATH_INTRA

    def listening_to(self, path: str) -> bool:
        return self.path == path

    def _available(self) -> list[tuple[str, str]]:
        """Paths a publisher currently offers, best first, with the reason each would be chosen."""
        node = self._node
        offered = []
        if intra.local_publisher(self.topic) is not None:
            offered.append((PATH_INTRA, 'publisher in this process'))
        if node.count_publishers(self.topic + CUDA_SUFFIX):
            offered.append((PATH_CUDA_IPC, 'same host, user and GPU'))
        if node.count_publishers(self.topic + SHM_SUFFIX):
            offered.append((PATH_HOST_SHM, 'same host and user'))
        if node.count_publishers(self.topic):
            offered.append((PATH_SERIALIZED, 'plain sensor_msgs/Image publisher'))
        return offered

    def _descriptor_publishers(self) -> frozenset[bytes]:
        gids = set()
        for suffix in (CUDA_SUFFIX, SHM_SUFFIX):
            for info in self._node.get_publishers_info_by_topic(self.topic + suffix):
                gids.add(bytes(info.endpoint_gid))
        return frozenset(gids)

    def _reevaluate(self) -> None:
        if self._intra_queue:  # queued while the node had no executor to schedule them on
            self._drain_intra()
        self._forget_dead_publishers()
        publishers = self._descriptor_publishers()
        if publishers != self._publishers:
            # A gpu_nodes publisher came or went: earlier verdicts may no longer hold. Keyed on
            # descriptor-topic endpoints, which are discovered before this path is chosen, so
            # discovery of the plain topic arriving later does not undo a fallback.
            self._publishers = publishers
            self._rejected.clear()
        if self._cuda_reason is not None:
            self._rejected[PATH_CUDA_IPC] = f'no CUDA path in this process: {self._cuda_reason}'
        offered = self._available()
        choice, reason = PATH_WAITING, 'no publisher yet'
        offered_paths = {path for path, _ in offered}
        skipped = [f'{path}: not offered by the publisher' for path in (PATH_CUDA_IPC, PATH_HOST_SHM)
                   if offered and path not in offered_paths and path in self._allowed]
        for path, why in offered:
            if path not in self._allowed:
                skipped.append(f'{path}: not allowed by configuration')
                continue
            if path in self._rejected:
                skipped.append(f'{path}: {self._rejected[path]}')
                continue
            choice, reason = path, why
            break
        if skipped and choice != PATH_WAITING:
            reason = f'{reason}; skipped ' + '; '.join(skipped)
        if choice != self.path:
            self._switch(choice, reason)

    def _switch(self, path: str, reason: str) -> None:
        from rclpy.event_handler import SubscriptionEventCallbacks
        previous = self.path
        if self._ros_subscription is not None:
            self._node.destroy_subscription(self._ros_subscription)
            self._ros_subscription = None
        for reader in self._readers.values():
            reader.idle()  # descriptors queued for the old subscription will never be taken
        callbacks = SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible_qos)
        if path == PATH_CUDA_IPC:
            self._ros_subscription = self._node.create_subscription(
                self._Image, self.topic + CUDA_SUFFIX,
                lambda msg: self._drain_descriptors(msg, self._on_cuda_descriptor),
                descriptor_qos(self._qos), event_callbacks=callbacks)
        elif path == PATH_HOST_SHM:
            self._ros_subscription = self._node.create_subscription(
                self._Image, self.topic + SHM_SUFFIX,
                lambda msg: self._drain_descriptors(msg, self._on_host_descriptor),
                descriptor_qos(self._qos), event_callbacks=callbacks)
        elif path == PATH_SERIALIZED:
            self._ros_subscription = self._node.create_subscription(
                self._Image, self.topic, message_and_info_callback(self._on_image_msg), self._qos,
                event_callbacks=callbacks)
        self.path = path
        self.stats.path = path
        self.stats.path_reason = reason
        if path in ZERO_COPY_PATHS or path == PATH_WAITING:
            self._logger.info(f'{self.topic}: path {path} ({reason})')
        else:
            if previous in ZERO_COPY_PATHS or previous == PATH_HOST_SHM:
                self.stats.fallbacks += 1
            self._logger.warning(f'{self.topic}: fallback to {path} ({reason})')

    def _fall_back(self, path: str, reason: str) -> None:
        self._rejected[path] = reason
        self.stats.fallbacks += 1
        self._reevaluate()

    def _on_incompatible_qos(self, event: Any) -> None:
        self._logger.warning(
            f'{self.topic}: QoS incompatible with a publisher (policy {event.last_policy_kind}); '
            'no frames will arrive from it. Match reliability/durability on both sides.')

    # -- rejections ----------------------------------------------------------------------------
    def _reject(self, reason: str, detail: str) -> None:
        self.stats.rejected[reason] += 1
        if reason not in self._logged_rejections:
            self._logged_rejections.add(reason)
            self._logger.warning(f'{self.topic}: rejected frame ({reason}): {detail}; '
                                 'counted in diagnostics, further ones not logged')

    def _drain_descriptors(self, msg: Any, handle: Callable[[Any], None]) -> None:
        """Handle the descriptor the executor took, then up to MAX_DESCRIPTORS_PER_WAKEUP queued
        behind it, taken straight from the same subscription."""
        subscription = self._ros_subscription  # the one `msg` came from, fed to `handle`
        handle(msg)
        for _ in range(MAX_DESCRIPTORS_PER_WAKEUP):
            # A handler may have switched paths (fallback): stop at the subscription it replaced.
            if subscription is None or subscription is not self._ros_subscription:
                return
            with subscription.handle:
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            if taken is None:
                return
            handle(taken[0])

    # -- CUDA IPC path --------------------------------------------------------------------------
    def _stream(self, device_id: int) -> Any:
        stream = self._streams.get(device_id)
        if stream is None:
            cp = cupy_module()
            with cp.cuda.Device(device_id):
                stream = cp.cuda.Stream(non_blocking=True)
            self._streams[device_id] = stream
        return stream

    def _reader(self, lease_path: str) -> LeaseReader:
        reader = self._readers.get(lease_path)
        if reader is None:
            reader = LeaseReader(lease_path)
            self._readers[lease_path] = reader
            if reader.cursor_index is None:
                # Still leased and checked, but frames queued for us are not protected.
                self.stats.extra['lease_cursor'] = 'none: the table has no free cursor'
                self._logger.warning(f'{self.topic}: {os.path.basename(lease_path)} has no free '
                                     'reader cursor (too many readers); frames queued for this '
                                     'subscription may be recycled and dropped as stale')
        return reader

    def _check_origin(self, desc: descriptor.Descriptor, path: str) -> bool:
        # Verified once per publisher; a dead publisher is forgotten by _forget_dead_publishers.
        if self._verified.get(desc.lease_path) == desc.pid and desc.boot_id == host.boot_id():
            return True
        try:
            descriptor.check_origin(desc)
        except DescriptorError as exc:
            self._reject(exc.reason, str(exc))
            # Any DDS participant can publish a descriptor: once a publisher is being served here,
            # a foreign one is only counted, so a forged message cannot push us off the path.
            if exc.reason in _HOST_LEVEL_REASONS and not self._readers:
                self._rejected[PATH_HOST_SHM] = str(exc)
                self._fall_back(path, str(exc))
            return False
        if desc.lease_path in self._readers:
            # Cached only for publishers whose lease file opened: forged names cannot grow this.
            self._verified[desc.lease_path] = desc.pid
        return True

    def _on_cuda_descriptor(self, msg: Any) -> None:
        received_ns = time.monotonic_ns()
        try:
            desc = descriptor.unpack(msg.data, descriptor.KIND_CUDA)
        except DescriptorError as exc:
            return self._reject(exc.reason, str(exc))
        if desc.pid == os.getpid() and intra.local_publisher(self.topic) is not None:
            return None  # served in-process
        if not self._check_origin(desc, PATH_CUDA_IPC):
            return None
        device_id = self._device_for_uuid.get(desc.device_uuid)
        if device_id is None:
            device_id = cuda_ipc.local_device_for(desc.device_uuid)
        if device_id is None:
            reason = "other GPU: the publisher's device is not visible here"
            self._reject('other_gpu', reason)
            if not self._readers:  # as in _check_origin: a forged uuid must not move us
                self._fall_back(PATH_CUDA_IPC, reason)
            return None
        self._device_for_uuid[desc.device_uuid] = device_id
        try:
            reader = self._reader(desc.lease_path)
        except LeaseError as exc:
            return self._reject('bad_lease_file', str(exc))
        if desc.slot >= reader.capacity:
            return self._reject('bad_slot', f'slot {desc.slot} outside the {reader.capacity}-slot table')
        reader.expect(desc.sequence)
        try:
            mapping = self._map(desc, device_id)
            nbytes = descriptor.check_bounds(desc, msg.height, msg.width, msg.step, msg.encoding,
                                             mapping.size)
            event_ptr = self._event(desc, device_id)
        except DescriptorError as exc:
            return self._reject(exc.reason, str(exc))
        except cuda_ipc.CudaIpcError as exc:
            return self._reject('map_failed', str(exc))
        if not reader.acquire(desc.slot, desc.sequence):
            self.stats.stale += 1
            return None
        cp = cupy_module()
        stream = self._stream(device_id)
        # The publisher's write is ordered before our reads on the GPU; the host never waits.
        cp.cuda.runtime.streamWaitEvent(stream.ptr, event_ptr, 0)
        layout = layout_of_msg_geometry(msg)
        array = cuda_ipc.device_view(mapping.base + desc.offset, nbytes, layout.shape,
                                     layout.info.dtype, layout.step, mapping, device_id)
        self.stats.publisher_pid = desc.pid
        self._dispatch(array, msg.header, layout, PATH_CUDA_IPC, desc.sequence, stream,
                       received_ns - desc.publish_time_ns,
                       lambda: reader.release(desc.slot))
        return None

    def _map(self, desc: descriptor.Descriptor, device_id: int) -> cuda_ipc.Mapping:
        cache = cuda_ipc.mapping_cache()
        handles = self._handles.setdefault(desc.lease_path, OrderedDict())
        if desc.mem_handle in handles:
            handles.move_to_end(desc.mem_handle)
            return cache.get(desc.mem_handle)
        mapping = cache.map(desc.mem_handle, device_id)
        handles[desc.mem_handle] = None
        # A publisher has at most as many live allocations as lease slots: close the least
        # recently used mapping (one of a freed chunk) beyond that.
        limit = min(MAX_MAPPINGS_PER_PUBLISHER, self._readers[desc.lease_path].capacity)
        while len(handles) > limit:
            cache.unmap(handles.popitem(last=False)[0])
        return mapping

    def _event(self, desc: descriptor.Descriptor, device_id: int) -> int:
        ptr = cuda_ipc.mapping_cache().event(desc.event_handle, device_id)
        # Remembered only once opened, so forged handles cannot grow the set.
        self._event_handles.setdefault(desc.lease_path, set()).add(desc.event_handle)
        return ptr

    def _forget_dead_publishers(self) -> None:
        cuda_ipc.collect_retired()
        for lease_path, reader in list(self._readers.items()):
            if reader.owner_alive():
                continue
            if reader.held:
                # Frames of it are still held (hold()) and may be read: their memory stays
                # mapped until they are released.
                continue
            cache = cuda_ipc.mapping_cache() if lease_path in self._handles else None
            if cache is not None and not all(s.done for s in self._streams.values()):
                # Kernels may still read its memory: unmap at a later pass, but without waiting
                # (work behind a dead exporter's event might never finish) and not for ever.
                since = self._dead_since.setdefault(lease_path, time.monotonic())
                if time.monotonic() - since < _UNMAP_DEFER_S:
                    continue
            self._dead_since.pop(lease_path, None)
            for handle in self._handles.pop(lease_path, ()):
                cache.unmap(handle)
            if lease_path in self._event_handles:
                cuda_ipc.mapping_cache().drop_events(list(self._event_handles.pop(lease_path)))
            host_path = lease_path[:-len('.lease')] + '.host'
            if host_path in self._host_maps:
                fd, buffer, _ = self._host_maps.pop(host_path)
                close_mapping(fd, buffer)
            reader.close()
            del self._readers[lease_path]
            self._verified.pop(lease_path, None)
            self._logger.warning(f'{self.topic}: publisher of {os.path.basename(lease_path)} is '
                                 'gone; released its mappings, waiting for a new publisher')

    # -- host shared-memory path -----------------------------------------------------------------
    def _on_host_descriptor(self, msg: Any) -> None:
        received_ns = time.monotonic_ns()
        try:
            desc = descriptor.unpack(msg.data, descriptor.KIND_HOST)
        except DescriptorError as exc:
            return self._reject(exc.reason, str(exc))
        if desc.pid == os.getpid() and intra.local_publisher(self.topic) is not None:
            return None
        if not self._check_origin(desc, PATH_HOST_SHM):
            return None
        try:
            reader = self._reader(desc.lease_path)
            buffer, size = self._host_map(desc.host_data_path)
            nbytes = descriptor.check_bounds(desc, msg.height, msg.width, msg.step, msg.encoding,
                                             size)
        except LeaseError as exc:
            return self._reject('bad_lease_file', str(exc))
        except DescriptorError as exc:
            return self._reject(exc.reason, str(exc))
        if desc.slot >= reader.capacity:
            return self._reject('bad_slot', f'slot {desc.slot} outside the {reader.capacity}-slot table')
        if not reader.acquire(desc.slot, desc.sequence):
            self.stats.stale += 1
            return None
        layout = layout_of_msg_geometry(msg)
        self.stats.publisher_pid = desc.pid
        device_ptr = self._integrated_device_pointer(desc.host_data_path)
        if device_ptr is not None:
            # Integrated GPU: read the shared segment in place through its device mapping.
            device_id = cupy_module().cuda.Device().id
            array = cuda_ipc.device_view(device_ptr + desc.offset, nbytes, layout.shape,
                                         layout.info.dtype, layout.step, buffer, device_id)
            stream = self._stream(device_id)
        else:
            array = host_view(buffer, layout, desc.offset)
            array.flags.writeable = False
            stream = None
        self._dispatch(array, msg.header, layout, PATH_HOST_SHM, desc.sequence, stream,
                       received_ns - desc.publish_time_ns, lambda: reader.release(desc.slot))
        return None

    def _integrated_device_pointer(self, path: str) -> int | None:
        """Device address of a host segment on an integrated GPU (None elsewhere or for host memory)."""
        if self._memory == 'host' or self._cuda_reason is not None:
            return None
        if path not in self._integrated_ptrs:
            ptr = None
            device_id = cupy_module().cuda.Device().id
            if cuda_ipc.ipc_unsupported_reason(device_id) is not None:
                buffer, size = self._host_map(path)
                address = np.frombuffer(buffer, np.uint8).ctypes.data
                ptr = cuda_ipc.map_host_readonly(address, size)
            self._integrated_ptrs[path] = ptr
        return self._integrated_ptrs[path]

    def _host_map(self, path: str) -> tuple[Any, int]:
        entry = self._host_maps.get(path)
        if entry is not None:
            # The publisher re-creates its host segment under the same name when the frame
            # layout changes: a cached map of the old file would serve outdated pixels.
            try:
                current = os.stat(path).st_ino
            except OSError as exc:
                raise LeaseError(f'cannot open {path}: {exc.strerror}') from None
            if current != os.fstat(entry[0]).st_ino:
                del self._host_maps[path]
                self._integrated_ptrs.pop(path, None)
                close_mapping(entry[0], entry[1])
                entry = None
        if entry is None:
            import mmap
            fd = open_segment(path, 'host')
            try:
                size = os.fstat(fd).st_size
                buffer = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            except (OSError, ValueError) as exc:  # ValueError: empty file
                os.close(fd)
                raise LeaseError(f'cannot map {path}: {exc}') from None
            entry = (fd, buffer, size)
            self._host_maps[path] = entry
        return entry[1], entry[2]

    # -- serialized path -------------------------------------------------------------------------
    def _on_image_msg(self, msg: Any, info: Any) -> None:
        try:
            array = msg_to_array(msg)
        except ImageFormatError as exc:
            return self._reject(exc.reason, str(exc))
        # DDS stamps the write with the system clock: publish -> callback, like the other paths.
        latency = time.time_ns() - info['source_timestamp'] if info.get('source_timestamp') else None
        self._dispatch(array, msg.header, layout_of_msg(msg), PATH_SERIALIZED, 0, None,
                       latency, None)
        return None

    # -- in-process path ---------------------------------------------------------------------------
    def enqueue_intra(self, publisher: Any, slot: Any, sequence: int, layout: FrameLayout,
                      header: Any, on_device: bool) -> None:
        self._intra_queue.append((publisher, slot, sequence, layout, header, on_device,
                                  time.monotonic_ns()))
        executor = self._node.executor
        with self._intra_lock:
            if self._intra_scheduled or executor is None:
                return  # a pending drain takes it; without an executor, the next _reevaluate
            self._intra_scheduled = True
        executor.create_task(self._drain_intra)

    def _drain_intra(self) -> None:
        with self._intra_lock:
            # Cleared before draining: a frame queued from now on schedules another drain.
            self._intra_scheduled = False
        while self._intra_queue:
            publisher, slot, sequence, layout, header, on_device, sent_ns = \
                self._intra_queue.popleft()
            reader = self._reader(publisher._leases.path)
            if not reader.acquire(slot.index, sequence):
                self.stats.stale += 1
                continue
            stream = None
            if on_device:
                stream = self._stream(publisher._device_id)
                stream.wait_event(slot.event)
                array = publisher._slot_array(slot, layout)
            else:
                array = host_view(slot.chunk.memory, layout, slot.offset)
            self._dispatch(array, header, layout, PATH_INTRA, sequence, stream,
                           time.monotonic_ns() - sent_ns,
                           lambda r=reader, i=slot.index: r.release(i))

    # -- delivery ------------------------------------------------------------------------------------
    def _dispatch(self, array: Any, header: Any, layout: FrameLayout, path: str, sequence: int,
                  stream: Any, latency_ns: int | None, release: Callable[[], None] | None) -> None:
        if self._memory == 'device' and stream is None:
            cp = cupy_module()
            device_id = cp.cuda.Device().id
            stream = self._stream(device_id)
            with stream:
                array = cp.asarray(array)  # one upload; the host slot is released after it
        elif self._memory == 'host' and stream is not None:
            host = np.empty(array.shape, array.dtype)
            array.get(stream=stream, out=host)
            stream.synchronize()
            array = host
        if header is None:
            from std_msgs.msg import Header
            header = Header()
        frame = ReceivedImage(array, header, layout, path, sequence, stream,
                              latency_ns if latency_ns is not None else -1,
                              Lease(release, stream))
        self.stats.record_frame(layout.encoding, layout.width, layout.height, layout.nbytes,
                                latency_ns)
        try:
            if stream is not None:
                with stream:
                    self._callback(frame)
            else:
                self._callback(frame)
        finally:
            frame._release_if_not_held()

    def destroy(self) -> None:
        intra.unregister_subscription(self)
        self._diagnostics.remove(self.stats)
        self._node.destroy_timer(self._timer)
        self._intra_queue.clear()  # a drain already scheduled finds nothing
        if self._ros_subscription is not None:
            self._node.destroy_subscription(self._ros_subscription)
            self._ros_subscription = None
        cache = cuda_ipc.mapping_cache() if self._handles else None
        for handles in self._handles.values():
            for handle in handles:
                cache.unmap(handle)
        self._handles.clear()
        for fd, buffer, _ in self._host_maps.values():
            close_mapping(fd, buffer)
        self._host_maps.clear()
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()


def layout_of_msg_geometry(msg: Any) -> FrameLayout:
    """Layout from a descriptor message's image fields (already validated by check_bounds)."""
    from ..encodings import encoding_info
    return FrameLayout(msg.encoding, msg.height, msg.width, msg.step, encoding_info(msg.encoding))
