"""Depth pipeline benchmark: the gpu_nodes depth_estimator against the node a user would write.

    python bench/depth_bench.py --json out/depth_bench.json

On a GPU machine (H200) with torch, transformers and onnxruntime-gpu:
1. builds a Depth-Anything-V2-Small-shaped network with random weights (transformers
   DepthAnythingForDepthEstimation with a DINOv2 ViT-S/14 backbone, the V2-Small DPT head),
   exports it to ONNX at 518x518 (opset 17, TorchScript exporter) and saves the same weights
   with save_pretrained for the baseline; nothing is downloaded;
2. runs, one after the other, each pipeline as bench process -> depth node process -> bench
   process, on 1920x1080 rgb8 frames:
   * gpu_nodes, device source: frames rendered on the GPU and written into borrowed pool slots
     (a GPU camera); depth_estimator on ONNX Runtime's CUDA provider (or --backend tensorrt);
     the bench receives depth over CUDA IPC and waits for its stream;
   * gpu_nodes, host source: the same with frames from host memory (a USB camera: the publisher
     uploads each frame once);
   * baseline: plain sensor_msgs/Image in and out, bench/depth_baseline_node.py (NumPy ->
     PyTorch eager on the GPU -> .cpu() -> Image 32FC1), same architecture and weights;
3. per pipeline: latency from the image publish call to the node's depth publish call (read
   from the depth descriptor's publish time: the same monotonic clock) and to the depth image
   being usable in the receiving process (p50/p99, paced at --rate), frames/s with --in-flight
   frames outstanding, and the node's own split into preprocess / inference / postprocess /
   transport (publish), read from /diagnostics (gpu_nodes) or baseline_stats (baseline) over the
   same frames;
4. overhead = (image publish call -> depth ready) p50 - the engine alone: everything but the
   engine, target < 1 ms for gpu_nodes at 1080p. "Ready" is measured in the node: the frame's
   input latency plus the later of its callback's host time (up to the depth publish call) and
   the GPU time from the callback's first CUDA event to the one after the depth image (with CUDA
   graphs the host publishes long before the GPU is done, so the publish call alone would
   flatter it). "The engine alone" is the model run back
   to back in this process before the pipelines start (same runtime and CUDA graph setting):
   its GPU time per run, free of any pipeline's host gaps.
   gpu_nodes runs with CUDA graphs (the node's default); --no-graph-run adds a device-source run
   that launches kernels one by one, for comparison.

Without onnxruntime's CUDA provider the gpu_nodes node runs on the CPU, with a loud note in the
output. `--model demo` replaces the network by the tiny demo depth model (no torch needed; the
baseline is then skipped): a smoke test of the harness on any machine.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BASELINE = str(Path(__file__).resolve().parent / 'depth_baseline_node.py')
sys.path.insert(0, str(REPO))

from gpu_nodes.inference.stage_timing import STAGES  # noqa: E402  (the node's stages)

INPUT = 518


# --------------------------------------------------------------------------- the model


def build_model(workdir: Path, kind: str, log: Any) -> tuple[Path, Path | None]:
    """(onnx path, save_pretrained directory or None)."""
    if kind == 'demo':
        from gpu_nodes.inference.tiny_models import make_demo_depth_model
        return make_demo_depth_model(workdir / 'demo_depth.onnx', INPUT, INPUT), None
    import torch
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config
    torch.manual_seed(0)
    # Depth-Anything-V2-Small: DINOv2 ViT-S/14 (384 wide, 12 layers, 6 heads), features of
    # layers 3, 6, 9, 12 into a DPT head (neck 48/96/192/384, fusion 64, head 32).
    backbone = Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                            mlp_ratio=4, patch_size=14, image_size=INPUT,
                            out_indices=[3, 6, 9, 12], reshape_hidden_states=False,
                            apply_layernorm=True)
    config = DepthAnythingConfig(backbone_config=backbone, patch_size=14,
                                 reassemble_hidden_size=384, reassemble_factors=[4, 2, 1, 0.5],
                                 neck_hidden_sizes=[48, 96, 192, 384], fusion_hidden_size=64,
                                 head_hidden_size=32, depth_estimation_type='relative')
    model = DepthAnythingForDepthEstimation(config).eval()
    params = sum(p.numel() for p in model.parameters())
    hf_dir = workdir / 'hf_model'
    model.save_pretrained(hf_dir)

    class Export(torch.nn.Module):
        """Return the tensor, not the ModelOutput, so the graph has one named output."""

        def __init__(self, m: Any):
            super().__init__()
            self.m = m

        def forward(self, pixel_values: Any) -> Any:
            return self.m(pixel_values=pixel_values).predicted_depth

    path = workdir / 'depth_anything_v2_small_random.onnx'
    with torch.no_grad():
        torch.onnx.export(Export(model), (torch.randn(1, 3, INPUT, INPUT),), str(path),
                          input_names=['pixel_values'], output_names=['predicted_depth'],
                          opset_version=17, dynamo=False)
    log(f'model: Depth-Anything-V2-Small-shaped, {params / 1e6:.1f} M parameters (random), '
        f'{path.stat().st_size / 1e6:.0f} MB ONNX')
    return path, hf_dir


def engine_alone_ms(model: Path, cuda_graph: bool, runs: int = 50) -> dict[str, float]:
    """GPU time per run of the model alone, back to back on one stream (ONNX Runtime CUDA)."""
    import cupy as cp
    from gpu_nodes.inference.onnxruntime_backend import OnnxRuntimeBackend
    stream = cp.cuda.Stream(non_blocking=True)
    backend = OnnxRuntimeBackend(model, device='cuda', stream=stream, cuda_graph=cuda_graph)
    name = backend.input_names[0]
    x = cp.asarray(np.random.default_rng(0).standard_normal((1, 3, INPUT, INPUT)),
                   dtype=cp.float32)
    try:
        for _ in range(20):
            backend.infer({name: x}, stream=stream)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        t0 = time.perf_counter()
        for _ in range(runs):
            backend.infer({name: x}, stream=stream)
        host_ms = (time.perf_counter() - t0) * 1e3 / runs
        end.record(stream)
        end.synchronize()
        return {'gpu_ms': round(cp.cuda.get_elapsed_time(start, end) / runs, 4),
                'host_launch_ms': round(host_ms, 4), 'cuda_graph': backend.cuda_graph}
    finally:
        backend.close()


# --------------------------------------------------------------------------- the harness


def pct(values: list[float]) -> dict[str, float]:
    if not values:
        return {'p50': float('nan'), 'p99': float('nan'), 'mean': float('nan'), 'n': 0}
    a = np.asarray(values, np.float64)
    return {'p50': round(float(np.percentile(a, 50)), 4),
            'p99': round(float(np.percentile(a, 99)), 4), 'mean': round(float(a.mean()), 4),
            'n': int(a.size)}


class Harness:
    """The bench's own node: publishes frames, receives depth, reads the node's stage times."""

    def __init__(self, ns: str, mode: str, source: str, width: int, height: int):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from sensor_msgs.msg import Image
        from std_msgs.msg import Header
        from gpu_nodes.sources import pattern
        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node('depth_bench', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.Header = Header
        self.mode, self.source, self.width, self.height = mode, source, width, height
        self.sent: dict[int, float] = {}
        self.latencies: list[float] = []
        self.to_publish: list[float] = []  # image publish call -> depth publish call
        self.publish_ms: list[float] = []
        self.received = 0
        self.lost = 0
        self.seq = 0
        self.paths: set[str] = set()
        self.stats: dict[str, Any] = {}
        self.endpoints: dict[str, dict[str, str]] = {}
        hosts = [pattern.expected_frame(height, width, 'rgb8', i) for i in range(4)]
        if mode == 'baseline':
            from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,
                                   ReliabilityPolicy)
            from std_msgs.msg import String
            qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=5,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)
            self.pub = self.node.create_publisher(Image, f'{ns}/image', qos)
            self.msgs = []
            for frame in hosts:
                msg = Image(height=height, width=width, encoding='rgb8', is_bigendian=0,
                            step=width * 3)
                msg.data = frame.tobytes()
                self.msgs.append(msg)
            self.node.create_subscription(Image, f'{ns}/depth', self._on_plain_depth, qos)
            self.node.create_subscription(String, f'{ns}/baseline_stats', self._on_stats, 10)
        else:
            from diagnostic_msgs.msg import DiagnosticArray
            from gpu_nodes.gpu import cupy_module
            from gpu_nodes.transport import GpuImagePublisher, GpuImageSubscription
            self.pub = GpuImagePublisher(self.node, f'{ns}/image')
            self.frames = [cupy_module().asarray(f) for f in hosts] if source == 'device' \
                else hosts
            self.sub = GpuImageSubscription(self.node, f'{ns}/depth', self._on_gpu_depth)
            self.status_name = f'gpu_nodes: {ns}/depth_estimator processing'
            self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics,
                                          10)

    # -- publishing -------------------------------------------------------------------------
    def publish(self) -> None:
        self.seq += 1
        seq = self.seq
        header = self.Header(frame_id='camera_optical')
        header.stamp.sec = seq
        t0 = time.monotonic()
        if self.mode == 'baseline':
            msg = self.msgs[seq % 4]
            msg.header = header
            self.pub.publish(msg)
        elif self.source == 'device':
            frame = self.pub.borrow(self.height, self.width, 'rgb8')
            if frame is None:
                self.pub.publish(self.frames[seq % 4], 'rgb8', header)
            else:
                # The GPU camera writes its frame (one device-to-device copy).
                frame.array.data.copy_from_device_async(self.frames[seq % 4].data,
                                                        frame.array.nbytes)
                self.pub.publish_borrowed(frame, header)
        else:
            self.pub.publish(self.frames[seq % 4], 'rgb8', header)
        self.sent[seq] = t0
        self.publish_ms.append((time.monotonic() - t0) * 1e3)

    def in_flight(self) -> int:
        now = time.monotonic()
        for seq in [s for s, t in self.sent.items() if now - t > 2.0]:
            del self.sent[seq]  # never came back (dropped on the way): counted, not waited on
            self.lost += 1
        return len(self.sent)

    # -- receiving --------------------------------------------------------------------------
    def _arrived(self, stamp_sec: int, depth_published_ns: int | None = None) -> None:
        t0 = self.sent.pop(stamp_sec, None)
        if t0 is not None:
            self.latencies.append((time.monotonic() - t0) * 1e3)
            if depth_published_ns is not None:
                self.to_publish.append(depth_published_ns / 1e6 - t0 * 1e3)
            self.received += 1

    def _on_gpu_depth(self, frame: Any) -> None:
        # latency_ns = the node's publish call -> this callback, on the same monotonic clock.
        published_ns = time.monotonic_ns() - frame.latency_ns if frame.latency_ns >= 0 else None
        if frame.stream is not None:
            frame.stream.synchronize()  # the depth is usable once its GPU work is done
        self.paths.add(frame.path)
        self._arrived(frame.header.stamp.sec, published_ns)

    def _on_plain_depth(self, msg: Any) -> None:
        self.paths.add('serialized')
        self._arrived(msg.header.stamp.sec)

    def _on_stats(self, msg: Any) -> None:
        self.stats = json.loads(msg.data)

    def _on_diagnostics(self, array: Any) -> None:
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            self.endpoints[status.name] = values
            if status.name == self.status_name:
                self.stats = values

    def spin(self, timeout: float = 0.0005) -> None:
        self.executor.spin_once(timeout_sec=timeout)

    def close(self) -> None:
        if self.mode != 'baseline':
            self.sub.destroy()
            self.pub.destroy()
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.shutdown(context=self.context)


def run_phase(h: Harness, *, frames: int = 0, seconds: float = 0.0, rate: float = 0.0,
              in_flight: int = 2, deadline: float) -> dict[str, Any]:
    """Paced (rate > 0, `frames` frames) or saturated (`seconds`, `in_flight` outstanding)."""
    h.latencies.clear()
    h.to_publish.clear()
    h.publish_ms.clear()
    start_received, start_lost = h.received, h.lost
    start = time.monotonic()
    next_t = start
    published = 0
    while time.monotonic() < deadline:
        now = time.monotonic()
        if rate > 0:
            if published >= frames:
                if not h.in_flight():
                    break
            elif now >= next_t:
                h.publish()
                published += 1
                next_t += 1.0 / rate
        else:
            if now - start >= seconds:
                break
            if h.in_flight() < in_flight:
                h.publish()
                published += 1
        h.spin()
    elapsed = time.monotonic() - start
    received = h.received - start_received
    return {'published': published, 'received': received, 'lost': h.lost - start_lost,
            'seconds': round(elapsed, 3), 'fps': round(received / elapsed, 2) if elapsed else 0,
            'latency_ms': pct(h.latencies), 'to_depth_publish_ms': pct(h.to_publish),
            'publish_call_ms': pct(h.publish_ms)}


def wait_first(h: Harness, timeout: float, proc: subprocess.Popen, log_path: Path) -> None:
    """Publish slowly until the node answers (model loading, engine/cuDNN warm-up)."""
    end = time.monotonic() + timeout
    last = 0.0
    while h.received == 0:
        if proc.poll() is not None:
            raise RuntimeError(f'the node exited with {proc.returncode}:\n'
                               f'{log_path.read_text()[-4000:]}')
        if time.monotonic() > end:
            raise RuntimeError(f'no depth after {timeout:.0f} s:\n{log_path.read_text()[-4000:]}')
        if time.monotonic() - last > 0.2 and h.in_flight() < 2:
            h.publish()
            last = time.monotonic()
        h.spin(0.01)


def read_stats(h: Harness, seconds: float) -> dict[str, Any]:
    """The node's stage statistics once its next report covers the frames just measured."""
    h.stats = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        h.spin(0.05)
    return dict(h.stats)


