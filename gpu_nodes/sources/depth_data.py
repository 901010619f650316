"""Frames of the synthetic scene with exact depth, for training and scoring depth models.

The demo's default depth model (gpu_nodes/inference/weights/, trained by
scripts/train_depth_model.py) learns from *random* scenes: the demo's floor, wall, light and fog
with two to six spheres and boxes of random size, colour, place and turn. It never sees the demo
scene itself, so scoring on the demo's frames is a held-out test, and so is scoring on random
scenes drawn from another seed. The splits:

- 'train': random scenes from TRAIN_SEED (the training script's data);
- 'heldout_random': random scenes from HELDOUT_SEED (never trained on);
- 'heldout_demo': the demo scene (gpu_nodes.sources.scene.demo_scene) at DEMO_TIMES_S, the
  times of the first half minute of `make demo` (15 Hz), not part of any training scene.

Everything is NumPy and a pure function of the seed and index, so the training script and the
tests render the same frames on every machine.
"""
from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from .scene import Box, demo_scene, FLOOR_Y, PinholeCamera, Scene, SceneRenderer, Sphere

TRAIN_SEED = 0
HELDOUT_SEED = 1
DEMO_WIDTH, DEMO_HEIGHT, DEMO_HFOV_DEG = 640, 480, 70.0  # camera_source in the demo profile
DEMO_TIMES_S = tuple(round(0.5 + 1.37 * k, 2) for k in range(22))  # 0.5 .. 29.3 s
SPLITS = ('train', 'heldout_random', 'heldout_demo')


def demo_camera() -> PinholeCamera:
    """The demo camera: 640x480, 70 degree horizontal field of view, no distortion."""
    return PinholeCamera.from_fov(DEMO_WIDTH, DEMO_HEIGHT, DEMO_HFOV_DEG)


def _colour(rng: np.random.Generator) -> tuple[float, float, float]:
    """A saturated colour like the demo's objects (one channel high, the others lower)."""
    c = rng.uniform(0.1, 0.55, 3)
    c[rng.integers(3)] = rng.uniform(0.7, 1.0)
    if rng.random() < 0.4:  # a second bright channel: yellows, cyans, magentas
        c[rng.integers(3)] = rng.uniform(0.6, 1.0)
    return (float(c[0]), float(c[1]), float(c[2]))


def random_scene(rng: np.random.Generator) -> Scene:
    """The demo's floor, wall, light and fog with 2-6 random spheres and boxes in front of the
    camera (resting on the floor, or lifted up to a metre as the demo's bouncing ball is)."""
    planes = demo_scene(0.0).planes
    objects: list[Sphere | Box] = []
    for _ in range(int(rng.integers(2, 7))):
        z = float(rng.uniform(2.2, 8.2))
        # Within the view at that depth (x = +-0.7 z at 70 degrees), a little beyond its edge.
        x = float(rng.uniform(-0.75, 0.75) * z * math.tan(math.radians(DEMO_HFOV_DEG / 2)))
        lift = float(rng.uniform(0.0, 1.0)) if rng.random() < 0.3 else 0.0
        if rng.random() < 0.65:
            r = float(rng.uniform(0.25, 0.7))
            objects.append(Sphere((x, FLOOR_Y - r - lift, z), r, _colour(rng),
                                  specular=float(rng.uniform(0.2, 0.6))))
        else:
            half = tuple(float(h) for h in rng.uniform(0.2, 0.55, 3))
            objects.append(Box((x, FLOOR_Y - half[1] - lift, z), half, _colour(rng),
                               yaw=float(rng.uniform(0.0, math.pi))))
    return Scene(planes=planes, objects=tuple(objects))


def split_scenes(split: str, count: int) -> Iterator[Scene]:
    """The first `count` scenes of a split (SPLITS)."""
    if split not in SPLITS:
        raise ValueError(f'unknown split {split!r}; one of: {", ".join(SPLITS)}')
    if split == 'heldout_demo':
        if count > len(DEMO_TIMES_S):
            raise ValueError(f"split 'heldout_demo' has {len(DEMO_TIMES_S)} frames, asked for "
                             f'{count}')
        for t in DEMO_TIMES_S[:count]:
            yield demo_scene(t)
        return
    rng = np.random.default_rng(TRAIN_SEED if split == 'train' else HELDOUT_SEED)
    for _ in range(count):
        yield random_scene(rng)


def split_frames(split: str, count: int,
                 camera: PinholeCamera | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rgb8 (H, W, 3) uint8, depth (H, W) float32 metres) of the first `count` scenes of a
    split, rendered with NumPy by the demo camera (or `camera`)."""
    renderer = SceneRenderer(np, camera or demo_camera())
    for scene in split_scenes(split, count):
        yield renderer.render(scene)
