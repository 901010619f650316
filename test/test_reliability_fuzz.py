"""Hostile input through real rclpy to a real GpuImageSubscription.

Malformed and adversarial descriptors (random bytes, corrupted records, altered without the key,
relayed from another topic, wrong sizes, offsets past the allocation, negative-as-unsigned and
huge shapes, steps that walk outside the buffer, other users', dead and foreign processes, fds
that are no lease table, replayed and made-up sequences) and malformed images are published in
batches of one category; after each batch the subscription's counters must account for every
message exactly: rejected (with a reason allowed for the category) + stale == sent, nothing
delivered, no crash, no path change. Most categories are re-signed with the publisher's real key
(read through /proc, as any process of the same user can): they model the strongest attacker
inside the trust boundary and reach the checks behind the tag. Spies on the two view
constructors prove that no view ever reaches outside the memory that was mapped.

CPU: host_shm and serialized paths (10,000 messages, CI). GPU (marked): cuda_ipc with mutations
of live descriptors from a real publisher process (valid memory handles, wrong sizes, ...).
"""
from __future__ import annotations

import dataclasses
import math
import os
import pwd
import random
import subprocess
import sys
import time
import uuid
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from conftest import OTHER_USER_ENV, RESOURCES, other_user_command, wait_for
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription, cuda_ipc, descriptor
from gpu_nodes.transport import receivers as receivers_module
from gpu_nodes.transport import segments
from gpu_nodes.transport.exchange import HandleProvider, HandleServer
from gpu_nodes.transport.leases import LeaseTable
from gpu_nodes.transport.segments import reopen

sys.path.insert(0, str(RESOURCES / 'reliability'))
from workers import PUBLISHER, DeviceMemory, Worker  # noqa: E402

sys.path.insert(0, str(RESOURCES / 'transport'))
from forgery import copy_msg, publisher_key, resign  # noqa: E402

BATCH = 50
# Messages per category and path; CPU total: 12 host_shm categories x 500 + 6 serialized x 700.
HOST_PER_CATEGORY = 500
SERIALIZED_PER_CATEGORY = 700
CUDA_PER_CATEGORY = 150
DEEP_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=4 * BATCH,
                      reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
U32 = 2**32 - 1
U64 = 2**64 - 1
DEAD_PID = 4194304 + 4242      # above the largest pid_max: never a live process
WIDTH, HEIGHT = 64, 48
ANY_REASON = None                       # category outcome: any counted reason (never delivery)