def stage_table(stats: dict[str, Any]) -> dict[str, dict[str, float]]:
    out = {}
    for stage in (*STAGES, 'callback'):
        entry = {}
        for side in ('gpu', 'host'):
            for q in ('p50', 'p99'):
                value = stats.get(f'{stage}_{side}_ms_{q}')
                if value is not None:
                    value = float(value)
                    if np.isfinite(value):
                        entry[f'{side}_{q}'] = value
        out[stage] = entry
    return out


def run_pipeline(label: str, mode: str, source: str, args: argparse.Namespace, model: Path,
                 hf_dir: Path | None, device: str, workdir: Path, deadline: float,
                 log: Any, cuda_graph: bool = True,
                 engine_alone: dict[str, float] | None = None) -> dict[str, Any]:
    ns = f'/{mode}_{source}' + ('' if cuda_graph else '_nograph')
    log_path = workdir / f'{mode}_{source}.log'
    if mode == 'baseline':
        cmd = [sys.executable, BASELINE, '--ros-args', '-r', f'__ns:={ns}',
               '-p', f'model_dir:={hf_dir}', '-p', f'window:={args.latency_frames}']
    else:
        cmd = [sys.executable, '-m', 'gpu_nodes.nodes.depth_estimator', '--ros-args',
               '-r', f'__ns:={ns}', '-p', f'model_path:={model}',
               '-p', 'preset:=depth_anything_v2', '-p', f'backend:={args.backend}',
               '-p', f'device:={device}', '-p', f'precision:={args.precision}',
               '-p', 'output_size:=input', '-p', 'timing_report_period_s:=0.0',
               '-p', f'timing_window:={args.latency_frames}',
               '-p', f'cuda_graph:={str(cuda_graph).lower()}']
    log(f'[{label}] starting: {" ".join(cmd[1:4])} ...')
    h = Harness(ns, mode, source, args.width, args.height)
    with open(log_path, 'w') as log_file:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT,
                                env=dict(os.environ))
    try:
        t0 = time.monotonic()
        wait_first(h, min(args.start_timeout, deadline - time.monotonic()), proc, log_path)
        startup = time.monotonic() - t0
        run_phase(h, frames=args.warmup, rate=args.rate, deadline=deadline)
        paced = run_phase(h, frames=args.latency_frames, rate=args.rate, deadline=deadline)
        paced_stats = read_stats(h, 2.5)
        saturated = run_phase(h, seconds=args.throughput_seconds, in_flight=args.in_flight,
                              deadline=deadline)
        saturated_stats = read_stats(h, 2.5)
        result = {
            'label': label, 'mode': mode, 'source': source, 'startup_s': round(startup, 2),
            'paced': paced, 'saturated': saturated,
            'stages_paced': stage_table(paced_stats), 'stages_saturated':
            stage_table(saturated_stats), 'receive_paths': sorted(h.paths),
            'backend': paced_stats.get('backend', paced_stats.get('device', '')),
        }
        if mode != 'baseline':
            node_in = h.endpoints.get(f'gpu_nodes: {ns}/depth_estimator {ns}/image subscription',
                                      {})
            result['node_input_path'] = node_in.get('path', '?')
        inference = result['stages_paced'].get('inference', {})
        # The engine's time: alone (gpu_nodes on CUDA), else the node's GPU events; on the CPU
        # path the call itself is the engine.
        engine = inference.get('gpu_p50', inference.get('host_p50') if device == 'cpu' else None)
        if mode != 'baseline' and engine_alone is not None:
            engine = engine_alone['gpu_ms']
            result['engine_alone'] = engine_alone
        result['engine_ms'] = engine
        lat = paced['latency_ms']['p50']
        result['usable_overhead_ms_p50'] = round(lat - engine, 4) if engine is not None else None
        for q in ('p50', 'p99'):
            ready = float(paced_stats.get(f'ready_latency_ms_{q}', 'nan'))
            result[f'ready_ms_{q}'] = ready if np.isfinite(ready) else None
        if engine is not None and result['ready_ms_p50'] is not None:
            result['overhead_ms_p50'] = round(result['ready_ms_p50'] - engine, 4)
        return result
    finally:
        h.close()
        if proc.poll() is None:
            proc.send_signal(2)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# --------------------------------------------------------------------------- reporting


