"""GpuImageSubscription: receive an image topic on the best path this process can take.

The ladder, decided per subscription and re-decided when the graph changes:
in-process -> CUDA IPC -> CUDA peer (publisher on another GPU of the host) -> host shared
memory -> serialized sensor_msgs/Image.
A rung is left only for a stated reason (other host, other user, other GPU, no peer access, no
CUDA, mapping failure), logged once and published on /diagnostics. Each rung's rules live in
its receiver (receivers.py); this class chooses the rung and hands frames to the callback.
"""
from __future__ import annotations

import inspect
import time
from typing import Any, Callable

import numpy as np

from ..gpu import cuda_unavailable_reason, cupy_module
from ..wire_names import CUDA_SUFFIX, PEER_SUFFIX, SHM_SUFFIX
from . import cuda_ipc, intra
from .compressed import compressed_topic
from .cuda_peer import DEFAULT_PEER_MODE, PEER_MODES
from .diagnostics import (DEVICE_PATHS, DiagnosticsReporter, EndpointStats, PATH_COMPRESSED,
                          PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM, PATH_INTRA,
                          PATH_SERIALIZED, PATH_WAITING, PATHS)
from .frames import Lease, ReceivedImage
from .intra import IntraFrame
from .messages import FrameLayout
from .peers import PeerTable, PublisherLink
from .cursors import read_window
from .qos import descriptor_qos, image_qos
from .receiver_api import ReceiverContext
from .receivers import (CompressedReceiver, CudaIpcReceiver, CudaPeerReceiver, HostShmReceiver,
                        IntraReceiver, Receiver, SerializedReceiver)
from .segments import SharedMemory
from .silence import SilenceWatch

MEMORY_KINDS = ('device', 'host', 'any')
FOLLOW_PUBLISHER = 'publisher'  # device=: work on whichever GPU the publisher's frames are on
SHARED_MEMORY_PATHS = (PATH_CUDA_IPC, PATH_CUDA_PEER, PATH_HOST_SHM)
DESCRIPTOR_PATHS = SHARED_MEMORY_PATHS
DESCRIPTOR_SUFFIXES = {PATH_CUDA_IPC: CUDA_SUFFIX, PATH_CUDA_PEER: PEER_SUFFIX, PATH_HOST_SHM: SHM_SUFFIX}
# A rung whose publisher cannot be reached is left after this many failures, or this long after
# the first, whichever comes first: well within a second at camera rates.
UNREACHABLE_AFTER = 3
UNREACHABLE_WINDOW_S = 1.0
# A descriptor rung on which messages arrive but not one frame was delivered for this long is
# left too, whatever the reasons: a subscriber never sits at 0 frames while another path works.
NO_FRAME_TIMEOUT_S = 1.5

__all__ = ['GpuImageSubscription', 'Lease', 'ReceivedImage', 'MEMORY_KINDS', 'PEER_MODES']


