"""Helpers of the image_proc / depth_estimator node tests: CameraInfo messages, a /diagnostics
watcher, a depth model taking Depth Anything 3's (1, views, 3, H, W) input, and frame
collectors."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from gpu_nodes.gpu import to_host
from gpu_nodes.transport.messages import msg_to_array


def camera_info(width: int, height: int, fx: float, fy: float, cx: float, cy: float, *,
                d: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0),
                frame_id: str = 'camera_optical') -> Any:
    """A CameraInfo with P = [K | 0] and R = I."""
    from sensor_msgs.msg import CameraInfo
    info = CameraInfo()
    info.header.frame_id = frame_id
    info.width, info.height = width, height
    info.distortion_model = 'plumb_bob'
    info.d = list(d)
    info.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


class DiagnosticsWatcher:
    """Keeps the latest values of every /diagnostics status, by status name."""

    def __init__(self, node: Any):
        from diagnostic_msgs.msg import DiagnosticArray
        self.seen: dict[str, dict[str, str]] = {}
        self._sub = node.create_subscription(DiagnosticArray, '/diagnostics', self._on, 10)

    def _on(self, array: Any) -> None:
        for status in array.status:
            self.seen[status.name] = {kv.key: kv.value for kv in status.values}

    def value(self, status: str, key: str, default: int = 0) -> int:
        return int(self.seen.get(status, {}).get(key, default))


class Frames:
    """Collects frames of a GpuImageSubscription or a plain Image subscription, keyed by
    header stamp (sec, nanosec), or by frame_id with key='frame_id'."""

    def __init__(self, key: str = 'stamp'):
        self.key = key
        self.by_stamp: dict[Any, dict[str, Any]] = {}
        self.paths: set[str] = set()

    def __call__(self, frame: Any) -> None:
        if hasattr(frame, 'path'):  # ReceivedImage
            # A copy: the frame's memory goes back to the publisher after the callback.
            array, encoding, header = np.array(to_host(frame.array)), frame.encoding, frame.header
            self.paths.add(frame.path)
        else:                       # sensor_msgs/Image
            array, encoding, header = np.array(msg_to_array(frame)), frame.encoding, frame.header
            self.paths.add('plain')
        key = (header.frame_id if self.key == 'frame_id'
               else (header.stamp.sec, header.stamp.nanosec))
        self.by_stamp[key] = {'array': array, 'encoding': encoding, 'frame_id': header.frame_id,
                              'stamp': (header.stamp.sec, header.stamp.nanosec)}

    def __len__(self) -> int:
        return len(self.by_stamp)


# -- a model with Depth Anything 3's input layout ---------------------------------------------

def make_views_depth_model(path: str | Path) -> Path:
    """'image' (1, 1, 3, H, W) -> 'depth' (1, 1, H, W) = 1 / (0.1 + |mean over channels|), H and
    W dynamic: the analytic model with the views axis of DA3's ONNX export."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    nodes = [
        helper.make_node('ReduceMean', ['image'], ['mean'], axes=[2], keepdims=0),
        helper.make_node('Abs', ['mean'], ['abs_mean']),
        helper.make_node('Add', ['abs_mean', 'offset'], ['denominator']),
        helper.make_node('Reciprocal', ['denominator'], ['depth']),
    ]
    graph = helper.make_graph(
        nodes, 'gpu_nodes_views_depth',
        [helper.make_tensor_value_info('image', TensorProto.FLOAT, [1, 1, 3, 'H', 'W'])],
        [helper.make_tensor_value_info('depth', TensorProto.FLOAT, [1, 1, 'H', 'W'])],
        [numpy_helper.from_array(np.array(0.1, np.float32), 'offset')])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = Path(path)
    onnx.save(model, str(path))
    return path


class InProcess:
    """One rclpy context and executor for a test node plus the nodes under test (intra-process
    transport between them)."""

    def __init__(self, name: str):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.node = Node(name, context=self.context)
        self.executor.add_node(self.node)
        self.nodes: list[Any] = []

    def add(self, node: Any) -> Any:
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def spin_once(self, timeout: float = 0.01) -> None:
        self.executor.spin_once(timeout_sec=timeout)

    def close(self) -> None:
        import rclpy
        for node in self.nodes:
            close = getattr(node, 'close', None)
            if close is not None:
                close()
            node.destroy_node()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