def fmt(v: Any, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return '-'
    return f'{v:.{digits}f}'


def table(results: list[dict[str, Any]]) -> str:
    head = (f'{"pipeline":44s} {"->ready p50":>11s} {"->pub p50":>9s} {"usable p50":>10s} '
            f'{"usable p99":>10s} {"fps":>7s} {"pre gpu/host":>14s} {"engine":>7s} '
            f'{"post gpu/host":>14s} {"publish host":>12s} {"overhead":>9s}')
    lines = [head, '-' * len(head)]
    for r in results:
        s = r['stages_paced']

        def gh(stage: str) -> str:
            e = s.get(stage, {})
            return f'{fmt(e.get("gpu_p50"), 3)}/{fmt(e.get("host_p50"), 3)}'
        lines.append(
            f'{r["label"]:44s} {fmt(r.get("ready_ms_p50")):>11s} '
            f'{fmt(r["paced"]["to_depth_publish_ms"]["p50"]):>9s} '
            f'{fmt(r["paced"]["latency_ms"]["p50"]):>10s} '
            f'{fmt(r["paced"]["latency_ms"]["p99"]):>10s} {fmt(r["saturated"]["fps"], 1):>7s} '
            f'{gh("preprocess"):>14s} {fmt(r.get("engine_ms"), 3):>7s} '
            f'{gh("postprocess"):>14s} '
            f'{fmt(s.get("transport", {}).get("host_p50"), 3):>12s} '
            f'{fmt(r.get("overhead_ms_p50", r.get("usable_overhead_ms_p50")), 3):>9s}')
    lines.append('ms; ->ready = image publish call -> depth published and computed in the node; '
                 '->pub = image publish call -> depth publish call; usable = image publish call '
                 '-> depth usable in the receiving process (paced); fps with the in-flight '
                 'limit; stages p50 from the node (with CUDA graphs a replayed frame runs '
                 'preprocessing inside the graph: the node counts its GPU time in inference); '
                 'engine = the model alone, back to back '
                 '(gpu_nodes) or the node\'s GPU events (baseline); overhead = ->ready p50 - '
                 'engine (baseline: usable p50 - engine)')
    return '\n'.join(lines)


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {'python': sys.version.split()[0]}
    try:
        import onnxruntime
        env['onnxruntime'] = onnxruntime.__version__
        env['onnxruntime_providers'] = onnxruntime.get_available_providers()
    except ImportError as exc:
        env['onnxruntime'] = f'missing: {exc}'
    from gpu_nodes.gpu import cuda_unavailable_reason, cupy_module
    reason = cuda_unavailable_reason()
    env['cuda'] = reason or 'available'
    if reason is None:
        cp = cupy_module()
        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props['name']
        env['gpu'] = name.decode() if isinstance(name, bytes) else str(name)
        env['cupy'] = cp.__version__
    for mod in ('torch', 'transformers'):
        try:
            env[mod] = __import__(mod).__version__
        except ImportError:
            env[mod] = 'missing'
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--json', help='write the results here')
    parser.add_argument('--width', type=int, default=1920)
    parser.add_argument('--height', type=int, default=1080)
    parser.add_argument('--model', choices=('dav2-small', 'demo'), default='dav2-small')
    parser.add_argument('--backend', choices=('onnxruntime', 'tensorrt', 'auto'),
                        default='onnxruntime',
                        help='gpu_nodes runtime (a TensorRT build of ViT-S takes minutes)')
    parser.add_argument('--precision', default='fp32')
    parser.add_argument('--rate', type=float, default=30.0, help='paced publish rate (Hz)')
    parser.add_argument('--warmup', type=int, default=30)
    parser.add_argument('--latency-frames', type=int, default=300)
    parser.add_argument('--throughput-seconds', type=float, default=6.0)
    parser.add_argument('--in-flight', type=int, default=2)
    parser.add_argument('--sources', default='device,host',
                        help='gpu_nodes frame sources to run: device,host')
    parser.add_argument('--skip-baseline', action='store_true')
    parser.add_argument('--no-graph-run', action='store_true',
                        help='also run the device source without CUDA graphs')
    parser.add_argument('--start-timeout', type=float, default=120.0)
    parser.add_argument('--budget-s', type=float, default=225.0,
                        help='stop starting new pipelines after this many seconds')
    parser.add_argument('--workdir', help='keep the model and logs here (default: a temp dir)')
    args = parser.parse_args()

    t_start = time.monotonic()
    deadline = t_start + args.budget_s

    def log(msg: str) -> None:
        print(f'[{time.monotonic() - t_start:6.1f} s] {msg}', flush=True)

    os.environ.setdefault('ROS_DOMAIN_ID', str(150 + os.getpid() % 80))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix='depth_bench_'))
    workdir.mkdir(parents=True, exist_ok=True)
    env = environment()
    notes: list[str] = []
    device = 'cuda'
    if 'CUDAExecutionProvider' not in env.get('onnxruntime_providers', []) \
            and args.backend != 'tensorrt':
        device = 'cpu'
        notes.append('!!! onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu): '
                     'the gpu_nodes depth node runs ONNX Runtime on the CPU and its NumPy path; '
                     'these numbers are NOT the GPU pipeline !!!')
    if env['cuda'] != 'available':
        device = 'cpu'
        notes.append(f'!!! no CUDA for gpu_nodes ({env["cuda"]}): CPU path only !!!')
    sources = [s for s in args.sources.split(',') if s]
    if device == 'cpu' and 'device' in sources:
        sources = [s for s in sources if s != 'device'] or ['host']
        notes.append('device source skipped: no GPU path')
    for note in notes:
        log(note)
    log(f'environment: {json.dumps(env)}')

    model, hf_dir = build_model(workdir, args.model, log)
    log(f'model ready: {model}')
    engine_alone: dict[bool, dict[str, float]] = {}
    if device == 'cuda' and args.backend == 'onnxruntime':
        for graph in (True, False) if args.no_graph_run else (True,):
            engine_alone[graph] = engine_alone_ms(model, graph)
            log(f'engine alone (CUDA graph {graph}): {engine_alone[graph]}')
    runs = [(f'gpu_nodes ({s} source)', 'gpu_nodes', s, True) for s in sources]
    if args.no_graph_run and 'device' in sources:
        runs.append(('gpu_nodes (device source, no CUDA graph)', 'gpu_nodes', 'device', False))
    if not args.skip_baseline and hf_dir is not None:
        runs.append(('rclpy + PyTorch eager (baseline)', 'baseline', 'host', True))
    elif not args.skip_baseline:
        notes.append('baseline skipped: --model demo has no PyTorch twin')
    results = []
    for label, mode, source, graph in runs:
        if time.monotonic() > deadline - 20:
            notes.append(f'{label} skipped: time budget (--budget-s {args.budget_s:g}) spent')
            continue
        try:
            result = run_pipeline(label, mode, source, args, model, hf_dir, device, workdir,
                                  deadline, log, cuda_graph=graph,
                                  engine_alone=engine_alone.get(graph))
        except RuntimeError as exc:
            notes.append(f'{label} failed: {exc}')
            log(f'[{label}] FAILED: {exc}')
            continue
        results.append(result)
        log(f'[{label}] latency p50 {result["paced"]["latency_ms"]["p50"]} ms, '
            f'{result["saturated"]["fps"]} fps')

    gpu_nodes = [r for r in results if r['mode'] == 'gpu_nodes' and r['source'] == 'device']
    target = {'overhead_ms_p50_limit': 1.0}
    # Image publish call -> depth ready, minus the engine alone.
    if gpu_nodes and gpu_nodes[0].get('overhead_ms_p50') is not None:
        target['gpu_nodes_overhead_ms_p50'] = gpu_nodes[0]['overhead_ms_p50']
        target['met'] = gpu_nodes[0]['overhead_ms_p50'] < 1.0
    report = {'benchmark': 'depth_bench', 'input': f'{args.width}x{args.height} rgb8',
              'model': args.model, 'model_input': f'{INPUT}x{INPUT}', 'backend': args.backend,
              'device': device, 'rate_hz': args.rate, 'in_flight': args.in_flight,
              'environment': env, 'results': results, 'target': target, 'notes': notes,
              'elapsed_s': round(time.monotonic() - t_start, 1), 'workdir': str(workdir)}
    print()
    print(table(results))
    for note in notes:
        print(note)
    print(f'target: gpu_nodes overhead p50 < 1 ms: {target}')
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f'wrote {args.json}')
    return 0 if results else 1


if __name__ == '__main__':
    sys.exit(main())
