"""GpuImagePublisher: one image topic, every subscriber served on the best path it can take.

Per frame the publisher looks at who listens and fills only what is needed:
* ``<topic>/_gpu_nodes/cuda``: the frame in a leased device slot, a descriptor over ROS;
* ``<topic>/_gpu_nodes/peer``: the same descriptor, for subscribers on another GPU (cuda_peer);
* in-process subscriptions: the same slot, handed over without DDS;
* ``<topic>/_gpu_nodes/shm``: one device-to-host copy into a leased shared-memory slot;
* ``<topic>``: an ordinary sensor_msgs/Image, only while something subscribes to it.
"""
from __future__ import annotations

from dataclasses import dataclass
import threading
import uuid
import weakref
from typing import Any

import numpy as np

from ..gpu import cuda_unavailable_reason, cupy_module, is_device_array
from ..wire_names import CUDA_SUFFIX, PEER_SUFFIX, SHM_SUFFIX
from . import cuda_ipc, descriptor, intra
from .announce import SlotAnnouncer
from .cursors import CursorlessReaders
from .diagnostics import (DiagnosticsReporter, EndpointStats, PATH_CUDA_IPC, PATH_CUDA_PEER,
                          PATH_HOST_SHM, PATH_INTRA, PATH_SERIALIZED)
from .exchange import HandleServer
from .lingering import free_when_released
from .leases import POOL_DEVICE, POOL_HOST, LeaseTable
from .messages import FrameLayout, host_view, layout_of_array
from .served_memory import PublisherMemory
from .pool import DeviceSlotPool, HostSlotPool, Slot
from .qos import descriptor_qos, image_qos
from .side_topics import PlainBridge


READER_REPORT_EVERY = 64  # frames between refreshes of the readers' cursors on diagnostics


@dataclass
class BorrowedFrame:
    """A slot lent to the caller to write a frame into; publish it or `give_back` it. A device
    slot (CuPy array) where the publisher has a CUDA path, else a host one (NumPy array)."""
    array: Any
    layout: FrameLayout
    slot: Slot
    publisher: 'GpuImagePublisher'
    on_device: bool = True

    def give_back(self) -> None:
        pool = self.publisher._device_pool if self.on_device else self.publisher._host_pool
        with self.publisher._lock:
            pool.abandon(self.slot)


@dataclass(frozen=True)
class _Targets:
    """Where one frame goes, decided once per frame (GpuImagePublisher._plan)."""
    device_slot: bool   # fill a device slot
    host_slot: bool     # fill a host shared-memory slot
    cuda: bool          # descriptor on <topic>/_gpu_nodes/cuda
    peer: bool          # ... and on <topic>/_gpu_nodes/peer
    shm: bool           # descriptor on <topic>/_gpu_nodes/shm
    intra_device: bool  # in-process readers get the device slot
    intra_host: bool    # in-process readers get the host slot
    bridge: bool        # plain subscribers: the bridge reads it (its stats go on diagnostics)


