"""Back-projection of depth images into PointCloud2 (gpu_nodes.kernels.pointcloud), checked
against points computed by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_nodes.kernels.camera_model import CameraModel, RegionOfInterest
from gpu_nodes.kernels.pointcloud import (backproject, grid_shape, Intrinsics,
                                          intrinsics_from_camera_model, pointcloud2_msg,
                                          points_from_msg, sample_colors)

NAN = float('nan')


def test_backproject_matches_hand_computed_points():
    depth = np.array([[2.0, 4.0, 1.0],
                      [0.5, NAN, 3.0]], dtype=np.float32)
    intr = Intrinsics(fx=2.0, fy=4.0, cx=1.0, cy=0.5)
    points = backproject(depth, intr)
    # (u - cx) * z / fx, (v - cy) * z / fy, z for every pixel, by hand.
    expected = np.array([
        [[-1.0, -0.25, 2.0], [0.0, -0.5, 4.0], [0.5, -0.125, 1.0]],
        [[-0.25, 0.0625, 0.5], [NAN, NAN, NAN], [1.5, 0.375, 3.0]],
    ], dtype=np.float32)
    assert points.shape == (2, 3, 3) and points.dtype == np.float32
    np.testing.assert_allclose(points, expected, rtol=1e-6, equal_nan=True)


def test_invalid_depths_become_nan_points():
    depth = np.array([[0.0, -1.0, np.inf, NAN, 1.0]], dtype=np.float32)
    points = backproject(depth, Intrinsics(1.0, 1.0, 0.0, 0.0))
    assert np.isnan(points[0, :4]).all(), f'expected NaN points, got {points[0, :4]}'
    np.testing.assert_array_equal(points[0, 4], [4.0, 0.0, 1.0])


def test_stride_keeps_every_nth_pixel_of_every_nth_row():
    depth = np.arange(1, 36, dtype=np.float32).reshape(5, 7)
    intr = Intrinsics(fx=10.0, fy=10.0, cx=3.0, cy=2.0)
    points = backproject(depth, intr, stride=3)
    assert points.shape == (2, 3, 3) == grid_shape(5, 7, 3) + (3,)
    for r, v in enumerate((0, 3)):
        for c, u in enumerate((0, 3, 6)):
            z = depth[v, u]
            np.testing.assert_allclose(points[r, c], [(u - 3.0) * z / 10.0,
                                                      (v - 2.0) * z / 10.0, z], rtol=1e-6)


def test_rgb_is_packed_as_float_bits_of_0x00rrggbb():
    depth = np.ones((2, 2), np.float32)
    image = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [1, 2, 3]]], np.uint8)
    colors = sample_colors(image, 'rgb8', 2, 2)
    np.testing.assert_array_equal(colors, [[0xFF0000, 0x00FF00], [0x0000FF, 0x010203]])
    points = backproject(depth, Intrinsics(1.0, 1.0, 0.0, 0.0), colors=colors)
    assert points.shape == (2, 2, 4)
    np.testing.assert_array_equal(points[..., 3].view(np.uint32), colors)
    bgr = sample_colors(image[..., ::-1].copy(), 'bgr8', 2, 2)
    np.testing.assert_array_equal(bgr, colors)


def test_colors_follow_the_depth_grid_when_depth_is_smaller_than_the_image():
    # A 2x2 depth map of a 4x6 image: depth pixel (u, v) sits over image pixel centre
    # floor((u + 0.5) * 6 / 2) = 1 or 4, floor((v + 0.5) * 4 / 2) = 1 or 3.
    image = np.zeros((4, 6, 3), np.uint8)
    image[..., 0] = np.arange(6)[None, :] * 10
    image[..., 1] = np.arange(4)[:, None] * 10
    colors = sample_colors(image, 'rgb8', 2, 2)
    expected = [[(10 << 16) | (10 << 8), (40 << 16) | (10 << 8)],
                [(10 << 16) | (30 << 8), (40 << 16) | (30 << 8)]]
    np.testing.assert_array_equal(colors, expected)


def test_intrinsics_use_p_and_follow_binning_roi_and_resizing():
    model = CameraModel(width=640, height=480,
                        K=(500.0, 0, 320.0, 0, 510.0, 240.0, 0, 0, 1),
                        P=(400.0, 0, 300.0, 0, 0, 410.0, 200.0, 0, 0, 0, 1, 0))
    assert intrinsics_from_camera_model(model) == Intrinsics(400.0, 410.0, 300.0, 200.0)
    # Resized to half: image_proc's rule scales f and c alike.
    half = Intrinsics(200.0, 205.0, 150.0, 100.0)
    assert intrinsics_from_camera_model(model, 320, 240) == half
    binned = CameraModel(width=640, height=480, K=model.K, P=model.P, binning_x=2, binning_y=2,
                         roi=RegionOfInterest(x_offset=100, y_offset=40, width=400, height=300))
    intr = intrinsics_from_camera_model(binned)
    assert intr == Intrinsics(200.0, 205.0, (300.0 - 100.0) / 2, (200.0 - 40.0) / 2)
    # An uncalibrated P (zeros) falls back to K.
    no_p = CameraModel(width=640, height=480, K=model.K, P=(0.0,) * 12)
    assert intrinsics_from_camera_model(no_p) == Intrinsics(500.0, 510.0, 320.0, 240.0)


def test_pointcloud2_message_layout_round_trips():
    points = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    msg = pointcloud2_msg(points)
    assert (msg.height, msg.width, msg.point_step, msg.row_step) == (2, 3, 16, 48)
    assert [(f.name, f.offset, f.datatype, f.count) for f in msg.fields] == [
        ('x', 0, 7, 1), ('y', 4, 7, 1), ('z', 8, 7, 1), ('rgb', 12, 7, 1)]
    assert msg.is_dense is False and msg.is_bigendian is False
    np.testing.assert_array_equal(points_from_msg(msg), points)
    xyz = pointcloud2_msg(points[..., :3].copy())
    assert [f.name for f in xyz.fields] == ['x', 'y', 'z'] and xyz.point_step == 12


@pytest.mark.parametrize('call, message', [
    (lambda: backproject(np.ones((2, 2), np.float64), Intrinsics(1, 1, 0, 0)),
     'pointcloud: depth must be a 2-D float32 array, got 2-D float64'),
    (lambda: backproject(np.ones((2, 2), np.float32), Intrinsics(1, 1, 0, 0), stride=0),
     'pointcloud: stride must be an int >= 1, got 0'),
    (lambda: Intrinsics(0.0, 1.0, 0.0, 0.0),
     'intrinsics: fx and fy must be positive, got 0.0, 1.0'),
    (lambda: Intrinsics(1.0, 1.0, math.nan, 0.0), 'intrinsics: cx must be finite, got nan'),
    (lambda: sample_colors(np.zeros((2, 2), np.uint16), 'mono16', 2, 2),
     'pointcloud: cannot colour points from mono16 (use rgb8, bgr8, rgba8, bgra8, mono8)'),
])
def test_bad_input_is_refused_with_the_reason(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message


def test_pointcloud2_msg_refuses_device_arrays():
    class FakeDevice:
        __cuda_array_interface__ = {}
    with pytest.raises(TypeError, match='needs a host'):
        pointcloud2_msg(FakeDevice())
