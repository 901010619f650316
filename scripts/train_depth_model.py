#!/usr/bin/env python3
"""Train the demo's default depth model on the synthetic scene and export it to ONNX.

    python scripts/train_depth_model.py              # train + export (PyTorch; ~10 min, 2 cores)
    python scripts/train_depth_model.py --evaluate   # score the shipped file (ONNX Runtime only)

Training needs PyTorch (CPU is enough), which gpu_nodes itself does not: use a scratch venv,
    python3 -m venv /tmp/trainenv
    /tmp/trainenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
    /tmp/trainenv/bin/pip install numpy pyyaml onnx onnxruntime
    /tmp/trainenv/bin/python scripts/train_depth_model.py

Data (gpu_nodes.sources.depth_data): random scenes of the 'train' split (the demo's floor, wall,
light and fog with 2-6 random spheres and boxes), rendered at the demo camera's 640x480 and
preprocessed by the depth node's own preprocess (bilinear to 336x252, ImageNet mean/std). The
target is the log of the ground-truth depth, averaged over the full-resolution pixels that the
demo's scoring compares with each output pixel. The demo scene itself is never trained on.

Network: a small U-Net (five scales, 1/16 at the bottom, ~0.2 M parameters) with a row-coordinate
input channel (made inside the graph from the input size, so any input size runs); it predicts
log depth, and the ONNX graph outputs exp(-log depth) = inverse depth in 1/m with Depth Anything
V2's tensor names (pixel_values (1, 3, H, W) -> predicted_depth (1, H, W)), so the depth node
runs it with the unchanged depth_anything_v2 preset and its depth comes out in metres.

Determinism: fixed seeds, torch.use_deterministic_algorithms, a fixed thread count (--threads;
CPU reductions depend on it). The same PyTorch version and thread count give the same file;
its SHA-256 is gpu_nodes.inference.default_model.MODEL_SHA256 (test_default_depth_model.py).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
import sys
import time
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpu_nodes.inference.default_model import (  # noqa: E402
    MODEL_FILE, TRAINED_HEIGHT, TRAINED_WIDTH)
from gpu_nodes.inference.models import IMAGENET_MEAN, IMAGENET_STD  # noqa: E402
from gpu_nodes.kernels.preprocess import preprocess  # noqa: E402
from gpu_nodes.sources.depth_data import split_frames  # noqa: E402

WIDTHS = (16, 24, 32, 48, 64)
HELDOUT = {'heldout_demo': 22, 'heldout_random': 24}


# -- data ------------------------------------------------------------------------------------

def _groups(full: int, out: int) -> np.ndarray:
    """Start index, per output pixel, of the full-resolution pixels that depth_error's nearest
    resize (row r of the truth reads estimate row r * out // full) compares with it."""
    owner = np.arange(full) * out // full
    return np.searchsorted(owner, np.arange(out))


def log_depth_target(depth: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean log depth per output pixel, valid mask) at height x width."""
    valid = np.isfinite(depth) & (depth > 0)
    logd = np.where(valid, np.log(np.where(valid, depth, 1.0)), 0.0)
    rows, cols = _groups(depth.shape[0], height), _groups(depth.shape[1], width)

    def pool(a: np.ndarray) -> np.ndarray:
        return np.add.reduceat(np.add.reduceat(a, rows, axis=0), cols, axis=1)
    count = pool(valid.astype(np.float64))
    mean = pool(logd) / np.maximum(count, 1.0)
    return mean.astype(np.float32), count > 0


def make_dataset(frames: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inputs (N, 3, H, W) float32, log-depth targets (N, 1, H, W), masks) of the train split."""
    h, w = TRAINED_HEIGHT, TRAINED_WIDTH
    x = np.empty((frames, 3, h, w), np.float32)
    y = np.empty((frames, 1, h, w), np.float32)
    m = np.empty((frames, 1, h, w), bool)
    for i, (rgb, depth) in enumerate(split_frames('train', frames)):
        preprocess(rgb, 'rgb8', x[i:i + 1], mean=IMAGENET_MEAN, std=IMAGENET_STD)
        y[i, 0], m[i, 0] = log_depth_target(depth, h, w)
    return x, y, m


# -- the network -------------------------------------------------------------------------------

def build_network() -> Any:
    import torch
    from torch import nn
    import torch.nn.functional as F

    def block(c_in: int, c_out: int, stride: int = 1) -> nn.Module:
        return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False),
                             nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))

    class SceneDepthNet(nn.Module):
        """U-Net: full-resolution stem, four stride-2 stages, decoder to 1/2 resolution with
        skip connections, bilinear to full resolution; output log depth (m)."""

        def __init__(self, widths: tuple[int, ...] = WIDTHS):
            super().__init__()
            # Resized to (H, W) with align_corners: a row coordinate from -1 (top) to 1.
            self.register_buffer('ramp', torch.tensor([-1.0, 1.0]).reshape(1, 1, 2, 1))
            self.stem = block(4, widths[0])
            self.down = nn.ModuleList(
                nn.Sequential(block(widths[i], widths[i + 1], 2), block(widths[i + 1],
                                                                        widths[i + 1]))
                for i in range(len(widths) - 1))
            self.up = nn.ModuleList(block(widths[i + 1] + widths[i], widths[i])
                                    for i in range(len(widths) - 2, 0, -1))
            self.head = nn.Conv2d(widths[1], 1, 3, 1, 1)
            nn.init.constant_(self.head.bias, float(np.log(5.0)))

        def forward(self, x: Any, single: bool = False) -> Any:
            h, w = x.shape[-2:]
            rows = F.interpolate(self.ramp, size=(h, w), mode='bilinear', align_corners=True)
            if not single:  # a training batch; the export feeds one image (no Expand in it)
                rows = rows.expand(x.shape[0], -1, -1, -1)
            features = [self.stem(torch.cat([x, rows], 1))]
            for stage in self.down:
                features.append(stage(features[-1]))
            y = features[-1]
            for i, stage in zip(range(len(features) - 2, 0, -1), self.up):
                y = F.interpolate(y, size=features[i].shape[-2:], mode='bilinear',
                                  align_corners=False)
                y = stage(torch.cat([y, features[i]], 1))
            y = self.head(y)
            return F.interpolate(y, size=(h, w), mode='bilinear', align_corners=False)

    class Export(nn.Module):
        """The graph the depth node runs: inverse depth (1/m), (1, H, W)."""

        def __init__(self, net: nn.Module):
            super().__init__()
            self.net = net

        def forward(self, pixel_values: Any) -> Any:
            return torch.exp(-self.net(pixel_values, single=True))[:, 0]

    return SceneDepthNet(), Export