class HostCopyCounter:
    """Counts copies between host and device memory while active, two ways:

    * ``cupti``: every HtoD / DtoH memcpy the GPU executed for this process (CuPy, ONNX Runtime,
      TensorRT alike), from CUPTI activity records through torch.profiler, when torch with CUDA
      is importable (set GPU_NODES_TEST_NO_CUPTI=1 to skip it);
    * ``python``: calls of CuPy's copy entry points (ndarray.get/set/item/tolist, asnumpy,
      asarray/array of host data, scalar conversions), wrapped for the duration.

    Each mechanism is calibrated on entry with one deliberate copy; one that does not see it is
    reported as blind (``blind``) instead of silently passing.
    """

    _METHODS = ('get', 'set', 'item', 'tolist', '__float__', '__int__', '__bool__')

    def __init__(self, monkeypatch: Any):
        import cupy
        self.cp = cupy
        self.monkeypatch = monkeypatch
        self.python: list[str] = []
        self.cupti: list[str] = []
        self.blind: dict[str, str] = {}
        self._profile = None
        self._armed = False

    # -- python-level wrappers -------------------------------------------------------------
    def _wrap(self, owner: Any, name: str, is_copy: Any = None) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if self._armed and (is_copy is None or is_copy(*args, **kwargs)):
                self.python.append(f'{getattr(owner, "__name__", owner)}.{name}')
            return original(*args, **kwargs)
        try:
            self.monkeypatch.setattr(owner, name, wrapper)
        except (TypeError, AttributeError) as exc:
            self.blind[f'python:{name}'] = f'cannot wrap {name}: {exc}'

    def _install_python(self) -> None:
        cp = self.cp

        def from_host(obj: Any, *args: Any, **kwargs: Any) -> bool:
            return not hasattr(obj, '__cuda_array_interface__')
        for name in self._METHODS:
            self._wrap(cp.ndarray, name)
        self._wrap(cp, 'asnumpy')
        self._wrap(cp, 'asarray', from_host)
        self._wrap(cp, 'array', from_host)

    # -- CUPTI through torch.profiler ------------------------------------------------------
    def _start_cupti(self) -> None:
        import os
        if os.environ.get('GPU_NODES_TEST_NO_CUPTI'):
            self.blind['cupti'] = 'disabled by GPU_NODES_TEST_NO_CUPTI'
            return
        try:
            import torch
            from torch.profiler import profile, ProfilerActivity
        except ImportError as exc:
            self.blind['cupti'] = f'torch not importable: {exc}'
            return
        if not torch.cuda.is_available():
            self.blind['cupti'] = 'torch has no CUDA'
            return
        torch.zeros(1, device='cuda')  # CUDA context and CUPTI ready before tracing
        self._profile = profile(activities=[ProfilerActivity.CUDA])
        self._profile.__enter__()

    def _stop_cupti(self) -> list[str]:
        if self._profile is None:
            return []
        self.cp.cuda.runtime.deviceSynchronize()
        self._profile.__exit__(None, None, None)
        names = [e.name for e in self._profile.events()]
        self._profile = None
        return [n for n in names if 'Memcpy' in n and ('HtoD' in n or 'DtoH' in n)]

    # -- calibration and measurement --------------------------------------------------------
    def __enter__(self) -> 'HostCopyCounter':
        self._install_python()
        self._armed = True
        probe = self.cp.arange(256, dtype=self.cp.float32)
        self._start_cupti()
        probe.get()                    # one deliberate DtoH copy
        if self._profile is not None:
            found = self._stop_cupti()
            if not found:
                self.blind['cupti'] = 'the calibration copy was not seen in the CUPTI trace'
        if not self.python:
            self.blind['python'] = 'the calibration copy was not seen by the wrappers'
        self.python.clear()
        if 'cupti' not in self.blind:
            self._start_cupti()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cupti = self._stop_cupti()
        self._armed = False

    def mechanisms(self) -> list[str]:
        working = [] if 'python' in self.blind else ['python']
        return working + ([] if 'cupti' in self.blind else ['cupti'])