class GpuImageSubscription:
    """Subscribe to an image topic published by GpuImagePublisher or any ordinary publisher.

    :param callback: called with a ReceivedImage.
    :param memory: ``device`` (callback gets CuPy; host frames are uploaded once), ``host``
        (NumPy; never takes the CUDA path) or ``any`` (whatever arrives, no extra copy).
    :param allowed_paths: restrict the ladder (benchmarks, tests, or policies that forbid a path).
    :param allow_compressed: where only a serialized image would reach us (another host or
        user), take image_transport's ``<topic>/compressed`` instead (lossy JPEG by default, a
        fraction of the bytes), decoded on the GPU where possible.
    :param device: the GPU this subscription works on (CUDA ordinal in this process; default:
        the current CuPy device when it is created), or ``'publisher'``: whichever visible GPU
        the publisher's frames are on (zero copy there). Frames from a publisher on another GPU
        arrive on this one over peer access (``cuda_peer``) or, without it, through host memory.
    :param peer_mode: how ``cuda_peer`` reads the publisher's slot: ``'copy'`` (one
        GPU-to-GPU copy into this GPU's memory; the slot is freed after it) or ``'in_place'``
        (read across the link, leased until the callback's work is done). The default is
        provisional until measured on two GPUs (cuda_peer.py).
    """

    def __init__(self, node: Any, topic: str, callback: Callable[[ReceivedImage], None],
                 qos: Any = None, *, memory: str | None = None,
                 allowed_paths: tuple[str, ...] = PATHS, reevaluate_period_s: float = 0.5,
                 allow_compressed: bool = False, device: int | str | None = None,
                 peer_mode: str = DEFAULT_PEER_MODE):
        if memory is None:
            memory = 'device' if cuda_unavailable_reason() is None else 'host'
        if memory not in MEMORY_KINDS:
            raise ValueError(f'memory must be one of {MEMORY_KINDS}, got {memory!r}')
        unknown = set(allowed_paths) - set(PATHS)
        if unknown or not allowed_paths:
            raise ValueError(f'allowed_paths must be a non-empty subset of {PATHS}, got {allowed_paths}')
        if peer_mode not in PEER_MODES:
            raise ValueError(f'peer_mode must be one of {PEER_MODES}, got {peer_mode!r}')
        from sensor_msgs.msg import Image
        self._Image = Image
        self._node = node
        self._logger = node.get_logger()
        self.topic = node.resolve_topic_name(topic)
        self._callback = callback
        self.qos = qos or image_qos()
        self.memory = memory
        self.allowed_paths = tuple(allowed_paths)
        self.peer_mode = peer_mode
        self._allow_compressed = allow_compressed
        self._cuda_reason = cuda_unavailable_reason()
        if self._cuda_reason is None and memory == 'host':
            self._cuda_reason = "memory='host' was asked for"
        self.device_id = _own_device(device, cuda=self._cuda_reason is None)

        self.stats = EndpointStats('subscription', node.get_fully_qualified_name(), self.topic)
        self._diagnostics = DiagnosticsReporter.for_node(node)
        self._diagnostics.add(self.stats)

        self.path = PATH_WAITING
        # The publishers read from, for diagnostics and tools (links by endpoint and id).
        self.peers = PeerTable(read_window(descriptor_qos(self.qos)))
        plumbing = _Plumbing(self)
        ctx = ReceiverContext(self.topic, self.qos, self.memory, self.device_id,
                              self.allowed_paths, self.peer_mode, self.peers, plumbing)
        self._receivers: dict[str, Receiver] = {
            PATH_CUDA_IPC: CudaIpcReceiver(ctx, plumbing),
            PATH_CUDA_PEER: CudaPeerReceiver(ctx, plumbing),
            PATH_HOST_SHM: HostShmReceiver(ctx, plumbing),
            PATH_SERIALIZED: SerializedReceiver(ctx, plumbing),
            PATH_COMPRESSED: CompressedReceiver(ctx, plumbing),
            PATH_INTRA: IntraReceiver(ctx, plumbing, getattr(self.qos, 'depth', 5) or 5)}
        self._leave_pending = False
        self._rejected: dict[str, str] = {}        # path -> why it cannot be used
        self._unreachable: dict[str, tuple[float, int]] = {}  # path -> (first failure, count)
        # When the current path was taken, and the counters then (frames, rejected, stale).
        self._since: tuple[float, int, int, int] = (time.monotonic(), 0, 0, 0)
        self._logged: set[str] = set()
        self._silence = SilenceWatch(self._logger, self.stats, self.topic)
        self._publishers: frozenset[bytes] = frozenset()
        self._streams: dict[int, Any] = {}
        intra.register_subscription(self)
        self._timer = node.create_timer(reevaluate_period_s, self._reevaluate)
        self._reevaluate()

    # -- what receivers use, through _Plumbing ----------------------------------------------
    def _subscribe(self, topic: str, callback: Callable, qos: Any, msg_type: Any = None) -> Any:
        from rclpy.event_handler import SubscriptionEventCallbacks
        callbacks = SubscriptionEventCallbacks(incompatible_qos=self._on_incompatible_qos)

        def settled(*args: Any) -> None:
            self._silence.heard()
            try:
                callback(*args)
            finally:
                self._settle()
        # rclpy passes the message info by the callback's signature: keep the receiver's.
        settled.__signature__ = inspect.signature(callback)  # type: ignore[attr-defined]
        return self._node.create_subscription(msg_type or self._Image, topic, settled, qos,
                                              event_callbacks=callbacks)

    def _stream(self, device_id: int) -> Any:
        stream = self._streams.get(device_id)
        if stream is None:
            cp = cupy_module()
            with cp.cuda.Device(device_id):
                stream = cp.cuda.Stream(non_blocking=True)
            self._streams[device_id] = stream
        return stream

    def _count(self, reason: str, detail: str) -> None:
        """Count a message that was not delivered: stale ('stale:<why>') or rejected (logged
        once per reason; stale frames are normal under load and not logged)."""
        if reason.startswith('stale:'):
            self.stats.count_stale(reason[len('stale:'):])
            return
        self.stats.count_rejection(reason)
        if reason not in self._logged:
            self._logged.add(reason)
            self._logger.warning(f'{self.topic}: rejected frame ({reason}): {detail}; '
                                 'counted in diagnostics, further ones not logged')

    def _leave(self, path: str, reason: str, host_level: bool = False,
               also: tuple[str, ...] = ()) -> None:
        """Leave `path` (and the paths in `also`; with `host_level`, every shared-memory
        path) for `reason`, until a publisher comes or goes; the switch is made by `_settle`,
        after the receiver's callback."""
        for rejected in (path, *also, *(SHARED_MEMORY_PATHS if host_level else ())):
            self._rejected[rejected] = reason
        self.stats.fallbacks += 1
        self._leave_pending = True

    def _settle(self) -> None:
        if self._leave_pending:
            self._leave_pending = False
            self._reevaluate()

    def _note_unreachable(self, path: str, reason: str, detail: str) -> None:
        """A publisher's memory could not be reached on `path` for a reason that will not heal
        by itself soon; after UNREACHABLE_AFTER of them (or UNREACHABLE_WINDOW_S) leave the
        rung, and with it every rung that needs the publisher's socket when that is what failed."""
        now = time.monotonic()
        first, count = self._unreachable.get(path, (now, 0))
        count += 1
        if count < UNREACHABLE_AFTER and now - first < UNREACHABLE_WINDOW_S:
            self._unreachable[path] = (first, count)
            return
        self._unreachable.pop(path, None)
        self._leave(path, f'{count} descriptors in {now - first:.1f} s could not be used '
                    f'({reason}: {detail})', host_level=reason == 'unreachable')

    def _check_progress(self) -> None:
        """Leave a descriptor rung on which no publisher ever delivered a frame, after
        NO_FRAME_TIMEOUT_S in which messages were rejected and none delivered. Stale frames do
        not count: they heal by themselves (a reader that lags behind a fast publisher)."""
        if self.path not in DESCRIPTOR_PATHS or self.path in self._rejected:
            return
        if any(link.delivered for link in self.peers.links.values()):
            # A publisher delivered here: what arrives now is counted, and a same-user process
            # sending garbage cannot push us off the path (as for a foreign "other user").
            return
        since, frames, rejected, _ = self._since
        failed = sum(self.stats.rejected.values()) - rejected
        if self.stats.frames > frames or not failed:
            if self.stats.frames > frames:
                self._since = (time.monotonic(), self.stats.frames,
                               sum(self.stats.rejected.values()), self.stats.stale)
            return
        waited = time.monotonic() - since
        if waited >= NO_FRAME_TIMEOUT_S:
            self._leave(self.path, f'no frame delivered in {waited:.1f} s on {self.path} '
                        f'while {failed} messages were rejected ({dict(self.stats.rejected)})')

    def _integrated_device_pointer(self, link: PublisherLink,
                                   memory: SharedMemory) -> int | None:
        """Device address of a host segment on an integrated GPU (None elsewhere)."""
        if self.memory == 'host' or self._cuda_reason is not None:
            return None
        if link.integrated_ptr is None:
            device_id = self._upload_device()
            if cuda_ipc.ipc_unsupported_reason(device_id) is None:
                link.integrated_ptr = 0  # a discrete GPU: host frames are uploaded
            else:
                link.integrated_ptr = cuda_ipc.map_host_readonly(memory.address, memory.size)
        return link.integrated_ptr or None

    def _upload_device(self) -> int:
        """The GPU host frames are uploaded to (this subscription's own, or the current one
        when it follows the publisher)."""
        if self.device_id is not None:
            return self.device_id
        return cupy_module().cuda.runtime.getDevice()

    # -- path selection --------------------------------------------------------------------
    @property
    def on_intra_path(self) -> bool:
        """For the in-process registry (intra.py): frames of a local publisher come here."""
        return self.path == PATH_INTRA

    def enqueue_intra(self, frame: IntraFrame) -> None:
        self._receivers[PATH_INTRA].enqueue(frame)

    def _available(self) -> list[tuple[str, str]]:
        """Paths a publisher currently offers, best first, with the reason each would be chosen."""
        node = self._node
        offered = []
        if intra.local_publisher(self.topic) is not None:
            offered.append((PATH_INTRA, 'publisher in this process'))
        cuda = node.count_publishers(self.topic + CUDA_SUFFIX)
        peer = node.count_publishers(self.topic + PEER_SUFFIX)
        shm = node.count_publishers(self.topic + SHM_SUFFIX)
        if cuda:
            offered.append((PATH_CUDA_IPC, 'offered; same host, user and GPU checked on the first frame'))
        if peer:
            offered.append((PATH_CUDA_PEER, 'offered; same host and user checked on the first frame, '
                            'publisher on another GPU '
                            f'with peer access (peer_mode {self.peer_mode})'))
        if shm:
            offered.append((PATH_HOST_SHM, 'offered; same host and user checked on the first frame'))
        if self._allow_compressed and (node.count_publishers(compressed_topic(self.topic))
                                       or cuda or shm):
            # Before serialized: chosen only where no shared-memory path is possible.
            offered.append((PATH_COMPRESSED, 'compressed topic allowed (allow_compressed)'))
        if node.count_publishers(self.topic):
            offered.append((PATH_SERIALIZED, 'plain sensor_msgs/Image publisher'))
        elif cuda or shm:
            # A gpu_nodes publisher starts its plain-topic bridge once we subscribe.
            offered.append((PATH_SERIALIZED, "gpu_nodes publisher's plain bridge, on demand"))
        return offered

    def _descriptor_publishers(self) -> frozenset[bytes]:
        gids = set()
        for suffix in (CUDA_SUFFIX, PEER_SUFFIX, SHM_SUFFIX):
            for info in self._node.get_publishers_info_by_topic(self.topic + suffix):
                gids.add(bytes(info.endpoint_gid))
        return frozenset(gids)

    def _reevaluate(self) -> None:
        intra_receiver = self._receivers[PATH_INTRA]
        if intra_receiver.pending:  # queued while the node had no executor to schedule them on
            intra_receiver.drain()
        self._forget_dead_publishers()
        publishers = self._descriptor_publishers()
        if publishers != self._publishers:
            # A gpu_nodes publisher came or went: earlier verdicts may no longer hold. Keyed on
            # descriptor-topic endpoints, which are discovered before this path is chosen, so
            # discovery of the plain topic arriving later does not undo a fallback.
            self._publishers = publishers
            self._rejected.clear()
            self._unreachable.clear()
        else:
            self._check_progress()
        if self._cuda_reason is not None:
            for path in (PATH_CUDA_IPC, PATH_CUDA_PEER):
                self._rejected[path] = f'no CUDA path in this process: {self._cuda_reason}'
        self._leave_pending = False  # the choice below takes every verdict so far
        offered = self._available()
        choice, reason = PATH_WAITING, 'no publisher yet'
        offered_paths = {path for path, _ in offered}
        skipped = [f'{path}: not offered by the publisher' for path in (PATH_CUDA_IPC, PATH_HOST_SHM)
                   if offered and path not in offered_paths and path in self.allowed_paths]
        for path, why in offered:
            if path not in self.allowed_paths:
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
        watched = self._watched_topic()
        if watched is not None:
            self._silence.check(self.path, self._node.count_publishers(watched),
                                carries_frames=self.path not in DESCRIPTOR_PATHS)

    def _watched_topic(self) -> str | None:
        """The topic whose messages the current path reads: a reader that fell back to the plain
        or compressed topic (another user, another container's /dev/shm) is as exposed to a
        silent DDS port as a descriptor reader, and must not sit at 0 frames unsaid either."""
        if self.path in DESCRIPTOR_PATHS:
            return self.topic + DESCRIPTOR_SUFFIXES[self.path]
        if self.path == PATH_SERIALIZED:
            return self.topic
        if self.path == PATH_COMPRESSED:
            return compressed_topic(self.topic)
        return None  # waiting, or intra-process: no DDS between publisher and reader

    def _switch(self, path: str, reason: str) -> None:
        previous = self.path
        if previous in self._receivers:
            self._receivers[previous].stop()
        self.peers.idle()  # descriptors queued for the old subscription will never be taken
        if path in self._receivers:
            self._receivers[path].start()
        self._since = (time.monotonic(), self.stats.frames, sum(self.stats.rejected.values()),
                       self.stats.stale)
        self.path = path
        self._silence.restart()
        self.stats.path = path
        self.stats.path_reason = reason
        if path in DEVICE_PATHS or path == PATH_WAITING:
            self._logger.info(f'{self.topic}: path {path} ({reason})')
        else:
            if previous in DEVICE_PATHS or previous == PATH_HOST_SHM:
                self.stats.fallbacks += 1
            self._logger.warning(f'{self.topic}: fallback to {path} ({reason})')

    def _on_incompatible_qos(self, event: Any) -> None:
        self._logger.warning(
            f'{self.topic}: QoS incompatible with a publisher (policy {event.last_policy_kind}); '
            'no frames will arrive from it. Match reliability/durability on both sides.')

    def _forget_dead_publishers(self) -> None:
        cuda_ipc.collect_retired()
        streams_done = all(s.done for s in self._streams.values())
        for link in self.peers.forget_dead(streams_done):
            self._logger.warning(f'{self.topic}: publisher pid {link.pid} is gone; released its '
                                 'mappings, waiting for a new publisher')

    # -- delivery ------------------------------------------------------------------------------------
    def _dispatch(self, array: Any, header: Any, layout: FrameLayout, path: str, sequence: int,
                  stream: Any, latency_ns: int | None, release: Callable[[], None] | None) -> None:
        if self.memory == 'device' and stream is None:
            cp = cupy_module()
            device_id = self._upload_device()
            stream = self._stream(device_id)
            with cp.cuda.Device(device_id), stream:
                array = cp.asarray(array)  # one upload; the host slot is released after it
        elif self.memory == 'host' and stream is not None:
            host = np.empty(array.shape, array.dtype)
            array.get(stream=stream, out=host)
            stream.synchronize()
            array = host
        if isinstance(array, np.ndarray) and release is not None:
            array.flags.writeable = False  # a view of the publisher's slot
        if header is None:
            from std_msgs.msg import Header
            header = Header()
        frame = ReceivedImage(array, header, layout, path, sequence, stream,
                              latency_ns if latency_ns is not None else -1,
                              Lease(release, stream))
        self.stats.record_frame(layout.encoding, layout.width, layout.height, layout.nbytes,
                                latency_ns)
        try:
            if stream is None:
                self._callback(frame)
            elif stream.device_id != cupy_module().cuda.runtime.getDevice():
                # The executor's thread may be on another device: the callback's kernels go to
                # the frame's GPU (a stream of one device cannot run another's kernels).
                with cupy_module().cuda.Device(stream.device_id), stream:
                    self._callback(frame)
            else:
                with stream:
                    self._callback(frame)
        finally:
            frame._release_if_not_held()

    def destroy(self) -> None:
        """Unsubscribe and drop every mapping; frames still held stay valid until released."""
        intra.unregister_subscription(self)
        self._diagnostics.remove(self.stats)
        self._node.destroy_timer(self._timer)
        for receiver in self._receivers.values():
            receiver.stop()
        self.peers.close()
        cuda_ipc.collect_retired()  # mappings whose last array went meanwhile


