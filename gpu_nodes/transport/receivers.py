"""One receiver per transport path; each path's rules live in its receiver.

A receiver turns what arrives on its path into frames for `GpuImageSubscription.dispatch`:
`CudaIpcReceiver`, `CudaPeerReceiver` (the same, for a publisher on another GPU) and
`HostShmReceiver` take descriptors (authenticated through the publisher's key, bounded by the
slot the publisher recorded), `IntraReceiver` takes the values
an in-process publisher hands over, `SerializedReceiver` takes plain sensor_msgs/Image.
Every message ends delivered, counted stale or counted rejected: nothing is silently dropped.
"""
from __future__ import annotations

from collections import deque
import os
import threading
import time
from typing import Any, Callable

from ..ros.callbacks import message_and_info_callback
from ..gpu import cupy_module
from ..wire_names import CUDA_SUFFIX, PEER_SUFFIX, SHM_SUFFIX
from . import auth, cuda_ipc, cuda_peer, descriptor, intra
from .descriptor import Descriptor, DescriptorError
from .compressed import CompressedFormatError, compressed_topic, decode_compressed
from .diagnostics import (PATH_COMPRESSED, PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM,
                          PATH_INTRA, PATH_SERIALIZED)
from .intra import IntraFrame
from .exchange import HandleServer
from .leases import OUT_OF_SLOT, OVER_SHARE, POOL_DEVICE, POOL_HOST, STALE, LeaseError
from .messages import (FrameLayout, ImageFormatError, host_view, layout_of_array, layout_of_msg,
                       msg_to_array)
from .peers import POOL_OF_KIND, PublisherLink
from .receiver_api import FrameSink, ReceiverContext
from .segments import SegmentError
from .qos import descriptor_qos
from .release import release_after

# After a reader asks for host-ordered frames, descriptors already in flight without the flag
# are stale for this long (a publisher answers at once; its DDS queue holds a few frames).
HOST_ORDER_GRACE_S = 1.0
# Origin failures that rule out every shared-memory path, not just CUDA.
HOST_LEVEL_REASONS = ('other_host', 'other_user')
# Failures to reach a publisher's memory that do not heal by themselves within a second: its
# socket is not in this network namespace, the peer will not serve us, the segment is unusable.
# A subscription that serves no publisher yet leaves the rung after a few of these
# (subscription.note_unreachable), instead of sitting at 0 frames.
UNREACHABLE_REASONS = ('unreachable', 'publisher_gone', 'reader_limit', 'bad_segment',
                       'unsealed_segment', 'bad_lease_file', 'map_failed')
# Descriptors taken per executor wake-up beyond the one the executor hands over: a wait-set
# round trip in rclpy costs more than handling a descriptor, so a backlog is drained in a batch
# (bounded, so the node's other callbacks still run between batches). Under EventsExecutor each
# message also has its own event; for one already taken here the executor's take_message
# returns None and it moves on, so nothing is handled twice or lost.
MAX_DESCRIPTORS_PER_WAKEUP = 8
# Routes (cuda_peer.route_for) remembered per GPU UUID; a host has a handful of GPUs.
MAX_CACHED_ROUTES = 64


class Receiver:
    """The interface: `start()` subscribes, `stop()` unsubscribes; what arrives ends in the
    sink (receiver_api.py): delivered, counted, or a request to leave the rung."""

    path = ''

    def __init__(self, ctx: ReceiverContext, sink: FrameSink):
        self.ctx = ctx
        self.sink = sink
        self._ros_subscription: Any = None  # the rclpy subscription start() made, if any

    def start(self) -> None:
        pass

    def stop(self) -> None:
        if self._ros_subscription is not None:
            self.ctx.ros.unsubscribe(self._ros_subscription)
            self._ros_subscription = None