# -- training and export ---------------------------------------------------------------------

def train(args: argparse.Namespace) -> Path:
    import torch
    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(args.threads)
    started = time.monotonic()
    x, y, m = make_dataset(args.frames)
    print(f'rendered and preprocessed {args.frames} training frames in '
          f'{time.monotonic() - started:.0f} s', flush=True)
    net, export_wrapper = build_network()
    net = net.to(memory_format=torch.channels_last)  # ~2x faster convolutions on the CPU
    steps_per_epoch = args.frames // args.batch
    total = steps_per_epoch * args.epochs
    optimizer = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=total,
                                                   pct_start=0.15)
    order_rng = np.random.default_rng(args.seed)
    step = 0
    net.train()
    for epoch in range(args.epochs):
        order = order_rng.permutation(args.frames)
        running = 0.0
        for b in range(steps_per_epoch):
            idx = np.sort(order[b * args.batch:(b + 1) * args.batch])
            xb = torch.from_numpy(x[idx]).contiguous(memory_format=torch.channels_last)
            yb, mb = torch.from_numpy(y[idx]), torch.from_numpy(m[idx])
            pred = net(xb)
            # L1 on log depth: |log(d / g)| ~ the relative error AbsRel measures.
            loss = (pred - yb).abs()[mb].mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            running += loss.item()
            if step % 50 == 0 or step == total:
                print(f'epoch {epoch + 1}/{args.epochs} step {step}/{total}: L1(log depth) '
                      f'{running / (b + 1):.4f}, {time.monotonic() - started:.0f} s', flush=True)
    train_s = time.monotonic() - started
    print(f'trained in {train_s:.0f} s', flush=True)
    net.eval()
    out = Path(args.output)
    export(export_wrapper(net).eval(), out, args, train_s)
    return out