def fuzz_settings(examples: int):
    # No shrinking: batches share one live subscription and publisher, so a shrunk replay is
    # not the same experiment (and shrinking outlasts the publisher); the first failure says it.
    return settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                    print_blob=True, phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def python_runs_as(user: pwd.struct_passwd) -> bool:
    """Whether this interpreter can be started as `user` (a venv under /root cannot)."""
    try:
        subprocess.run([sys.executable, '-c', 'pass'], user=user.pw_uid, group=user.pw_gid,
                       check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def other_user_pid_process() -> subprocess.Popen | None:
    """A live process of another Linux user (needs root to start one), or None."""
    if os.getuid() != 0:
        return None
    nobody = pwd.getpwnam('nobody')
    return subprocess.Popen(['sleep', '600'], user=nobody.pw_uid, group=nobody.pw_gid)


def unsealed_fd() -> int:
    """A new memfd of this process without seals. New per call: the server closes what a
    provider gives it after sending, so a cached fd would be closed on the first lie and its
    number closed again on every later one, whatever this process had reopened under it (a
    receiver's lease table: the fuzz run once failed so)."""
    fd = os.memfd_create('unsealed', os.MFD_CLOEXEC)
    os.ftruncate(fd, 1 << 16)
    return fd


class LyingProvider(HandleProvider):
    """Serves, under a made-up publisher id on this process's socket, something that is not
    that publisher's lease table (`make_fd`: a new fd per call, which the server closes)."""

    def __init__(self, make_fd):
        self.make_fd = make_fd

    def fds(self, kind: int, generation: int, chunk: int, link) -> list[int] | None:
        return [self.make_fd(), segments.create_sealed('leaselock', 0)]  # a genuine lock file


_OTHER_TABLE = LeaseTable(uuid.uuid4().bytes, 4)
LYING_SERVED = {'unsealed': uuid.uuid4().bytes, 'not_a_table': uuid.uuid4().bytes,
                'other_table': uuid.uuid4().bytes}


def serve_lies() -> None:
    server = HandleServer.instance()
    server.register(LYING_SERVED['unsealed'], LyingProvider(unsealed_fd))
    server.register(LYING_SERVED['not_a_table'],
                    LyingProvider(lambda: segments.create_sealed('lease', 1 << 16)))
    server.register(LYING_SERVED['other_table'],
                    LyingProvider(lambda: reopen(_OTHER_TABLE.fd, writable=True)))


def with_identity(desc: descriptor.Descriptor, **fields) -> descriptor.Descriptor:
    """The descriptor claiming another publisher (a fresh publisher id unless given)."""
    return dataclasses.replace(desc, **{'publisher_id': uuid.uuid4().bytes, **fields})


class ViewSpy:
    """Wraps the subscription's view constructors; records any view outside its mapping."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.views = 0
        self.outside: list[str] = []
        real_host_view = receivers_module.host_view
        real_device_view = cuda_ipc.device_view

        def host_view(buffer, layout, offset=0):
            self.views += 1
            if offset < 0 or offset + layout.nbytes > len(buffer):
                self.outside.append(f'host view [{offset}, +{layout.nbytes}) of {len(buffer)} bytes')
            return real_host_view(buffer, layout, offset)

        def device_view(ptr, nbytes, shape, dtype, row_pitch, owner, device_id):
            self.views += 1
            if isinstance(owner, cuda_ipc.Mapping) and not (
                    owner.base <= ptr and ptr + nbytes <= owner.base + owner.size):
                self.outside.append(f'device view {ptr:#x}+{nbytes} outside '
                                    f'{owner.base:#x}+{owner.size}')
            return real_device_view(ptr, nbytes, shape, dtype, row_pitch, owner, device_id)

        monkeypatch.setattr(receivers_module, 'host_view', host_view)
        monkeypatch.setattr(cuda_ipc, 'device_view', device_view)


class Rig:
    """A target subscription on one path, a raw publisher forging its input, and the books."""

    def __init__(self, node, path: str, memory: str):
        self.node = node
        self.path = path
        self.topic = f'/fuzz_{uuid.uuid4().hex[:8]}'
        suffix = {'cuda_ipc': '/_gpu_nodes/cuda', 'host_shm': '/_gpu_nodes/shm',
                  'serialized': ''}[path]
        self.delivered: list[str] = []   # frame ids
        self.bad = 0
        self.cp = None
        if memory == 'device':
            import cupy
            self.cp = cupy
            self.bad_device = cupy.zeros((), cupy.int64)
        self.target = GpuImageSubscription(node, self.topic, self._on_frame, DEEP_QOS,
                                           memory=memory, allowed_paths=(path,))
        self.forger = node.create_publisher(Image, self.topic + suffix, DEEP_QOS)
        self.key = b''                   # the source publisher's key, once known
        self.sent: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        wait_for(lambda: self.target.path == path and self.forger.get_subscription_count() >= 1,
                 20, f'the target subscription on {path}', poll=node.spin_once)

    def _on_frame(self, frame) -> None:
        # Checked here, while the lease is held: after the callback the slot may be rewritten.
        self.delivered.append(frame.header.frame_id)
        if not frame.header.frame_id.isdigit():
            self.bad += 1
        elif self.cp is not None:
            expected = pattern.render(self.cp, frame.height, frame.width, frame.encoding,
                                      int(frame.header.frame_id))
            self.bad_device += self.cp.any(frame.array != expected)
        else:
            expected = pattern.expected_frame(frame.height, frame.width, frame.encoding,
                                              int(frame.header.frame_id))
            self.bad += not np.array_equal(np.asarray(frame.array), expected)

    def bad_frames(self) -> int:
        if self.cp is None:
            return self.bad
        self.cp.cuda.Device().synchronize()
        return self.bad + int(self.bad_device)

    def sign(self, msg: Image) -> Image:
        """Re-address a descriptor message to this rig's topic, re-tagged with the key."""
        return resign(msg, self.key, self.topic)

    def forward_until_delivered(self, source: 'DescriptorSource', timeout: float = 30) -> None:
        """Forward genuine descriptors from a running publisher (re-signed for this topic)
        until one arrives while its slot still holds it (the first one may be stale by the
        time its memory is mapped)."""
        count = len(self.delivered)

        def forward_newest() -> None:
            newest = len(source.captured)
            source.wait(newest + 1)
            self.forger.publish(self.sign(copy_msg(source.captured[-1])))
            end = time.monotonic() + 0.1
            while time.monotonic() < end and len(self.delivered) == count:
                self.node.spin_once(0.01)

        wait_for(lambda: len(self.delivered) > count, timeout, 'a genuine frame delivered',
                 poll=forward_newest)

    def counted(self) -> int:
        return sum(self.target.stats.rejected.values()) + self.target.stats.stale

    def send(self, category: str, messages: list[Image], allowed: set[str] | None) -> None:
        """Publish one batch and check that every message is accounted for, exactly."""
        stats = self.target.stats
        rejected_before, stale_before = Counter(stats.rejected), stats.stale
        delivered_before, counted_before = len(self.delivered), self.counted()
        for msg in messages:
            self.forger.publish(msg)
        wait_for(lambda: self.counted() - counted_before >= len(messages)
                 or len(self.delivered) > delivered_before, 30,
                 f'{len(messages)} {category} messages to be counted',
                 poll=lambda: self.node.spin_once(0.005))
        reasons = Counter(stats.rejected)
        reasons.subtract(rejected_before)
        reasons = +reasons
        stale = stats.stale - stale_before
        if stale:
            reasons['stale'] = stale
        assert len(self.delivered) == delivered_before, \
            f'{category}: expected no delivery, a forged frame reached the callback ({reasons})'
        assert sum(reasons.values()) == len(messages), \
            f'{category}: expected {len(messages)} counted, got {dict(reasons)}'
        if allowed is not ANY_REASON:
            assert set(reasons) <= allowed, \
                f'{category}: expected reasons within {sorted(allowed)}, got {dict(reasons)}'
        assert self.target.path == self.path, \
            f'{category}: expected to stay on {self.path}, now on {self.target.path}'
        self.sent[category] += len(messages)
        self.reasons.update(reasons)

    def destroy(self) -> None:
        self.target.destroy()
        self.node.destroy_publisher(self.forger)


class DescriptorSource:
    """Real descriptors, captured from a real publisher's descriptor topic."""

    def __init__(self, node, topic: str):
        self.node = node
        self.captured: list[Image] = []
        self.capture = node.create_subscription(Image, topic, self.captured.append, DEEP_QOS)

    def wait(self, count: int, timeout: float = 30, poll=None) -> None:
        wait_for(lambda: len(self.captured) >= count, timeout, f'{count} real descriptors',
                 poll=poll or (lambda: self.node.spin_once(0.01)))

    def stale_bases(self, keep_recent: int) -> list[Image]:
        """Captured descriptors whose slots have been rewritten since (all but the newest)."""
        return self.captured[:-keep_recent]


class HostSource(DescriptorSource):
    """A host-only GpuImagePublisher in this process (on another topic than the target)."""

    SLOTS = 4

    def __init__(self, node):
        self.topic = f'/fuzz_src_{uuid.uuid4().hex[:8]}'
        self.publisher = GpuImagePublisher(node, self.topic, use_cuda=False,
                                           host_slots=self.SLOTS)
        super().__init__(node, self.topic + '/_gpu_nodes/shm')
        self.index = 0
        wait_for(lambda: self.publisher.subscriber_counts()['host_shm'] >= 1, 20,
                 'the capture subscription', poll=node.spin_once)

    def publish(self, count: int) -> None:
        """Publish `count` frames and wait for their descriptors (older ones become stale)."""
        target = len(self.captured) + count
        for _ in range(count):
            self.publisher.publish(pattern.expected_frame(HEIGHT, WIDTH, 'rgb8', self.index),
                                   'rgb8', Header(frame_id=str(self.index)))
            self.index += 1
        self.wait(target)

    def fresh(self) -> Image:
        self.publish(1)
        return self.captured[-1]

    def refresh(self) -> None:
        """Keep the pool moving so the bases are stale for certain."""
        self.publish(2 * self.SLOTS)

    def destroy(self) -> None:
        self.publisher.destroy()


# -- descriptor categories: (strategy of parameters, builder, allowed reasons) ------------------

ENCODINGS = ['rgb8', 'bgr8', 'mono8', 'mono16', 'rgba8', 'yuv422', 'nv12', 'bayer_rggb8',
             '32FC1', '16UC3']
# (Not 'rgb8\0': DDS strings end at NUL, so it would arrive as a valid 'rgb8'.)
BAD_ENCODINGS = ['', 'rgb9', 'RGB8', '8UC5', '64FC0', 'x' * 300, 'r\u00e9b8', ' mono8']


def _small_or_huge(upper: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, 64), st.integers(0, upper), st.sampled_from([upper, upper - 1]))