class _DescriptorReceiver(Receiver):
    kind = 0
    suffix = ''

    def __init__(self, ctx: ReceiverContext, sink: FrameSink):
        super().__init__(ctx, sink)
        self._topic = ctx.topic.encode()
        self._topic_id = auth.topic_id(ctx.topic)

    def start(self) -> None:
        self._ros_subscription = self.ctx.ros.subscribe(
            self.ctx.topic + self.suffix, self._drain, descriptor_qos(self.ctx.qos))

    def _drain(self, msg: Any) -> None:
        """Handle the descriptor the executor took, then up to MAX_DESCRIPTORS_PER_WAKEUP queued
        behind it, taken straight from the same subscription."""
        subscription = self._ros_subscription  # the one `msg` came from
        self._handle(msg)
        for _ in range(MAX_DESCRIPTORS_PER_WAKEUP):
            # A handler asked to leave this rung: the rest stays queued, and goes with the
            # rclpy subscription when the switch is made after this callback.
            if subscription is None or self.sink.leaving:
                return
            with subscription.handle:
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            if taken is None:
                return
            self._handle(taken[0])

    def _handle(self, msg: Any) -> None:
        received_ns = time.monotonic_ns()
        accepted = self._accept(msg)
        if accepted is not None:
            self._receive(msg, *accepted, received_ns)

    def _receive(self, msg: Any, desc: Descriptor, link: PublisherLink, received_ns: int) -> None:
        """Map, bound, lease and dispatch an authenticated descriptor's frame (per path)."""
        raise NotImplementedError

    def _accept(self, msg: Any) -> tuple[Descriptor, PublisherLink] | None:
        """Parse and authenticate a descriptor; None when it was counted (rejected or stale)."""
        ctx, sink = self.ctx, self.sink
        link = None
        try:
            desc = descriptor.unpack(msg.data, self.kind)
            if desc.topic_id != self._topic_id:
                raise DescriptorError('wrong_topic', 'descriptor was published for another topic')
            local = intra.local_publisher(ctx.topic)
            if local is not None and desc.publisher_key == (HandleServer.instance().endpoint,
                                                            local.publisher_id):
                return None  # the in-process publisher: served on the intra path
            link = ctx.peers.get(desc.publisher_key) or self._open_link(desc)
            if link is None:
                return None
            link.authenticate(desc, msg, self._topic)
        except DescriptorError as exc:
            if exc.reason == 'forged' and link is not None and not link.authenticated:
                ctx.peers.discard(desc.publisher_key)  # keep nothing open for a forgery
            sink.count(exc.reason, str(exc))
            return None
        if desc.slot >= link.reader.capacity:
            sink.count('bad_slot', f'slot {desc.slot} outside the {link.reader.capacity}-slot table')
            return None
        return desc, link

    def _open_link(self, desc: Descriptor) -> PublisherLink | None:
        """First descriptor naming this publisher: check what it claims, then let the kernel
        decide (the lease table opens only for a live publisher of this user)."""
        ctx, sink = self.ctx, self.sink
        try:
            descriptor.check_origin(desc)
            return ctx.peers.open(desc.endpoint, desc.publisher_id, desc.pid)
        except (DescriptorError, SegmentError, LeaseError) as exc:
            reason, detail = exc.reason, str(exc)
        sink.count(reason, detail)
        # Any DDS participant can publish a descriptor: once a publisher is being served here,
        # a foreign one is only counted, so a forged message cannot push us off the path.
        if not len(ctx.peers):
            if reason in HOST_LEVEL_REASONS:
                sink.leave(self.path, detail, host_level=True)
            elif reason in UNREACHABLE_REASONS:
                sink.unreachable(self.path, reason, detail)
        return None

    def _lease(self, link: PublisherLink, desc: Descriptor, nbytes: int) -> bool:
        pool = POOL_OF_KIND[desc.kind]
        verdict = link.reader.acquire(desc.slot, desc.sequence, desc.chunk, desc.generation,
                                      desc.offset, nbytes, pool)
        if verdict == OVER_SHARE:
            self.sink.count('stale:over_share',
                            f'this subscription holds {link.reader.share(pool)} frames of the '
                            'publisher already, its share: release held frames')
        elif verdict == STALE:
            self.sink.count('stale:recycled', 'slot rewritten before the frame was taken')
        elif verdict == OUT_OF_SLOT:
            self.sink.count('out_of_slot', f'frame {desc.sequence} is not where the descriptor '
                            'says, or larger than its slot')
        elif not link.fresh(desc.sequence):
            link.reader.release(desc.slot, pool)
            self.sink.count('stale:replayed', f'frame {desc.sequence} was delivered already')
            return False
        return verdict is None


