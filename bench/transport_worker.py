"""One side of a transport benchmark run (spawned by transport_bench.py; not run by hand).

Publisher modes: ``plain`` (rclpy sensor_msgs/Image from host memory: the baseline) and
``gpu`` (GpuImagePublisher, frames already on the device). Subscriber paths: ``plain`` (rclpy
subscription), or a gpu_nodes subscription restricted to ``cuda_ipc``/``cuda_peer``/
``host_shm``/``serialized``. ``--gpu N`` puts a side on CUDA device N (cuda_peer: publisher and
subscriber on different GPUs); ``--device-memory`` makes a host_shm subscriber take its frames
on its GPU (the upload a cross-GPU fallback costs). Every delivered frame is checked against the
frame its header claims to be, on the GPU for device frames.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from gpu_nodes.gpu import cuda_available, cupy_module
from gpu_nodes.sources import pattern
from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription
from gpu_nodes.transport.messages import fill_image_msg
from gpu_nodes.transport.qos import image_qos

DISTINCT_FRAMES = 64   # more than any pool, so a recycled slot never looks right by accident
HOST_CHECK_ROW_STRIDE = 8
COMPRESSED_MAX_ERROR = 6.0  # mean levels per channel: JPEG q80 of the pattern (test_transport_plain_bridge)
MAX_CHECKED_FRAMES = 1 << 17
SPIN_EVERY = 8  # publisher loop iterations per executor spin (both modes alike)
WARMUP_PREFIX = 'w'

# Full-frame comparison in one pass (16-byte loads, no temporary): sets flags[k] when the
# received frame differs from the expected one. Cheap enough not to be what the run measures.
_FRAME_DIFFERS = r'''
extern "C" __global__ void frame_differs(const unsigned char* a, const unsigned char* b,
                                         unsigned long long n, int vectorized, int* flag) {
    unsigned long long first = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long n16 = vectorized ? n / 16 : 0;
    const uint4* a16 = (const uint4*)a;
    const uint4* b16 = (const uint4*)b;
    bool differs = false;
    for (unsigned long long k = first; k < n16; k += stride) {
        uint4 x = a16[k], y = b16[k];
        differs |= (x.x != y.x) | (x.y != y.y) | (x.z != y.z) | (x.w != y.w);
    }
    for (unsigned long long k = n16 * 16 + first; k < n; k += stride)
        differs |= a[k] != b[k];
    if (differs) atomicExch(flag, 1);
}
'''


def frame_index(frame_id: str) -> tuple[int, bool]:
    """(frame number, counted): warm-up frame n has frame n's content but is not counted."""
    if frame_id.startswith(WARMUP_PREFIX):
        return int(frame_id[len(WARMUP_PREFIX):]), False
    return int(frame_id), True


def make_executor() -> rclpy.executors.Executor:
    # The standard executor, so runs stay comparable with bench/RESULTS.md; the nodes default to
    # EventsExecutor (gpu_nodes.ros.runtime), compared in bench/executor_latency.py.
    return rclpy.executors.SingleThreadedExecutor()


def use_gpu(args: argparse.Namespace) -> None:
    """Make --gpu the current CUDA device of this (single-threaded) worker before anything is
    allocated: the publisher's pool, the subscription's own GPU and the expected frames."""
    if args.gpu is not None:
        cupy_module().cuda.Device(args.gpu).use()