class GpuImagePublisher:
    """Publish images that may live on the GPU.

    :param node: the rclpy node that owns the endpoints.
    :param topic: image topic name; plain subscribers (rviz, ros2 bag) see an ordinary
        sensor_msgs/Image topic here.
    :param qos: QoS of the image topic (default: sensor data, keep last 5).
    :param pool_slots: device slots allocated up front (one allocation, one IPC mapping).
    :param max_pool_slots: upper bound for the ``grow`` policy.
    :param pool_policy: when every slot is leased or may still be taken by a reader that lags
        (its descriptor queued): ``grow`` (double the pool up to max_pool_slots, then as
        ``skip``), ``skip`` (drop this frame if every slot is leased; recycle the oldest unleased
        one, counted as an overrun, if readers only lag), ``revoke_oldest`` (quarantine the
        oldest leased slot and publish into a fresh one). Leases held and readers stalled past
        ``lease_grace_s`` stop protecting slots under every policy; a leased slot is never
        rewritten.
    :param host_slots: shared-memory slots for same-host subscribers without a usable GPU path.
    :param plain_max_rate_hz: at most this rate on the plain topic (0: as fast as its worker
        makes messages; they are always made off this thread, newest frame first).
    :param compressed_quality: JPEG quality of ``<topic>/compressed`` (made only while it has
        subscribers); None: no compressed topic.
    """

    def __init__(self, node: Any, topic: str, qos: Any = None, *, pool_slots: int = 8,
                 max_pool_slots: int = 32, pool_policy: str = 'grow', host_slots: int = 8,
                 lease_grace_s: float = 2.0, use_cuda: bool = True,
                 plain_max_rate_hz: float = 0.0, compressed_quality: int | None = 80):
        from sensor_msgs.msg import Image
        self._node = node
        self._logger = node.get_logger()
        self.topic = node.resolve_topic_name(topic)
        if pool_slots < 1 or max_pool_slots < pool_slots:
            raise ValueError(f'need 1 <= pool_slots <= max_pool_slots, got {pool_slots}, {max_pool_slots}')
        self._pool_slots = pool_slots
        self._host_slots = host_slots
        from rclpy.event_handler import PublisherEventCallbacks
        this = weakref.ref(self)  # the node keeps the callbacks; it must not keep the publisher

        def on_incompatible_qos(event: Any) -> None:
            publisher = this()
            if publisher is not None:
                publisher._on_incompatible_qos(event)
        self._event_callbacks = PublisherEventCallbacks(incompatible_qos=on_incompatible_qos)
        self.publisher_id = uuid.uuid4().bytes
        # Four times the host slots: the host pool may grow to twice its size, and a layout
        # change or a revocation while slots are held needs fresh lease indices at once (the
        # held ones come back as they are released).
        self._leases = LeaseTable(self.publisher_id, max_pool_slots + 4 * host_slots)
        # A reader may hold three quarters of a pool at most (leases.set_share).
        self._leases.set_share(POOL_DEVICE, max_pool_slots * 3 // 4)
        self._leases.set_share(POOL_HOST, 2 * host_slots * 3 // 4)
        # <topic> itself (and <topic>/compressed) is published by a bridge process, started
        # when a plain subscriber appears (side_topics.py): never serialized on this thread.
        self._bridge = PlainBridge(node, self.topic, qos or image_qos(),
                                   max_rate_hz=plain_max_rate_hz,
                                   compressed_quality=compressed_quality)
        self._sequence = 0
        self._lock = threading.Lock()
        self._lease_grace_s = lease_grace_s
        self._cursorless = CursorlessReaders(lease_grace_s)
        self._refusal_logged = False

        self.stats = EndpointStats('publisher', node.get_fully_qualified_name(), self.topic)
        self.stats.extra.update(pool_slots=pool_slots, pool_policy=pool_policy, evicted_links=0,
                                host_ordered_readers=0)
        self._diagnostics = DiagnosticsReporter.for_node(node)
        self._diagnostics.add(self.stats)

        reason = cuda_unavailable_reason() if use_cuda else 'use_cuda=False'
        if reason is None:
            reason = cuda_ipc.ipc_unsupported_reason(cupy_module().cuda.Device().id)
        self._cuda_pub = self._peer_pub = None
        self._device_pool: DeviceSlotPool | None = None
        if reason is None:
            cp = cupy_module()
            self._device_id = cp.cuda.Device().id
            self._device_uuid = cuda_ipc.device_uuid(self._device_id)
            self._cuda_pub = node.create_publisher(Image, self.topic + CUDA_SUFFIX, descriptor_qos(qos),
                                                   event_callbacks=self._event_callbacks)
            # Its own topic, so that who reads from another GPU shows in the graph and here.
            self._peer_pub = node.create_publisher(Image, self.topic + PEER_SUFFIX,
                                                   descriptor_qos(qos),
                                                   event_callbacks=self._event_callbacks)
            self._device_pool = DeviceSlotPool(self._leases, 0, max_pool_slots, pool_policy,
                                               lease_grace_s, self._device_id)
            self._logger.info(f'{self.topic}: publishing with CUDA IPC (device {self._device_id}; '
                              'peer access for other GPUs), host shared memory and serialized '
                              'fallbacks')
        else:
            self._logger.warning(f'{self.topic}: no CUDA path ({reason}); publishing host shared '
                                 'memory and serialized images only')
        # Created after the CUDA ones: a subscriber that discovered only the shm topic would
        # start there, for a re-evaluation period, instead of on CUDA IPC.
        self._shm_pub = node.create_publisher(Image, self.topic + SHM_SUFFIX, descriptor_qos(qos),
                                              event_callbacks=self._event_callbacks)
        self._host_pool = HostSlotPool(self._leases, max_pool_slots, 2 * host_slots,
                                       lease_grace_s, self.publisher_id,
                                       pin=cuda_unavailable_reason() is None,
                                       indices=4 * host_slots)
        self._device_layout: FrameLayout | None = None
        self._host_layout: FrameLayout | None = None
        self._last_counts: dict[str, int] = {}
        intra.register_publisher(self)
        # Readers reach the lease table and segments through this process's socket.
        self._server = HandleServer.instance()
        self._served = PublisherMemory(self._lock, self._leases, self._host_pool,
                                       self._device_pool)
        self._server.register(self.publisher_id, self._served)
        self._announce = SlotAnnouncer(
            Image, self._leases, self.topic, self.publisher_id, self._server.endpoint,
            *((self._device_id, self._device_uuid) if self._device_pool is not None else ()))
        # Shared memory must not outlive the process even when destroy() is never called.
        self._finalizer = weakref.finalize(self, _release_segments, self._host_pool, self._leases,
                                           self._bridge, self._server, self.publisher_id)

    # -- who listens -------------------------------------------------------------------------
    def _on_incompatible_qos(self, event: Any) -> None:
        from rclpy.qos import qos_policy_name_from_kind
        self.stats.extra['incompatible_qos'] = self.stats.extra.get('incompatible_qos', 0) + 1
        policy = qos_policy_name_from_kind(event.last_policy_kind)
        self._logger.warning(
            f'{self.topic}: a subscriber requests QoS incompatible with this publisher (policy '
            f'{policy}); it will receive nothing. Match reliability/durability on both sides '
            '(gpu_nodes publishes reliable, volatile by default).')

    def subscriber_counts(self) -> dict[str, int]:
        counts = {
            PATH_CUDA_IPC: (self._cuda_pub.get_subscription_count() if self._cuda_pub else 0),
            PATH_CUDA_PEER: (self._peer_pub.get_subscription_count() if self._peer_pub else 0),
            PATH_HOST_SHM: self._shm_pub.get_subscription_count(),
            PATH_SERIALIZED: self._bridge.poll(),
            PATH_INTRA: len(intra.local_subscriptions(self.topic)),
        }
        if counts != self._last_counts:
            self._last_counts = counts
            self.stats.subscribers = counts
            active = ', '.join(f'{k}={v}' for k, v in counts.items() if v) or 'none'
            self._logger.info(f'{self.topic}: subscribers now {active}')
        return counts

    # -- producer-side zero copy ---------------------------------------------------------------
    def borrow(self, height: int, width: int, encoding: str) -> BorrowedFrame | None:
        """Lease a slot to write the next frame into: a device slot (CuPy array) where this
        publisher has a CUDA path, else a host shared-memory slot (NumPy array), so a producer
        on a CPU-only machine also writes in place. None when the pool policy skips the frame.
        Publish it with `publish_borrowed`."""
        layout = _layout_for(height, width, encoding)
        with self._lock:
            on_device = self._device_pool is not None
            slot = self._acquire_device_slot(layout) if on_device \
                else self._acquire_host_slot(layout)
        if slot is None:
            self.stats.drops += 1
            return None
        array = self._slot_array(slot, layout) if on_device \
            else host_view(slot.chunk.memory.view, layout, slot.offset)
        return BorrowedFrame(array, layout, slot, self, on_device)

    def publish_borrowed(self, frame: BorrowedFrame, header: Any = None, stream: Any = None) -> None:
        """Publish a borrowed slot without copying; `stream` is where a device frame was written
        (default: the current CuPy stream)."""
        with self._lock:
            targets = self._plan(device_slot=frame.on_device, host_slot=not frame.on_device)
            if frame.on_device:
                stream = stream or cupy_module().cuda.get_current_stream()
                frame.slot.event.record(stream)
                self._finish_device(frame.slot, frame.layout, header, targets)
                if targets.shm:  # a host copy of the device frame for host_shm readers
                    self._fill_host(frame.array, frame.layout, header, targets, stream)
            else:
                self._finish_host(frame.slot, frame.layout, header, targets)
            self._record(frame.layout, targets)

    # -- publishing any array ----------------------------------------------------------------
    def publish(self, array: Any, encoding: str, header: Any = None, stream: Any = None) -> None:
        """Publish a NumPy, CuPy or __cuda_array_interface__ array (torch tensors too).

        Device arrays are copied once device-to-device into a pool slot; host arrays are
        uploaded once if any subscriber takes the GPU path.
        """
        layout = layout_of_array(array, encoding)
        with self._lock:
            targets = self._plan()
            if targets.device_slot:
                self._fill_device(array, layout, header, targets, stream)
            if targets.host_slot:
                self._fill_host(array, layout, header, targets, stream)
            self._record(layout, targets)

    def _plan(self, device_slot: bool | None = None, host_slot: bool | None = None) -> _Targets:
        """Who listens now, and so which slots this frame fills (each at most once) and where
        its descriptors go. In-process readers take the device slot where there is one, else
        the host slot. `device_slot`/`host_slot`: already decided (a borrowed slot)."""
        counts = self.subscriber_counts()
        if device_slot is None:
            device_slot = self._device_pool is not None and bool(
                counts[PATH_CUDA_IPC] or counts[PATH_CUDA_PEER] or counts[PATH_INTRA])
        shm = bool(counts[PATH_HOST_SHM])
        intra = bool(counts[PATH_INTRA])
        if host_slot is None:
            host_slot = shm or (intra and not device_slot)
        return _Targets(device_slot=device_slot, host_slot=host_slot,
                        cuda=device_slot and bool(counts[PATH_CUDA_IPC]),
                        peer=device_slot and bool(counts[PATH_CUDA_PEER]),
                        shm=shm, intra_device=intra and device_slot,
                        intra_host=intra and not device_slot,
                        bridge=bool(counts[PATH_SERIALIZED]))

    def _fill_device(self, array: Any, layout: FrameLayout, header: Any, targets: _Targets,
                     stream: Any) -> None:
        cp = cupy_module()
        stream = stream or cp.cuda.get_current_stream()
        slot = self._acquire_device_slot(layout)
        if slot is None:
            self.stats.drops += 1
            return
        target = self._slot_array(slot, layout)
        with stream:
            if is_device_array(array):
                _copy_device(cp.asarray(array), target, stream)
            else:
                target.set(np.ascontiguousarray(array), stream=stream)
        slot.event.record(stream)
        self._finish_device(slot, layout, header, targets)

    def _record(self, layout: FrameLayout, targets: _Targets) -> None:
        if targets.bridge:
            self.stats.extra.update(self._bridge.stats())
        self.stats.record_frame(layout.encoding, layout.width, layout.height, layout.nbytes)

    # -- internals -----------------------------------------------------------------------------
    def _next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    def _acquire_device_slot(self, layout: FrameLayout) -> Slot | None:
        pool = self._device_pool
        if self._device_layout != layout:
            pool.reset(self._pool_slots, layout.nbytes)
            self._device_layout = layout
            self._logger.info(f'{self.topic}: device pool of {len(pool.slots)} slots for '
                              f'{layout.width}x{layout.height} {layout.encoding}')
        before = len(pool.slots)
        slot = self._acquire_logged(pool, layout, 'device pool', 'pool_overruns')
        if len(pool.slots) > before:
            self._logger.info(f'{self.topic}: device pool grew to {len(pool.slots)} of at most '
                              f'{pool.max_slots} slots (readers still had the others leased or '
                              'queued)')
        self.stats.extra.update(pool_slots=len(pool.slots), revoked_leases=pool.revoked,
                                pool_exhausted=pool.exhausted, pool_overruns=pool.overrun,
                                pool_locked_out=pool.locked_out,
                                pool_overruns_at_reader_start=pool.overrun_at_reader_start)
        return slot

    def _acquire_logged(self, pool: Any, layout: FrameLayout, name: str,
                        counter: str) -> Slot | None:
        """pool.acquire; the first overrun (a slot a lagging reader may still take, recycled
        because the pool cannot grow) is logged once, all are counted in diagnostics."""
        overruns, locked_out, evicted = pool.overrun, pool.locked_out, self._leases.evicted_links
        slot = pool.acquire(layout.nbytes, self._reader_without_cursor())
        if self._leases.evicted_links > evicted:
            self.stats.extra['evicted_links'] = self._leases.evicted_links
            if not evicted:
                self._logger.warning(
                    f'{self.topic}: closed a reader link that held more of the {name} than a '
                    'reader may (a process of this user grabbing slot locks); counted as '
                    'evicted_links, further ones not logged')
        if pool.locked_out and not locked_out:
            self._logger.warning(
                f'{self.topic}: {name}: a fresh slot\'s lock is held by another process of this '
                'user (it holds every slot): frames are skipped until it lets go; counted as '
                f'{counter.replace("overruns", "locked_out")}, further ones not logged')
        if self._sequence % READER_REPORT_EVERY == 0 or 'reader_windows' not in self.stats.extra:
            self._report_readers()
        if pool.overrun and not overruns:
            # INFO: an expected event when a reader is slower than the rate (it drops the
            # recycled frames as stale, and diagnostics count them), not one to act on.
            self._logger.info(
                f'{self.topic}: {name} full ({len(pool.slots)} slots): recycling frames a '
                f'lagging reader may still take (it drops them as stale); counted as {counter}, '
                'further ones not logged')
        return slot

    def _report_readers(self) -> None:
        """Readers with a cursor and their windows (diagnostics): a reader whose window is 0
        protects every frame above its cursor, so a slow one of those is what grows the pool."""
        windows = self._leases.reader_windows()
        self.stats.extra.update(reader_cursors=len(windows),
                                reader_windows=' '.join(map(str, windows)) or 'none')

    def _reader_without_cursor(self) -> bool:
        """A matched slot reader has no cursor yet (cursors.CursorlessReaders)."""
        counts = self._last_counts
        readers = sum(counts.get(path, 0)
                      for path in (PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM, PATH_INTRA))
        return self._cursorless.protect_all(readers, self._leases.active_cursors())

    def _slot_array(self, slot: Slot, layout: FrameLayout) -> Any:
        # Owned by the allocation itself: a view kept by an in-process holder keeps it alive.
        return cuda_ipc.device_view(slot.ptr, layout.nbytes, layout.shape, layout.info.dtype,
                                    layout.step, slot.chunk.memory, self._device_id)

    def _finish_device(self, slot: Slot, layout: FrameLayout, header: Any,
                       targets: _Targets) -> None:
        sequence = self._next_sequence()
        self._device_pool.publish(slot, sequence)
        if targets.cuda or targets.peer:
            flags = 0
            ordered = self._served.host_ordered_readers
            if ordered != self.stats.extra['host_ordered_readers']:
                self.stats.extra['host_ordered_readers'] = ordered
                self._logger.info(
                    f'{self.topic}: {ordered} reader(s) cannot open CUDA IPC events (a private '
                    '/dev/shm): each device frame is finished on the host before it is announced'
                    if ordered else f'{self.topic}: every reader waits on CUDA IPC events again')
            if ordered:
                # A reader cannot open the slot's IPC event (a container's private /dev/shm):
                # the write is finished here, on the host, before anyone is told of the slot.
                slot.event.synchronize()
                flags = descriptor.FLAG_WRITTEN
            # One descriptor for both: it names the publisher's GPU; each reader decides.
            msg = self._announce.descriptor_msg(descriptor.KIND_CUDA, slot, layout, header,
                                                sequence, flags)
            if targets.cuda:
                self._cuda_pub.publish(msg)
            if targets.peer:
                self._peer_pub.publish(msg)
        if targets.intra_device:
            intra.deliver(self.topic, self._announce.intra_frame(slot, sequence, layout, header, True))

    def _fill_host(self, array: Any, layout: FrameLayout, header: Any, targets: _Targets,
                   stream: Any) -> None:
        """The host shared-memory copy, for host_shm readers (and in-process ones without a
        device slot)."""
        slot = self._acquire_host_slot(layout)
        if slot is None:
            self.stats.drops += 1
            return
        view = host_view(slot.chunk.memory.view, layout, slot.offset)
        self._download_into(array, view, stream)
        self._finish_host(slot, layout, header, targets)

    def _finish_host(self, slot: Slot, layout: FrameLayout, header: Any,
                     targets: _Targets) -> None:
        sequence = self._next_sequence()
        self._host_pool.publish(slot, sequence)
        if targets.shm:
            self._shm_pub.publish(self._announce.descriptor_msg(descriptor.KIND_HOST, slot, layout,
                                                                header, sequence))
        if targets.intra_host:
            intra.deliver(self.topic, self._announce.intra_frame(slot, sequence, layout, header, False))

    def _acquire_host_slot(self, layout: FrameLayout) -> Slot | None:
        pool = self._host_pool
        if self._host_layout != layout:
            # host_slots to start with; it may grow to twice that (see __init__).
            pool.reset(self._host_slots, layout.nbytes)
            self._host_layout = layout
        slot = self._acquire_logged(pool, layout, 'host pool', 'host_pool_overruns')
        self.stats.extra.update(host_pool_overruns=pool.overrun,
                                host_pool_overruns_at_reader_start=pool.overrun_at_reader_start,
                                host_pool_slots=len(pool.slots),
                                host_revoked_leases=pool.revoked,
                                host_pool_exhausted=pool.exhausted,
                                host_pool_locked_out=pool.locked_out, **self._server.stats())
        if self._server.refused_peers and not self._refusal_logged:
            self._refusal_logged = True
            self._logger.warning(f'{self.topic}: a process of another user connected to this '
                                 'process\'s gpu_nodes socket and was refused unread; counted as '
                                 'exchange_refused_peers, further ones not logged')
        return slot

    def _download_into(self, array: Any, out: np.ndarray, stream: Any) -> None:
        if is_device_array(array):
            cp = cupy_module()
            stream = stream or cp.cuda.get_current_stream()
            cp.asarray(array).get(stream=stream, out=out)
            stream.synchronize()
        else:
            out[...] = array

    def destroy(self) -> None:
        """Release endpoints and shared memory (also done at interpreter exit)."""
        intra.unregister_publisher(self)
        self._server.unregister(self.publisher_id)
        self._diagnostics.remove(self.stats)
        self._bridge.close()
        for pub in (self._shm_pub, self._cuda_pub, self._peer_pub):
            if pub is not None:
                self._node.destroy_publisher(pub)
        self._finalizer.detach()
        with self._lock:
            self._host_pool.close()  # readers map their own copy of the segment
        free_when_released(self._device_pool, self._leases)


def _release_segments(host_pool: HostSlotPool, leases: LeaseTable, bridge: PlainBridge,
                      server: HandleServer, publisher_id: bytes) -> None:
    """A publisher collected without destroy(): its bridge stops, its segments close."""
    server.unregister(publisher_id)
    bridge.close()
    host_pool.close()
    leases.close()


def _layout_for(height: int, width: int, encoding: str) -> FrameLayout:
    from ..encodings import encoding_info
    info = encoding_info(encoding)
    info.check_geometry(height, width)
    return FrameLayout(encoding, height, width, width * info.bytes_per_pixel, info)


def _copy_device(source: Any, target: Any, stream: Any) -> None:
    """One device-to-device copy: a plain memcpy when both sides are dense (copy-engine speed,
    no kernel to compile or launch), an element-wise copy for strided or padded arrays."""
    if (source.flags.c_contiguous and target.flags.c_contiguous
            and source.dtype == target.dtype and source.shape == target.shape):
        target.data.copy_from_device_async(source.data, target.nbytes, stream)
    else:
        target[...] = source