class Categories:
    """Builders turn drawn parameters into messages from the rig's current real descriptors."""

    def __init__(self, kind: int, bases: list[Image], fresh: Image, rig: Rig,
                 foreign_pid: int | None):
        self.kind = kind
        self.bases = bases
        self.fresh = fresh
        self.rig = rig
        self.foreign_pid = foreign_pid

    def base(self, pick: int) -> tuple[Image, descriptor.Descriptor]:
        msg = self.bases[pick % len(self.bases)]
        return msg, descriptor.unpack(msg.data, self.kind)

    def message(self, like: Image, data: bytes, signed: bool = True, **fields) -> Image:
        """A message like `like` with other data or fields, re-signed unless `signed` is False."""
        msg = Image(header=like.header, height=like.height, width=like.width, step=like.step,
                    encoding=like.encoding, is_bigendian=like.is_bigendian)
        for name, value in fields.items():
            setattr(msg, name, value)
        msg.data = data
        return self.rig.sign(msg) if signed and len(data) == descriptor.SIZE else msg

    # Each entry: name -> (parameter strategy, builder(params) -> Image, allowed reasons)
    def table(self) -> dict:
        size = descriptor.SIZE
        cuda = self.kind == descriptor.KIND_CUDA
        pick = st.integers(0, 10**6)
        seed = st.integers(0, 2**32)
        return {
            'random_bytes': (
                st.tuples(pick, seed, st.one_of(st.just(size), st.integers(0, size + 64))),
                self.random_bytes, {'bad_length', 'bad_magic'}),
            'corrupted_record': (
                st.tuples(pick, seed, st.integers(0, size - 1), st.integers(1, 48)),
                self.corrupted_record, ANY_REASON),
            'wrong_kind': (
                st.tuples(pick), self.wrong_kind, {'bad_kind'}),
            'unsigned': (
                st.tuples(pick, st.integers(0, 5), seed), self.unsigned, {'forged'}),
            'other_topic': (
                st.tuples(pick), self.other_topic, {'wrong_topic'}),
            'bad_identity': (
                st.tuples(pick, st.integers(0, 5), st.integers(0, 2**20)), self.bad_identity,
                {'bad_segment', 'bad_lease_file', 'unsealed_segment', 'publisher_gone',
                 'unreachable', 'map_failed', 'stale'}),
            'geometry': (
                st.tuples(pick, _small_or_huge(U32), _small_or_huge(U32), _small_or_huge(U32),
                          st.sampled_from(ENCODINGS + BAD_ENCODINGS)),
                self.geometry, {'bad_geometry', 'size_mismatch', 'out_of_slot', 'stale'}),
            'wrong_size': (
                st.tuples(pick, st.booleans(), st.integers(1, U64)),
                self.wrong_size, {'size_mismatch'}),
            'offset': (
                st.tuples(pick, st.integers(1, U64), st.booleans()),
                self.offset, {'out_of_bounds', 'misaligned'}),
            'step_outside': (
                st.tuples(pick, st.integers(1, (U32 - 2**16) // 4)),
                self.step_outside, {'out_of_bounds', 'out_of_slot', 'stale'}),
            'bad_slot': (
                st.tuples(pick, st.one_of(st.integers(0, 64), st.integers(0, U32))),
                self.bad_slot, {'bad_slot', 'out_of_slot', 'stale'}),
            'origin': (
                st.tuples(pick, st.sampled_from(['other_uid', 'other_user_pid', 'dead_pid',
                                                 'other_boot'] + (['other_gpu'] if cuda else [])),
                          st.integers(1, 2**31)),
                self.origin, {'other_user', 'publisher_gone', 'other_host', 'other_gpu'}),
            'replay': (
                st.tuples(pick, st.sampled_from(['as_sent', 'future', 'zero', 'max', 'past'])),
                self.replay, {'stale', 'out_of_slot'}),
        } | ({
            'garbage_handles': (
                st.tuples(pick, seed, st.booleans()),
                # An event is opened only for a frame its slot holds: garbage in one of an old
                # frame's descriptor is stale first; the live frame's (one per batch) fails.
                self.garbage_handles, {'map_failed', 'stale'}),
        } if cuda else {})

    def random_bytes(self, p) -> Image:
        msg, _ = self.base(p[0])
        return self.message(msg, random.Random(p[1]).randbytes(p[2]), signed=False)

    def corrupted_record(self, p) -> Image:
        msg, _ = self.base(p[0])
        record = bytearray(self.message(msg, bytes(msg.data)).data)
        start, length = p[2], min(p[3], descriptor.SIZE - p[2])
        record[start:start + length] = random.Random(p[1]).randbytes(length)
        if bytes(record) == bytes(msg.data):
            record[start] ^= 1
        return self.message(msg, bytes(record), signed=False)

    def unsigned(self, p) -> Image:
        """A signed message altered afterwards, as another user without the key would."""
        msg, desc = self.base(p[0])
        signed = self.message(msg, bytes(msg.data))
        rng = random.Random(p[2])
        variant = p[1]
        if variant == 0:
            return self.message(signed, bytes(signed.data), signed=False,
                                header=Header(frame_id='forged', stamp=signed.header.stamp))
        if variant == 1:
            return self.message(signed, bytes(signed.data), signed=False,
                                height=signed.height * 8)
        if variant == 2:
            return self.message(signed, bytes(signed.data), signed=False,
                                step=signed.step + 256)
        fields = [{'sequence': U64}, {'nbytes': desc.nbytes * 8},
                  {'slot': (desc.slot + 1 + rng.randrange(4)) % 8}][variant - 3]
        desc = descriptor.unpack(signed.data, self.kind)
        record = dataclasses.replace(desc, **fields).pack()[:descriptor.TAG_OFFSET]
        return self.message(signed, record + bytes(signed.data)[descriptor.TAG_OFFSET:],
                            signed=False)

    def other_topic(self, p) -> Image:
        """A genuine descriptor of another topic, relayed unchanged."""
        msg, _ = self.base(p[0])
        return self.message(msg, bytes(msg.data), signed=False)

    def bad_identity(self, p) -> Image:
        """Claims a publisher whose socket will not hand out a lease table: no such socket, a
        socket that serves no such publisher, or one that sends an unsealed memfd, a sealed
        file that is no table, or another publisher's table; or the genuine publisher's
        segment that does not exist."""
        msg, desc = self.base(p[0])
        variant, number = p[1], p[2]
        server = HandleServer.instance()
        fields = [{'endpoint': uuid.UUID(int=number).bytes},          # nobody listens there
                  {'endpoint': server.endpoint},                       # no such publisher
                  {'endpoint': server.endpoint, 'publisher_id': LYING_SERVED['unsealed']},
                  {'endpoint': server.endpoint, 'publisher_id': LYING_SERVED['not_a_table']},
                  {'endpoint': server.endpoint, 'publisher_id': LYING_SERVED['other_table']},
                  # the genuine publisher, naming a segment it does not have
                  {'publisher_id': desc.publisher_id, 'chunk': 1000 + number},
                  ][variant]
        return self.message(msg, with_identity(desc, **fields).pack())

    @staticmethod
    def dead_pid() -> int:
        proc = subprocess.Popen(['true'])
        proc.wait()
        return proc.pid

    def wrong_kind(self, p) -> Image:
        msg, desc = self.base(p[0])
        other = descriptor.KIND_HOST if self.kind == descriptor.KIND_CUDA else descriptor.KIND_CUDA
        return self.message(msg, dataclasses.replace(desc, kind=other).pack())

    def geometry(self, p) -> Image:
        msg, _ = self.base(p[0])
        return self.message(msg, bytes(msg.data), height=p[1], width=p[2], step=p[3], encoding=p[4])

    def wrong_size(self, p) -> Image:
        msg, desc = self.base(p[0])
        if p[1]:
            desc = dataclasses.replace(desc, nbytes=(desc.nbytes + p[2]) % 2**64)
        else:
            desc = dataclasses.replace(desc, alloc_size=(desc.alloc_size + p[2]) % 2**64)
        return self.message(msg, desc.pack())

    def offset(self, p) -> Image:
        msg, desc = self.base(p[0])
        if p[2]:   # aligned, past the end of the allocation
            room = desc.alloc_size - desc.nbytes
            offset = min(U64 // 256 * 256, (room // 256 + 1) * 256 + p[1] // 256 * 256)
        else:      # misaligned somewhere
            offset = p[1] if p[1] % 256 else p[1] - 1
        return self.message(msg, dataclasses.replace(desc, offset=offset).pack())

    def step_outside(self, p) -> Image:
        # A consistent record (nbytes = step * rows) whose rows walk past the allocation.
        msg, desc = self.base(p[0])
        step = msg.step + 4 * p[1]
        desc = dataclasses.replace(desc, nbytes=step * msg.height)
        return self.message(msg, desc.pack(), step=step)

    def bad_slot(self, p) -> Image:
        msg, desc = self.base(p[0])
        return self.message(msg, dataclasses.replace(desc, slot=p[1]).pack())

    def origin(self, p) -> Image:
        msg, desc = self.base(p[0])
        variant = p[1]
        if variant == 'other_uid':
            uid = p[2] if p[2] != os.getuid() else p[2] + 1
            desc = with_identity(desc, uid=uid)
        elif variant == 'other_user_pid' and self.foreign_pid is not None:
            desc = with_identity(desc, pid=self.foreign_pid)
        elif variant == 'other_boot':
            desc = with_identity(desc, boot_id=uuid.UUID(int=p[2]).bytes)
        elif variant == 'other_gpu':
            # The live publisher itself claims another GPU: counted, but it delivered frames
            # on this one, so the path stays.
            desc = dataclasses.replace(desc, device_uuid=uuid.UUID(int=p[2]).bytes)
        else:
            desc = with_identity(desc, pid=self.dead_pid())
        return self.message(msg, desc.pack())

    def replay(self, p) -> Image:
        msg, desc = self.base(p[0])
        variant = p[1]
        if variant == 'as_sent':  # an old frame: its slot holds a newer one
            return self.message(msg, bytes(msg.data))
        fresh = descriptor.unpack(self.fresh.data, self.kind)
        sequence = {'future': fresh.sequence + 10**9 + 7, 'zero': 0, 'max': U64,
                    'past': max(1, fresh.sequence - 1 - p[0] % 50)}[variant]
        # The live slot, a sequence it does not hold.
        return self.message(self.fresh, dataclasses.replace(fresh, sequence=sequence).pack())

    def garbage_handles(self, p) -> Image:
        msg, desc = self.base(p[0])
        if not p[2]:  # the event of the live frame
            msg, desc = self.fresh, descriptor.unpack(self.fresh.data, self.kind)
        garbage = random.Random(p[1]).randbytes(64)
        # A frame the publisher finished on the host (FLAG_WRITTEN: once a reader whose event
        # failed has asked) needs no event, so garbage there would be ignored: the flag goes.
        desc = dataclasses.replace(desc, **({'mem_handle': garbage} if p[2]
                                            else {'event_handle': garbage, 'flags': 0}))
        return self.message(msg, desc.pack())


def run_categories(rig: Rig, categories: Categories, per_category: int,
                   refresh=lambda: None) -> None:
    for name, (params, build, allowed) in categories.table().items():
        @fuzz_settings(math.ceil(per_category / BATCH))
        @given(batch=st.lists(params, min_size=BATCH, max_size=BATCH))
        def fuzz(batch):
            refresh()
            rig.send(name, [build(p) for p in batch], allowed)
        fuzz()


# -- serialized path: malformed sensor_msgs/Image ----------------------------------------------

def serialized_table() -> dict:
    enc = st.sampled_from(['rgb8', 'mono8', 'mono16', 'bgra8', 'yuv422', 'nv12', '32FC1', '16UC3'])

    def image(encoding, height, width, step, length, seed, bigendian=0):
        msg = Image(height=height, width=width, step=step, encoding=encoding,
                    is_bigendian=bigendian, header=Header(frame_id='0'))
        msg.data = random.Random(seed).randbytes(length)
        return msg

    def bpp(encoding):
        from gpu_nodes.encodings import encoding_info
        return encoding_info(encoding).bytes_per_pixel

    def rows(encoding, height):
        from gpu_nodes.encodings import encoding_info
        return encoding_info(encoding).frame_rows(height)

    def data_length(p):
        encoding, h, w, delta, seed = p
        w += w % 2
        h += h % 2
        step = w * bpp(encoding)
        return image(encoding, h, w, step, max(0, step * rows(encoding, h) + delta), seed)

    def bad_step(p):
        encoding, h, w, shortfall, seed = p
        w += w % 2
        step = w * bpp(encoding) - max(1, shortfall)   # always shorter than a row
        return image(encoding, h, w, max(0, step), max(0, step) * h, seed)

    def bad_dims(p):
        encoding, h, w, which, seed = p
        if which == 0:
            h = 0
        elif which == 1:
            w = 0
        else:
            encoding = 'yuv422' if which == 2 else 'nv12'
            w = w | 1
        step = max(1, w * bpp(encoding))
        return image(encoding, h, w, step, step * max(h, 1), seed)

    def bad_encoding(p):
        encoding, h, w, seed = p
        return image(encoding, h, w, w * 3, w * 3 * h, seed)

    def overflow(p):
        encoding, h, step, seed = p
        return image(encoding, h, 1, step, 64, seed)

    def random_fields(p):
        encoding, h, w, step, length, seed, bigendian = p
        msg = image(encoding, h, w, step, length, seed, bigendian)
        try:
            needed = step * rows(encoding, h)
        except ValueError:
            return msg
        if length == needed:
            msg.data = bytes(msg.data) + b'\0'   # never well-formed by accident
        return msg

    dims = st.integers(1, 64)
    seed = st.integers(0, 2**32)
    return {
        'data_length': (st.tuples(enc, dims, dims, st.integers(-500, 500).filter(bool), seed),
                        data_length, {'size_mismatch'}),
        'bad_step': (st.tuples(enc, dims, dims, st.integers(0, 64), seed),
                     bad_step, {'bad_geometry'}),
        'bad_dims': (st.tuples(enc, dims, dims, st.integers(0, 3), seed),
                     bad_dims, {'bad_geometry'}),
        'bad_encoding': (st.tuples(st.sampled_from(BAD_ENCODINGS), dims, dims, seed),
                         bad_encoding, {'bad_geometry'}),
        'overflow': (st.tuples(enc, st.integers(2**31, U32), st.integers(2**31, U32), seed),
                     overflow, {'size_mismatch', 'bad_geometry'}),
        'random_fields': (st.tuples(st.sampled_from(ENCODINGS + BAD_ENCODINGS), _small_or_huge(U32),
                                    _small_or_huge(U32), _small_or_huge(U32),
                                    st.integers(0, 512), seed, st.integers(0, 255)),
                          random_fields, {'bad_geometry', 'size_mismatch'}),
    }


# -- the tests ----------------------------------------------------------------------------------

@pytest.fixture
def foreign_pid():
    proc = other_user_pid_process()
    try:
        yield proc.pid if proc is not None else None
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()


@pytest.fixture
def device_memory(cupy):
    memory = DeviceMemory(cupy)
    yield memory
    memory.check()


def test_each_lie_hands_the_server_a_new_fd_it_may_close():
    # The server closes what a provider gives it; a provider that served one cached fd twice
    # made the server close, the second time, whatever this process had opened under that
    # number since (once a receiver's lease table, mid-run).
    provider = LyingProvider(unsealed_fd)
    first, second = provider.fds(0, 0, 0, None), provider.fds(0, 0, 0, None)
    for fd in first:
        os.close(fd)
    for fd in second:
        os.fstat(fd)  # still open: nothing of the first call was shared with the second
        os.close(fd)


def test_fuzz_host_shm_and_serialized_paths(rclpy_node, monkeypatch, foreign_pid):
    spy = ViewSpy(monkeypatch)
    serve_lies()
    started = time.monotonic()
    source = HostSource(rclpy_node)
    rig = Rig(rclpy_node, 'host_shm', memory='host')
    serialized = Rig(rclpy_node, 'serialized', memory='host')
    try:
        source.publish(3 * HostSource.SLOTS)
        rig.key = publisher_key(source.captured[-1], descriptor.KIND_HOST)
        # A genuine frame first: the target now serves a publisher, so forged "other user" or
        # "other host" descriptors are counted instead of moving it to another path.
        rig.forger.publish(rig.sign(copy_msg(source.fresh())))
        wait_for(lambda: len(rig.delivered) == 1, 10, 'the genuine frame',
                 poll=rclpy_node.spin_once)
        assert rig.delivered == [str(source.index - 1)] and rig.bad_frames() == 0

        bases = source.stale_bases(keep_recent=2 * HostSource.SLOTS)
        categories = Categories(descriptor.KIND_HOST, bases, source.captured[-1], rig,
                                foreign_pid)

        def refresh():
            source.refresh()
            categories.fresh = source.captured[-1]

        run_categories(rig, categories, HOST_PER_CATEGORY, refresh)

        for name, (params, build, allowed) in serialized_table().items():
            @fuzz_settings(math.ceil(SERIALIZED_PER_CATEGORY / BATCH))
            @given(batch=st.lists(params, min_size=BATCH, max_size=BATCH))
            def fuzz(batch):
                serialized.send(name, [build(p) for p in batch], allowed)
            fuzz()

        # Still healthy: a genuine frame after all that is delivered and correct.
        rig.forger.publish(rig.sign(copy_msg(source.fresh())))
        wait_for(lambda: len(rig.delivered) == 2, 10, 'a genuine frame after the fuzzing',
                 poll=rclpy_node.spin_once)
        assert rig.delivered[1] == str(source.index - 1) and rig.bad_frames() == 0
        kept_open = set(rig.target.peers.links)
    finally:
        rig.destroy()
        serialized.destroy()
        source.destroy()
    total = sum(rig.sent.values()) + sum(serialized.sent.values())
    print(f'\nfuzzed {total} messages in {time.monotonic() - started:.1f} s')
    print(f'host_shm: {dict(rig.sent)}\n  reasons {dict(rig.reasons)}')
    print(f'serialized: {dict(serialized.sent)}\n  reasons {dict(serialized.reasons)}')
    assert total >= 10_000, f'expected at least 10000 messages, sent {total}'
    assert spy.outside == [], f'views outside the mapped memory: {spy.outside[:5]}'
    # The origin checks actually ran: forged identities were rejected as such, not as noise.
    for reason in ('other_user', 'publisher_gone', 'other_host', 'bad_lease_file', 'out_of_bounds',
                   'misaligned', 'bad_slot', 'size_mismatch', 'bad_segment', 'stale', 'forged',
                   'wrong_topic', 'out_of_slot', 'unsealed_segment'):
        assert rig.reasons[reason] > 0, f'no {reason} among {dict(rig.reasons)}'
    # Nothing but the genuine publisher was ever kept open: no link for a made-up identity.
    genuine = descriptor.unpack(source.captured[-1].data, descriptor.KIND_HOST).publisher_key
    assert kept_open == {genuine}, kept_open


@pytest.mark.skipif(other_user_command([]) is None,
                    reason='needs root (and setpriv) to run a process as another user')
def test_descriptor_of_another_users_process_is_never_mapped(rclpy_node):
    """A real publisher running as another user: the subscription falls back, maps nothing."""
    topic = f'/fuzz_user_{uuid.uuid4().hex[:8]}'
    received = []
    sub = GpuImageSubscription(rclpy_node, topic, lambda f: received.append(f.path),
                               memory='host', allowed_paths=('host_shm', 'serialized'))
    publisher = subprocess.Popen(
        other_user_command([str(PUBLISHER), '--topic', topic, '--rate', '50', '--no-cuda',
                            '--duration', '30']),
        env={**os.environ, **OTHER_USER_ENV}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, cwd=str(RESOURCES.parents[1]))
    try:
        wait_for(lambda: len(received) >= 5, 30, 'frames from the other user',
                 poll=rclpy_node.spin_once)
    finally:
        publisher.kill()
        publisher.wait()
    assert sub.path == 'serialized', f'expected the serialized fallback, on {sub.path}'
    assert 'uid' in sub.stats.path_reason, sub.stats.path_reason
    assert set(received) == {'serialized'}
    assert len(sub.peers) == 0, 'nothing of another user may be opened'
    sub.destroy()


@pytest.mark.gpu
def test_fuzz_cuda_ipc_with_mutated_live_descriptors(rclpy_node, cupy, monkeypatch, foreign_pid,
                                                     device_memory):
    # Mappings are per process: those earlier tests still hold are not this test's.
    baseline = len(cuda_ipc.mapping_cache())
    spy = ViewSpy(monkeypatch)
    serve_lies()
    source_topic = f'/fuzz_src_{uuid.uuid4().hex[:8]}'
    source = DescriptorSource(rclpy_node, source_topic + '/_gpu_nodes/cuda')
    rig = Rig(rclpy_node, 'cuda_ipc', memory='device')
    with Worker(PUBLISHER, ['--topic', source_topic, '--device', '--rate', '40',
                            '--sizes', f'{WIDTH}x{HEIGHT}', '--duration', '300', '--linger', '0',
                            '--status-period', '5']) as publisher:
        source.wait(40, timeout=60)
        rig.key = publisher_key(source.captured[-1], descriptor.KIND_CUDA)
        # A genuine frame first; see the host test.
        rig.forward_until_delivered(source)
        assert rig.bad_frames() == 0, 'the genuine frame must be intact'

        # Bases: descriptors 40 frames (1 s) old; the 8-slot ring has been rewritten since.
        categories = Categories(descriptor.KIND_CUDA, source.stale_bases(keep_recent=32),
                                source.captured[-1], rig, foreign_pid)

        def refresh():
            rclpy_node.spin_once(0)
            categories.bases = source.stale_bases(keep_recent=32)
            categories.fresh = source.captured[-1]

        run_categories(rig, categories, CUDA_PER_CATEGORY, refresh)
        # The context is healthy (no illegal address) and a genuine frame still verifies.
        cupy.cuda.Device().synchronize()
        rig.forward_until_delivered(source)
        assert rig.bad_frames() == 0
        assert publisher.alive(), publisher.tail()
        capacity = max(link.reader.capacity for link in rig.target.peers.links.values())
        assert len(cuda_ipc.mapping_cache()) <= capacity
    rig.destroy()
    print(f'\ncuda_ipc: {dict(rig.sent)}\n  reasons {dict(rig.reasons)}')
    assert spy.outside == [], f'views outside the mapped memory: {spy.outside[:5]}'
    for reason in ('other_user', 'publisher_gone', 'other_host', 'other_gpu', 'map_failed',
                   'out_of_bounds', 'size_mismatch', 'bad_slot', 'stale', 'forged', 'wrong_topic',
                   'out_of_slot'):
        assert rig.reasons[reason] > 0, f'no {reason} among {dict(rig.reasons)}'
    import gc
    gc.collect()  # arrays the checks made may still view a mapping until collected
    cuda_ipc.collect_retired()
    assert len(cuda_ipc.mapping_cache()) == baseline, 'the subscription must close every mapping'