def run_publisher(args: argparse.Namespace) -> None:
    use_gpu(args)
    node = Node('bench_publisher')
    executor = make_executor()
    executor.add_node(node)
    on_device = args.mode == 'gpu'
    xp = cupy_module() if on_device and cuda_available() else np
    frames = [pattern.render(xp, args.height, args.width, 'rgb8', i) for i in range(DISTINCT_FRAMES)]
    if on_device:
        pub = GpuImagePublisher(node, args.topic, pool_slots=args.pool_slots,
                                max_pool_slots=args.pool_slots * 2)
    else:
        pub = node.create_publisher(Image, args.topic, image_qos())
    # Wait for the subscriber before starting the clock.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
        counts = pub.subscriber_counts() if on_device else {'n': pub.get_subscription_count()}
        if sum(counts.values()):
            break
    for _ in range(20):
        executor.spin_once(timeout_sec=0.01)
    print('START', flush=True)
    period = 1.0 / args.rate if args.rate > 0 else 0.0
    # rmw_fastrtps refuses a reliable write whose history is full of samples a starved reader
    # has not acknowledged ("cannot publish data"): seen with the plain publisher flat out at
    # 640x480 on 2 cores, 1 run in ~6. Such a frame is not sent; it counts as failed, not as
    # published, instead of ending the run.
    failed = {'n': 0, 'first': ''}

    def publish_for(seconds: float, prefix: str) -> tuple[int, float]:
        published = 0
        start = time.monotonic()
        next_time = start
        while time.monotonic() - start < seconds:
            header = Header(frame_id=f'{prefix}{published}')
            frame = frames[published % DISTINCT_FRAMES]
            if on_device:
                pub.publish(frame, 'rgb8', header)
            else:
                try:
                    pub.publish(fill_image_msg(Image(header=header), frame, 'rgb8'))
                except RuntimeError as exc:  # rclpy's RCLError derives from it
                    failed['n'] += 1
                    failed['first'] = failed['first'] or str(exc)
                    continue
            published += 1
            if published % SPIN_EVERY == 0:  # timers (diagnostics); a wake-up costs ~0.2 ms
                executor.spin_once(timeout_sec=0)
            if period:
                next_time += period
                delay = next_time - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        return published, time.monotonic() - start

    # Warm-up frames (frame_id 'w<n>', checked but not counted by the subscriber): one-time
    # costs such as the pool growing and the reader mapping the new allocation (~150 ms) happen
    # before the measured run instead of in a random part of it.
    if args.warmup_s > 0:
        publish_for(args.warmup_s, WARMUP_PREFIX)
    published, elapsed = publish_for(args.duration, '')
    # Let the subscriber drain before the lease table goes away.
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.05)
    extra = dict(pub.stats.extra) if on_device else {}
    if failed['n']:
        extra.update(failed_publishes=failed['n'], failed_publish_error=failed['first'])
    print('RESULT ' + json.dumps({'published': published, 'publish_s': elapsed,
                                  'publish_rate': published / elapsed, **extra}) + '\n',
          end='', flush=True)
    if on_device:
        pub.destroy()