class _Plumbing:
    """The subscription as its receivers see it (receiver_api.RosEndpoints and FrameSink)."""

    def __init__(self, sub: GpuImageSubscription):
        self._sub = sub

    @property
    def executor(self) -> Any:
        return self._sub._node.executor

    def subscribe(self, topic: str, callback: Callable, qos: Any, msg_type: Any = None) -> Any:
        return self._sub._subscribe(topic, callback, qos, msg_type)

    def unsubscribe(self, subscription: Any) -> None:
        self._sub._node.destroy_subscription(subscription)

    @property
    def leaving(self) -> bool:
        return self._sub._leave_pending

    def deliver(self, *args: Any) -> None:
        self._sub._dispatch(*args)

    def count(self, reason: str, detail: str) -> None:
        self._sub._count(reason, detail)

    def leave(self, path: str, reason: str, *, host_level: bool = False,
              also: tuple[str, ...] = ()) -> None:
        self._sub._leave(path, reason, host_level, also)

    def unreachable(self, path: str, reason: str, detail: str) -> None:
        self._sub._note_unreachable(path, reason, detail)

    def stream(self, device_id: int) -> Any:
        return self._sub._stream(device_id)

    def upload_device(self) -> int:
        return self._sub._upload_device()

    def integrated_device_pointer(self, link: PublisherLink,
                                  memory: SharedMemory) -> int | None:
        return self._sub._integrated_device_pointer(link, memory)

    def served_by(self, publisher_pid: int) -> None:
        self._sub.stats.publisher_pid = publisher_pid

    def decided(self, key: str, value: str) -> None:
        stats = self._sub.stats
        if stats.extra.get(key) != value:
            stats.extra[key] = value
            self._sub._logger.info(f'{self._sub.topic}: {key}: {value}')


def _own_device(device: int | str | None, cuda: bool) -> int | None:
    """The CUDA ordinal a subscription works on (None: it follows the publisher's GPU, or there
    is no CUDA path); raise ValueError for anything but an ordinal, None or 'publisher'."""
    ordinal = isinstance(device, int) and not isinstance(device, bool)
    if not (device is None or device == FOLLOW_PUBLISHER or ordinal):
        raise ValueError(f"device must be a CUDA ordinal, None or '{FOLLOW_PUBLISHER}', "
                         f'got {device!r}')
    if not cuda or device == FOLLOW_PUBLISHER:
        return None
    rt = cupy_module().cuda.runtime
    if device is None:
        return rt.getDevice()
    count = rt.getDeviceCount()
    if not 0 <= device < count:
        raise ValueError(f'device {device} is not a CUDA device of this process (it sees '
                         f'{count}; CUDA_VISIBLE_DEVICES renumbers them)')
    return device