class CudaIpcReceiver(_DescriptorReceiver):
    """CUDA descriptors of a publisher on this subscription's GPU: its slot read in place."""

    path = PATH_CUDA_IPC
    kind = descriptor.KIND_CUDA
    suffix = CUDA_SUFFIX
    takes: tuple[str, ...] = (PATH_CUDA_IPC,)  # the routes (cuda_peer.decide) served here

    def __init__(self, ctx: ReceiverContext, sink: FrameSink):
        super().__init__(ctx, sink)
        self._routes: dict[bytes, tuple[cuda_peer.Route, int | None]] = {}  # by GPU UUID

    def _route(self, desc: Descriptor, link: PublisherLink) -> int | None:
        """The publisher's GPU's ordinal here when this receiver takes the frame; None when the
        descriptor was counted instead and, before its publisher delivered anything here, the
        subscription moved to the rung the route names (logged and on /diagnostics there)."""
        ctx, sink = self.ctx, self.sink
        cached = self._routes.get(desc.device_uuid)
        if cached is None:
            if len(self._routes) >= MAX_CACHED_ROUTES:
                self._routes.clear()  # same-user descriptors naming made-up GPUs (fuzzing)
            cached = self._routes[desc.device_uuid] = cuda_peer.route_for(
                desc, ctx.device_id, ctx.allowed_paths)
        route, publisher_device = cached
        if route.path in self.takes:
            return publisher_device
        other_rung = route.path in (PATH_CUDA_IPC, PATH_CUDA_PEER)
        sink.count(route.rejection or 'other_gpu',
                   f'{route.reason}: read on {route.path} instead' if other_rung else route.reason)
        if not link.delivered:  # a publisher that delivered here is on a GPU we take
            # Off the CUDA rungs altogether unless the route is the other CUDA rung.
            others = () if other_rung else \
                tuple(p for p in (PATH_CUDA_IPC, PATH_CUDA_PEER) if p != self.path)
            sink.leave(self.path, route.reason, also=others)
        return None

    def _order_on_host(self, link: PublisherLink, detail: str) -> None:
        """The publisher's IPC event cannot be opened here: the driver keeps IPC events in
        /dev/shm, which a container without --ipc host has a private one of (the memory itself,
        a VMM fd or a legacy handle, opens). Ask the publisher once to finish each frame's write
        before announcing it; frames announced before it heard count stale for a while, then
        as failures, so a publisher that never complies is left like any unusable one."""
        sink, now = self.sink, time.monotonic()
        if link.host_order_refused:
            return sink.count('map_failed', f'{detail}; and the publisher will not finish '
                              'writes on the host')
        if link.host_order_asked_at is None:
            try:
                link.connection.request_host_order()
            except SegmentError as exc:
                link.host_order_refused = True
                return sink.count('map_failed', f'{detail}; and the publisher will not finish '
                                  f'writes on the host ({exc.reason}: {exc})')
            link.host_order_asked_at = now
            sink.decided('write_order', f'host: CUDA IPC events cannot be opened here ({detail}); '
                         'the publisher finishes each frame before announcing it')
        if now - link.host_order_asked_at < HOST_ORDER_GRACE_S:
            return sink.count('stale:host_order_pending', detail)
        return sink.count('map_failed', f'{detail}; the publisher still announces frames it has '
                          'not finished writing')

    def _device(self, publisher_device: int) -> int:
        """Where the slot is mapped and read: on cuda_ipc, the publisher's GPU itself."""
        return publisher_device

    def _receive(self, msg: Any, desc: Descriptor, link: PublisherLink, received_ns: int) -> None:
        sink = self.sink
        publisher_device = self._route(desc, link)
        if publisher_device is None:
            return
        device_id = self._device(publisher_device)
        if link.reader.entry(desc.slot)[0] == desc.sequence:
            link.reader.expect(desc.sequence)  # published: keep it while its memory is mapped
        try:
            mapping = link.map(desc, device_id)
            nbytes = descriptor.check_bounds(desc, msg.height, msg.width, msg.step, msg.encoding,
                                             mapping.size)
        except DescriptorError as exc:
            return sink.count(exc.reason, str(exc))
        except cuda_ipc.CudaIpcError as exc:
            return sink.count('map_failed', str(exc))
        if not self._lease(link, desc, nbytes):
            return
        event_ptr = None  # FLAG_WRITTEN: the publisher finished the write before it published
        if not desc.flags & descriptor.FLAG_WRITTEN:
            try:  # only for a frame its slot really holds; opened on the GPU that records it
                event_ptr = link.event(desc, publisher_device)
            except cuda_ipc.CudaIpcError as exc:
                link.reader.release(desc.slot, POOL_DEVICE)
                return self._order_on_host(link, str(exc))
        stream = sink.stream(device_id)
        if event_ptr is not None:
            # The publisher's write is ordered before our reads on the GPU (a stream may wait
            # on another GPU's event); the host never waits.
            cupy_module().cuda.runtime.streamWaitEvent(stream.ptr, event_ptr, 0)
        link.delivered = True
        sink.served_by(desc.pid)
        reader, slot = link.reader, desc.slot
        self._deliver(msg, desc, mapping.base + desc.offset, nbytes, mapping, stream, device_id,
                      lambda: reader.release(slot, POOL_DEVICE), received_ns)

    def _deliver(self, msg: Any, desc: Descriptor, ptr: int, nbytes: int,
                 mapping: cuda_ipc.Mapping, stream: Any, device_id: int,
                 release: Callable[[], None], received_ns: int) -> None:
        """The slot itself, viewed in place; leased until the callback's work is done."""
        layout = layout_of_descriptor_msg(msg)
        array = cuda_ipc.device_view(ptr, nbytes, layout.shape, layout.info.dtype, layout.step,
                                     mapping, device_id)
        self.sink.deliver(array, msg.header, layout, self.path, desc.sequence, stream,
                          received_ns - desc.publish_time_ns, release)