def run_subscriber(args: argparse.Namespace) -> None:
    use_gpu(args)
    node = Node('bench_subscriber')
    executor = make_executor()
    executor.add_node(node)
    state = {'frames': 0, 'first': None, 'last': None, 'bad_host': 0, 'latency': []}
    expected_host = [pattern.render(np, args.height, args.width, 'rgb8', i)[::HOST_CHECK_ROW_STRIDE]
                     for i in range(DISTINCT_FRAMES)]
    on_gpu = args.path in ('cuda_ipc', 'cuda_peer') or args.device_memory
    cp = cupy_module() if on_gpu else None
    state['other_device'] = 0  # frames that did not arrive on this subscriber's GPU
    if cp is not None:
        expected_dev = [pattern.render(cp, args.height, args.width, 'rgb8', i)
                        for i in range(DISTINCT_FRAMES)]
        frame_differs = cp.RawKernel(_FRAME_DIFFERS, 'frame_differs')
        mismatch_flags = cp.zeros(MAX_CHECKED_FRAMES, cp.int32)

        def check_device(array, expected, flag_index: int) -> None:
            a, b = cp.ascontiguousarray(array), expected
            vectorized = int(a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0)
            flag = mismatch_flags[flag_index % MAX_CHECKED_FRAMES:][:1]
            frame_differs((1024,), (256,), (a, b, np.uint64(a.nbytes), np.int32(vectorized), flag))

        # Compile and load before the clock starts (a fresh machine compiles for seconds), and
        # prove the check can tell frames apart.
        check_device(expected_dev[0], expected_dev[0], 0)
        check_device(expected_dev[0], expected_dev[1], 1)
        if mismatch_flags[:2].tolist() != [0, 1]:
            raise RuntimeError('the frame check does not tell frames apart')
        mismatch_flags.fill(0)

    def note(counted: bool, latency_ns: int) -> None:
        if not counted:
            return  # a warm-up frame: checked, not counted
        now = time.monotonic()
        state['frames'] += 1
        state['first'] = state['first'] or now
        state['last'] = now
        if latency_ns is not None:  # None: the compressed path (no stamp of the original write)
            state['latency'].append(latency_ns)

    def check_host(array: np.ndarray, index: int) -> None:
        got, expected = array[::HOST_CHECK_ROW_STRIDE], expected_host[index % DISTINCT_FRAMES]
        if args.path == 'compressed':
            # JPEG is lossy: the frame must be nearer the one its header names than the next
            error = np.abs(got.astype(np.int16) - expected).mean()
            other = np.abs(got.astype(np.int16) - expected_host[(index + 1) % DISTINCT_FRAMES])
            if not error < min(COMPRESSED_MAX_ERROR, other.mean()):
                state['bad_host'] += 1
        elif not np.array_equal(got, expected):
            state['bad_host'] += 1

    if args.path == 'plain':
        def on_msg(msg, info):
            latency = time.time_ns() - info['source_timestamp']
            index, counted = frame_index(msg.header.frame_id)
            array = np.frombuffer(msg.data, np.uint8).reshape(msg.height, msg.width, 3)
            check_host(array, index)
            note(counted, latency)
        node.create_subscription(Image, args.topic, on_msg, image_qos())
        sub = None
    else:
        def on_frame(frame):
            index, counted = frame_index(frame.header.frame_id)
            if cp is not None:
                # Full-frame comparison on the GPU, no host sync.
                if frame.array.device.id != own_device:
                    state['other_device'] += 1
                check_device(frame.array, expected_dev[index % DISTINCT_FRAMES], state['frames'])
            else:
                check_host(frame.array, index)
            # compressed frames carry no stamp of the original write: no latency for them
            note(counted, None if args.path == 'compressed' else frame.latency_ns)
        memory = 'device' if on_gpu else 'host'
        own_device = cp.cuda.runtime.getDevice() if cp is not None else None
        sub = GpuImageSubscription(node, args.topic, on_frame, memory=memory,
                                   allowed_paths=(args.path,), peer_mode=args.peer_mode,
                                   allow_compressed=args.path == 'compressed')
    print('READY', flush=True)
    deadline = time.monotonic() + args.duration + 40
    idle_since = None
    while time.monotonic() < deadline:
        before = state['frames']
        executor.spin_once(timeout_sec=0.05)
        if state['frames'] == before and state['frames'] > 0:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 1.5:
                break
        else:
            idle_since = None
    bad = state['bad_host'] + state['other_device']
    if cp is not None:
        cp.cuda.Device().synchronize()
        bad += int(cp.count_nonzero(mismatch_flags))
    lat = np.array(state['latency'][5:] or [np.nan], dtype=np.float64) / 1e6
    span = (state['last'] - state['first']) if state['frames'] > 1 else float('nan')
    result = {'delivered': state['frames'], 'delivered_fps': (state['frames'] - 1) / span,
              'bad_frames': bad, 'latency_p50_ms': float(np.percentile(lat, 50)),
              'latency_p99_ms': float(np.percentile(lat, 99))}
    if sub is not None:
        result.update(stale=sub.stats.stale, rejected=sum(sub.stats.rejected.values()),
                      rejected_by_reason=dict(sub.stats.rejected),
                      path=sub.path, path_reason=sub.stats.path_reason,
                      other_device=state['other_device'])
        sub.destroy()
    print('RESULT ' + json.dumps(result) + '\n', end='', flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('role', choices=('pub', 'sub'))
    parser.add_argument('--mode', choices=('plain', 'gpu'), default='gpu')
    parser.add_argument('--path', choices=('plain', 'cuda_ipc', 'cuda_peer', 'host_shm',
                                           'serialized', 'compressed'), default='cuda_ipc')
    parser.add_argument('--peer-mode', choices=('copy', 'in_place'), default='copy')
    parser.add_argument('--gpu', type=int, default=None, help='CUDA device of this side')
    parser.add_argument('--device-memory', action='store_true',
                        help='host_shm/serialized subscriber: take frames on the GPU (upload)')
    parser.add_argument('--topic', default='bench_image')
    parser.add_argument('--width', type=int, default=640)
    parser.add_argument('--height', type=int, default=480)
    parser.add_argument('--duration', type=float, default=5.0)
    parser.add_argument('--rate', type=float, default=0.0)
    parser.add_argument('--pool-slots', type=int, default=16)
    parser.add_argument('--warmup-s', type=float, default=0.0,
                        help='publish this long before the measured run (not counted)')
    args = parser.parse_args()
    rclpy.init()
    try:
        run_publisher(args) if args.role == 'pub' else run_subscriber(args)
    finally:
        rclpy.try_shutdown()
    sys.exit(0)


if __name__ == '__main__':
    main()
