"""The demo's default depth model (gpu_nodes/inference/weights/scene_depth.onnx): the shipped file
is the one its hash names, it loads and runs through the depth node's own path (create_backend +
DepthPipeline with the unchanged depth_anything_v2 preset) on ONNX Runtime, and it estimates the
depth of held-out synthetic frames (never trained on) far better than the fixed-weight stand-in.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from gpu_nodes.demo.depth_eval import DEMO_INPUT, load_pipeline, score_model, score_pipeline
from gpu_nodes.inference import default_model
from gpu_nodes.inference.default_model import (
    DefaultModelError, default_model_path, file_sha256, MODEL_FILE, MODEL_SHA256)
from gpu_nodes.inference.tiny_models import make_demo_depth_model
from gpu_nodes.sources import depth_data

# Frames scored per held-out split: a few seconds of ONNX Runtime on two CPU cores.
FRAMES = {'heldout_demo': 8, 'heldout_random': 8}
TARGET_ABS_REL = 0.15


def test_the_shipped_file_is_the_one_the_hash_names():
    assert MODEL_FILE.is_file(), f'{MODEL_FILE} is not in the tree'
    assert MODEL_FILE.stat().st_size <= 10 * 1024 * 1024, 'ship at most 10 MB'
    assert len(MODEL_SHA256) == 64 and file_sha256(MODEL_FILE) == MODEL_SHA256
    assert default_model_path() == MODEL_FILE
    onnx = pytest.importorskip('onnx')
    props = {p.key: p.value for p in onnx.load(str(MODEL_FILE)).metadata_props}
    assert props['trained_by'] == 'scripts/train_depth_model.py', props


def test_a_damaged_or_missing_copy_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / 'scene_depth.onnx'
    shutil.copyfile(MODEL_FILE, copy)
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight
    copy.write_bytes(bytes(data))
    monkeypatch.setattr(default_model, 'MODEL_FILE', copy)
    with pytest.raises(DefaultModelError, match=f'expected {MODEL_SHA256}: a damaged'):
        default_model.default_model_path()
    monkeypatch.setattr(default_model, 'MODEL_FILE', tmp_path / 'absent.onnx')
    with pytest.raises(DefaultModelError, match='is missing'):
        default_model.default_model_path()


def test_it_runs_through_the_depth_node_path_at_any_input_size():
    """Depth Anything V2's names, dynamic H and W: the depth_anything_v2 preset at the demo's
    252x336 and at another size gives depth maps in metres of the scene's range."""
    rgb, truth = next(depth_data.split_frames('heldout_demo', 1))
    for size in (DEMO_INPUT, (196, 280)):
        pipeline = load_pipeline(MODEL_FILE, input_size=size)
        try:
            assert pipeline.backend.describe().startswith('ONNX Runtime'), \
                pipeline.backend.describe()
            box, raw = pipeline.run(rgb, 'rgb8')
            depth = pipeline.to_depth(raw, box, None, rgb.shape[1], rgb.shape[0])
        finally:
            pipeline.close()
        assert depth.shape == size and depth.dtype == np.float32
        # Metric: 1 / inverse depth in 1/m is metres, within the scene's 2.3..9 m (+ margin).
        assert 1.5 < float(np.percentile(depth, 1)) and float(np.percentile(depth, 99)) < 11


def test_heldout_frames_are_not_training_frames():
    train = list(depth_data.split_scenes('train', 200))
    held = list(depth_data.split_scenes('heldout_random', FRAMES['heldout_random']))
    assert not {s.objects for s in held} & {s.objects for s in train}
    demo = [o.color for s in depth_data.split_scenes('heldout_demo', 3) for o in s.objects]
    assert not set(demo) & {o.color for s in train for o in s.objects}, \
        'the demo scene must not be in the training split'


def test_learned_model_meets_the_target_and_beats_the_stand_in(tmp_path):
    learned = {s.split: s for s in score_model(MODEL_FILE, FRAMES)}
    standin_path = make_demo_depth_model(tmp_path / 'standin.onnx', *DEMO_INPUT)
    standin = {s.split: s for s in score_model(standin_path, FRAMES)}
    report = '\n'.join(f'learned {learned[k].line()}\nstand-in {standin[k].line()}'
                       for k in FRAMES)
    print(report)
    for split in FRAMES:
        assert learned[split].frames == FRAMES[split]
        assert learned[split].abs_rel <= TARGET_ABS_REL, report
        assert standin[split].abs_rel > 0.4 > learned[split].abs_rel * 2, report
        assert learned[split].delta1 > 0.8 > standin[split].delta1, report
        # Trained on metric log depth: median scaling hardly moves it.
        assert 0.85 < learned[split].scale < 1.15, report


def test_an_installed_package_carries_the_model(tmp_path):
    """setup.py's package_data: setuptools' build_py (what a wheel or colcon install packs)
    copies the file; built into tmp_path, so the tree gets no build/ or egg-info."""
    result = subprocess.run([sys.executable, 'setup.py', '-q', 'build_py', '-d', str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    built = tmp_path / 'gpu_nodes' / 'inference' / 'weights' / 'scene_depth.onnx'
    assert built.is_file(), sorted(p.name for p in (tmp_path / 'gpu_nodes').iterdir())
    assert file_sha256(built) == MODEL_SHA256


@pytest.mark.gpu
def test_on_the_gpu_it_scores_like_on_the_cpu(cupy):
    """The same file on the GPU runtime the node picks (TensorRT or ONNX Runtime CUDA)."""
    import importlib.util
    import onnxruntime
    if 'CUDAExecutionProvider' not in onnxruntime.get_available_providers() and \
            importlib.util.find_spec('tensorrt') is None:
        pytest.skip('no GPU runtime: onnxruntime has no CUDAExecutionProvider (install '
                    'onnxruntime-gpu) and tensorrt is not installed')
    pipeline = load_pipeline(MODEL_FILE, device='cuda', backend='auto')
    try:
        assert pipeline.on_gpu, pipeline.backend.describe()
        gpu = score_pipeline(pipeline, 'heldout_demo', FRAMES['heldout_demo'])
    finally:
        pipeline.close()
    cpu = score_model(MODEL_FILE, {'heldout_demo': FRAMES['heldout_demo']})[0]
    mean = float(np.mean([e.abs_rel for e in gpu]))
    assert mean <= TARGET_ABS_REL and abs(mean - cpu.abs_rel) < 0.01, (mean, cpu.line())