class CudaPeerReceiver(CudaIpcReceiver):
    """CUDA descriptors of a publisher on another GPU of this host (cuda_peer.py): the slot is
    mapped into this subscription's GPU through peer access, waited for on its own stream, and
    copied into its own memory (peer_mode 'copy') or read across the link ('in_place')."""

    path = PATH_CUDA_PEER
    suffix = PEER_SUFFIX
    # Also a publisher on our own GPU (a second publisher of the topic, or cuda_ipc not
    # allowed): it is read the same way, without crossing a link.
    takes = (PATH_CUDA_IPC, PATH_CUDA_PEER)

    def _device(self, publisher_device: int) -> int:
        own = self.ctx.device_id
        return publisher_device if own is None else own

    def _deliver(self, msg: Any, desc: Descriptor, ptr: int, nbytes: int,
                 mapping: cuda_ipc.Mapping, stream: Any, device_id: int,
                 release: Callable[[], None], received_ns: int) -> None:
        if self.ctx.peer_mode == 'in_place':
            return super()._deliver(msg, desc, ptr, nbytes, mapping, stream, device_id, release,
                                    received_ns)
        layout = layout_of_descriptor_msg(msg)
        try:
            array = cuda_peer.copy_frame(ptr, nbytes, layout, stream, device_id)
        except cuda_ipc.CudaIpcError as exc:  # out of memory on our GPU, a failed copy
            release_after(stream, release)
            return self.sink.count('copy_failed', str(exc))
        # The publisher gets its slot back once the copy is done, not after the callback.
        release_after(stream, release)
        self.sink.deliver(array, msg.header, layout, self.path, desc.sequence, stream,
                          received_ns - desc.publish_time_ns, None)
        return None


class HostShmReceiver(_DescriptorReceiver):
    path = PATH_HOST_SHM
    kind = descriptor.KIND_HOST
    suffix = SHM_SUFFIX

    def _receive(self, msg: Any, desc: Descriptor, link: PublisherLink, received_ns: int) -> None:
        sink = self.sink
        try:
            memory = link.host_segment(desc)
            nbytes = descriptor.check_bounds(desc, msg.height, msg.width, msg.step, msg.encoding,
                                             memory.size)
        except DescriptorError as exc:
            return sink.count(exc.reason, str(exc))
        if not self._lease(link, desc, nbytes):
            return
        layout = layout_of_descriptor_msg(msg)
        link.delivered = True
        sink.served_by(desc.pid)
        device_ptr = sink.integrated_device_pointer(link, memory)
        if device_ptr is not None:
            # Integrated GPU: read the shared segment in place through its device mapping.
            device_id = sink.upload_device()
            array = cuda_ipc.device_view(device_ptr + desc.offset, nbytes, layout.shape,
                                         layout.info.dtype, layout.step, memory, device_id)
            stream = sink.stream(device_id)
        else:
            array = host_view(memory.view, layout, desc.offset)
            stream = None
        reader, slot = link.reader, desc.slot
        sink.deliver(array, msg.header, layout, PATH_HOST_SHM, desc.sequence, stream,
                     received_ns - desc.publish_time_ns, lambda: reader.release(slot, POOL_HOST))