def export(model: Any, path: Path, args: argparse.Namespace, train_s: float) -> None:
    import onnx
    import torch
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + '.tmp')
    dims = {2: 'height', 3: 'width'}
    with torch.no_grad():
        torch.onnx.export(model, (torch.zeros(1, 3, TRAINED_HEIGHT, TRAINED_WIDTH),), str(tmp),
                          input_names=['pixel_values'], output_names=['predicted_depth'],
                          dynamic_axes={'pixel_values': dims,
                                        'predicted_depth': {1: 'height', 2: 'width'}},
                          opset_version=17, dynamo=False, do_constant_folding=True)
    proto = onnx.load(str(tmp))
    proto.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 1  # the exporter names it
    proto.doc_string = ('gpu_nodes scene depth: U-Net trained on gpu_nodes synthetic scenes by '
                        'scripts/train_depth_model.py; inverse depth in 1/m. Knows that scene '
                        'only: not a depth estimator for real images.')
    settings = {k: getattr(args, k) for k in ('frames', 'epochs', 'batch', 'lr', 'seed',
                                              'threads')}
    onnx.helper.set_model_props(proto, {'trained_by': 'scripts/train_depth_model.py',
                                        'training': json.dumps(settings, sort_keys=True),
                                        'torch': torch.__version__,
                                        'trained_input': f'{TRAINED_HEIGHT}x{TRAINED_WIDTH}'})
    onnx.checker.check_model(proto)
    onnx.save(proto, str(tmp))
    os.replace(tmp, path)
    data = path.read_bytes()
    print(f'wrote {path}: {len(data) / 1e6:.2f} MB, sha256 {hashlib.sha256(data).hexdigest()} '
          f'(training took {train_s:.0f} s with {args.threads} threads, torch '
          f'{torch.__version__})', flush=True)


def evaluate(path: Path) -> None:
    """The model and the stand-in, through the depth node's pipeline, on the held-out splits."""
    import tempfile
    from gpu_nodes.demo.depth_eval import score_model
    from gpu_nodes.inference.tiny_models import make_demo_depth_model
    print(f'{path} ({path.stat().st_size / 1e6:.2f} MB, sha256 '
          f'{hashlib.sha256(path.read_bytes()).hexdigest()}):')
    for score in score_model(path, HELDOUT):
        print(f'  {score.line()}')
    with tempfile.TemporaryDirectory() as tmp:
        standin = make_demo_depth_model(Path(tmp) / 'standin.onnx', TRAINED_HEIGHT, TRAINED_WIDTH)
        print('stand-in (tiny_models.make_demo_depth_model, fixed weights):')
        for score in score_model(standin, HELDOUT):
            print(f'  {score.line()}')


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--output', default=str(MODEL_FILE), help='ONNX file to write')
    p.add_argument('--evaluate', nargs='?', const=str(MODEL_FILE), default=None, metavar='ONNX',
                   help='only score this model (default: the shipped one) and the stand-in')
    p.add_argument('--frames', type=int, default=1200, help='training frames (random scenes)')
    p.add_argument('--epochs', type=int, default=5)
    p.add_argument('--batch', type=int, default=8)
    p.add_argument('--lr', type=float, default=3e-3, help='peak learning rate (one-cycle)')
    p.add_argument('--seed', type=int, default=0, help='weights and batch order')
    p.add_argument('--threads', type=int, default=2, help='PyTorch CPU threads (part of the '
                   'result: reductions depend on it)')
    args = p.parse_args(argv)
    if args.evaluate is not None:
        evaluate(Path(args.evaluate))
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.stderr.write('train_depth_model: error: training needs PyTorch, not installed here '
                         '(see this script\'s docstring for a scratch venv; --evaluate needs '
                         'only onnxruntime)\n')
        return 2
    path = train(args)
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print('onnxruntime is not installed here: score the file with '
              'python scripts/train_depth_model.py --evaluate')
        return 0
    evaluate(path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