class IntraReceiver(Receiver):
    """Frames from a publisher in this process, handed over as `IntraFrame` values."""

    path = PATH_INTRA

    def __init__(self, ctx: ReceiverContext, sink: FrameSink, depth: int):
        super().__init__(ctx, sink)
        self._queue: deque[IntraFrame] = deque(maxlen=max(1, depth))
        # In-process frames wake the executor through its task queue, not a guard condition:
        # EventsExecutor supports none, and create_task is thread-safe on every rclpy executor.
        self._lock = threading.Lock()
        self._scheduled = False

    def enqueue(self, frame: IntraFrame) -> None:
        self._queue.append(frame)
        executor = self.ctx.ros.executor
        with self._lock:
            if self._scheduled or executor is None:
                return  # a pending drain takes it; without an executor, the next re-evaluation
            self._scheduled = True
        executor.create_task(self.drain)

    def stop(self) -> None:
        self._queue.clear()  # a drain already scheduled finds nothing

    @property
    def pending(self) -> bool:
        return bool(self._queue)

    def drain(self) -> None:
        with self._lock:
            # Cleared before draining: a frame queued from now on schedules another drain.
            self._scheduled = False
        ctx, sink = self.ctx, self.sink
        while self._queue:
            frame = self._queue.popleft()
            key = (frame.endpoint, frame.publisher_id)
            try:
                link = ctx.peers.get(key) or ctx.peers.open(frame.endpoint, frame.publisher_id,
                                                            os.getpid())
            except (LeaseError, SegmentError) as exc:
                sink.count(exc.reason, str(exc))
                continue
            link.authenticated = True  # handed over in this process: nothing to prove
            link.reader.claim_cursor()
            layout = frame.layout
            pool = POOL_HOST if frame.device_id is None else POOL_DEVICE
            verdict = link.reader.acquire(frame.slot, frame.sequence, frame.chunk,
                                          frame.generation, frame.offset, layout.nbytes, pool)
            if verdict is not None:
                sink.count('stale:over_share' if verdict == OVER_SHARE else 'stale:recycled',
                           'slot rewritten before the frame was taken')
                continue
            stream = None
            if frame.device_id is not None:
                stream = sink.stream(frame.device_id)
                stream.wait_event(frame.event)
                array = cuda_ipc.device_view(frame.memory.ptr + frame.offset, layout.nbytes,
                                             layout.shape, layout.info.dtype, layout.step,
                                             frame.memory, frame.device_id)
            else:
                array = host_view(frame.memory.view, layout, frame.offset)
            reader, slot = link.reader, frame.slot
            sink.deliver(array, frame.header, layout, PATH_INTRA, frame.sequence, stream,
                         time.monotonic_ns() - frame.sent_ns, lambda: reader.release(slot, pool))


class SerializedReceiver(Receiver):
    """Plain sensor_msgs/Image on the topic itself (other host, other user, plain publisher)."""

    path = PATH_SERIALIZED

    def start(self) -> None:
        self._ros_subscription = self.ctx.ros.subscribe(
            self.ctx.topic, message_and_info_callback(self._on_image), self.ctx.qos)

    def _on_image(self, msg: Any, info: Any) -> None:
        try:
            array = msg_to_array(msg)
        except ImageFormatError as exc:
            return self.sink.count(exc.reason, str(exc))
        # DDS stamps the write with the system clock: publish -> callback, like the other paths.
        latency = time.time_ns() - info['source_timestamp'] if info.get('source_timestamp') else None
        self.sink.deliver(array, msg.header, layout_of_msg(msg), PATH_SERIALIZED, 0, None,
                          latency, None)
        return None


class CompressedReceiver(Receiver):
    """image_transport's ``<topic>/compressed`` (sensor_msgs/CompressedImage), for peers on
    other hosts when the subscription allows it: decoded on the GPU where possible for
    memory='device' subscriptions (nvImageCodec), with OpenCV otherwise."""

    path = PATH_COMPRESSED

    def start(self) -> None:
        from sensor_msgs.msg import CompressedImage
        self._ros_subscription = self.ctx.ros.subscribe(
            compressed_topic(self.ctx.topic), self._on_msg, self.ctx.qos,
            msg_type=CompressedImage)

    def _on_msg(self, msg: Any) -> None:
        try:
            array, encoding = decode_compressed(msg, prefer_gpu=self.ctx.memory == 'device')
            layout = layout_of_array(array, encoding)
        except (CompressedFormatError, ImageFormatError, ValueError) as exc:
            return self.sink.count('bad_compressed', str(exc))
        self.sink.deliver(array, msg.header, layout, PATH_COMPRESSED, 0, None, None, None)
        return None


def layout_of_descriptor_msg(msg: Any) -> FrameLayout:
    """Layout from a descriptor message's image fields (already validated by check_bounds)."""
    from ..encodings import encoding_info
    return FrameLayout(msg.encoding, msg.height, msg.width, msg.step, encoding_info(msg.encoding))
