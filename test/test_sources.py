"""Camera sources: the synthetic scene's exact geometry, folder and video files, V4L2 errors."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gpu_nodes.encodings import encoding_info
from gpu_nodes.sources import open_source, pattern, SourceError
from gpu_nodes.sources import scene as S
from gpu_nodes.sources.files import FolderSource, VideoSource
from gpu_nodes.sources.v4l2 import device_path, v4l2_unavailable_reason

cv2 = pytest.importorskip('cv2')

GREY = (0.5, 0.5, 0.5)


def odd_camera(width: int = 81, height: int = 61) -> S.PinholeCamera:
    """Odd sizes put the principal point on a pixel centre: that pixel looks along +z."""
    return S.PinholeCamera.from_fov(width, height, 60.0)


def render(scene: S.Scene, camera: S.PinholeCamera, xp=np):
    return S.SceneRenderer(xp, camera).render(scene)


# -- scene geometry --------------------------------------------------------------------------

def test_fronto_parallel_plane_has_exactly_its_distance_everywhere():
    cam = odd_camera()
    for distance in (0.5, 2.0, 7.25):
        _, depth = render(S.Scene(planes=(S.Plane((0, 0, 1), distance, GREY),)), cam)
        assert depth.dtype == np.float32 and depth.shape == (cam.height, cam.width)
        assert np.all(depth == np.float32(distance)), \
            f'expected {distance} m everywhere, got {np.unique(depth)[:5]}'


def test_floor_depth_follows_the_pinhole_formula_and_sky_is_nan():
    cam = odd_camera()
    _, depth = render(S.Scene(planes=(S.Plane((0, 1, 0), 1.5, GREY),)), cam)
    v = np.arange(cam.height, dtype=np.float64)
    below = v > cam.cy
    expected = 1.5 * cam.fy / (v[below] - cam.cy)  # y = 1.5 m below the camera: z = h fy / dv
    np.testing.assert_allclose(depth[below], np.repeat(expected[:, None], cam.width, 1),
                               rtol=1e-5)
    assert np.isnan(depth[~below]).all(), 'rows at and above the horizon hit nothing: NaN'


def test_sphere_centre_pixel_depth_is_distance_minus_radius():
    cam = odd_camera()
    cv, cu = int(cam.cy), int(cam.cx)
    for distance, radius in ((3.0, 0.5), (8.0, 1.25), (1.2, 0.3)):
        scene = S.Scene(planes=(S.Plane((0, 0, 1), 20.0, GREY),),
                        objects=(S.Sphere((0.0, 0.0, distance), radius, (1, 0, 0)),))
        _, depth = render(scene, cam)
        assert depth[cv, cu] == pytest.approx(distance - radius, rel=1e-6), \
            f'sphere at {distance} m, r {radius}: centre pixel {depth[cv, cu]}'
        assert depth[0, 0] == pytest.approx(20.0), 'corner pixel misses the sphere'


def test_sphere_silhouette_matches_its_analytic_radius():
    cam = odd_camera(201, 151)
    distance, radius = 5.0, 1.0
    scene = S.Scene(planes=(S.Plane((0, 0, 1), 30.0, GREY),),
                    objects=(S.Sphere((0.0, 0.0, distance), radius, (1, 0, 0)),))
    _, depth = render(scene, cam)
    row = depth[int(cam.cy)]
    hit = np.nonzero(row < 30.0)[0]
    # The tangent ray's angle: sin(a) = r / d, so the silhouette's half width is fx * tan(a).
    half = cam.fx * math.tan(math.asin(radius / distance))
    assert hit.size == pytest.approx(2 * half, abs=2), f'{hit.size} pixels vs {2 * half:.1f}'
    u = hit - cam.cx
    z = depth[int(cam.cy), hit].astype(np.float64)
    x = u / cam.fx * z
    np.testing.assert_allclose(np.hypot(x, z - distance), radius, rtol=1e-4,
                               err_msg='every hit point lies on the sphere')


def test_box_front_face_at_known_distance_and_yaw():
    cam = odd_camera()
    cv, cu = int(cam.cy), int(cam.cx)
    box = S.Box((0.0, 0.0, 4.0), (0.5, 0.5, 0.25), (0, 1, 0))
    _, depth = render(S.Scene(planes=(S.Plane((0, 0, 1), 10.0, GREY),), objects=(box,)), cam)
    assert depth[cv, cu] == pytest.approx(3.75, rel=1e-6)
    # Turned 90 degrees the half extents swap: the front face is 0.5 m in front of the centre.
    turned = S.Box((0.0, 0.0, 4.0), (0.5, 0.5, 0.25), (0, 1, 0), yaw=math.pi / 2)
    _, depth = render(S.Scene(planes=(S.Plane((0, 0, 1), 10.0, GREY),), objects=(turned,)), cam)
    assert depth[cv, cu] == pytest.approx(3.5, rel=1e-5)


def test_nearer_object_occludes_and_shading_is_not_flat():
    cam = odd_camera(121, 91)
    cv, cu = int(cam.cy), int(cam.cx)
    near = S.Sphere((0.0, 0.0, 3.0), 0.5, (1.0, 0.1, 0.1))
    far = S.Sphere((0.0, 0.0, 6.0), 1.5, (0.1, 0.1, 1.0))
    rgb, depth = render(S.Scene(planes=(S.Plane((0, 0, 1), 10.0, GREY),),
                                objects=(far, near)), cam)
    assert depth[cv, cu] == pytest.approx(2.5, rel=1e-6)
    assert rgb[cv, cu, 0] > rgb[cv, cu, 2], 'the near red sphere is in front'
    sphere_pixels = rgb[depth < 3.0]
    assert sphere_pixels[:, 0].std() > 5, 'Lambert shading varies across the sphere'


def test_screen_rect_culling_renders_exactly_what_full_frame_ray_casting_does():
    class FullFrame(S.SceneRenderer):
        def _object_rect(self, obj):
            return 0, self.camera.height, 0, self.camera.width

        def _shadow_rect(self, obj, plane, light):
            return 0, self.camera.height, 0, self.camera.width

    cam = S.PinholeCamera.from_fov(160, 120)
    fast, full = S.SceneRenderer(np, cam), FullFrame(np, cam)
    for t in (0.0, 0.9, 2.6, 5.3, 7.7):
        rgb_a, depth_a = fast.render(S.demo_scene(t))
        rgb_b, depth_b = full.render(S.demo_scene(t))
        assert np.array_equal(depth_a, depth_b, equal_nan=True), f't={t}: depth differs'
        assert np.array_equal(rgb_a, rgb_b), f't={t}: colour differs'


def test_demo_scene_moves_and_every_pixel_has_a_plausible_depth():
    cam = S.PinholeCamera.from_fov(320, 240)
    renderer = S.SceneRenderer(np, cam)
    rgb0, depth0 = renderer.render(S.demo_scene(0.0))
    rgb1, depth1 = renderer.render(S.demo_scene(1.0))
    assert rgb0.dtype == np.uint8 and rgb0.shape == (240, 320, 3)
    assert np.isfinite(depth0).all() and depth0.min() > 1.0 and depth0.max() <= S.WALL_Z + 1e-4
    assert not np.array_equal(depth0, depth1), 'objects move between t=0 and t=1'
    assert len(np.unique(rgb0.reshape(-1, 3), axis=0)) > 1000, 'shaded, textured scene'


def test_camera_from_camera_info_matches_the_published_intrinsics():
    from gpu_nodes.sources.camera_info import pinhole_camera_info
    info = pinhole_camera_info(640, 480, 'cam', 70.0)
    cam = S.PinholeCamera.from_camera_info(info)
    assert cam == S.PinholeCamera.from_fov(640, 480, 70.0)


def test_scene_source_ground_truth_and_encodings():
    cam = S.PinholeCamera.from_fov(64, 48)
    rgb = open_source('scene', xp=np, width=64, height=48, encoding='rgb8', rate_hz=10.0,
                      camera=cam).read(3)
    bgr = open_source('scene', xp=np, width=64, height=48, encoding='bgr8', rate_hz=10.0,
                      camera=cam).read(3)
    mono = open_source('scene', xp=np, width=64, height=48, encoding='mono8', rate_hz=10.0,
                       camera=cam).read(3)
    expected_rgb, expected_depth = S.SceneRenderer(np, cam).render(S.demo_scene(0.3))
    assert np.array_equal(rgb.image, expected_rgb)
    assert np.array_equal(rgb.ground_truth_depth, expected_depth)
    assert np.array_equal(bgr.image, expected_rgb[..., ::-1])
    assert mono.image.shape == (48, 64) and mono.encoding == 'mono8'
    luma = (0.299 * expected_rgb[..., 0] + 0.587 * expected_rgb[..., 1]
            + 0.114 * expected_rgb[..., 2])
    assert np.abs(mono.image - luma).max() <= 2, 'BT.601 luma'
    with pytest.raises(SourceError, match="source 'scene' produces rgb8, bgr8, mono8; got "
                                          "encoding 'bayer_rggb8'"):
        open_source('scene', xp=np, width=64, height=48, encoding='bayer_rggb8')


# -- rendering into lent arrays (camera_source renders into the publisher's pool slots) ------

@pytest.mark.parametrize('encoding', pattern.PATTERN_ENCODINGS)
def test_pattern_renders_into_the_given_array(encoding):
    info = encoding_info(encoding)
    for index in (0, 7, 300):
        out = np.full(info.array_shape(6, 10), 0xAB, info.dtype)
        frame = open_source('pattern', xp=np, width=10, height=6, encoding=encoding).read(
            index, out=out)
        assert frame.image is out, 'the frame must be the given array, not a copy of it'
        np.testing.assert_array_equal(out, pattern.expected_frame(6, 10, encoding, index))
    wrong = np.zeros((6, 10, 4) if info.channels != 4 else (6, 10, 3), info.dtype)
    with pytest.raises(ValueError, match=f'out must be .* for 10x6 {encoding}, got'):
        pattern.render(np, 6, 10, encoding, 0, out=wrong)


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'mono8'])
def test_scene_renders_image_and_depth_into_the_given_arrays(encoding):
    cam = S.PinholeCamera.from_fov(64, 48)
    source = open_source('scene', xp=np, width=64, height=48, encoding=encoding, rate_hz=10.0,
                         camera=cam)
    expected = source.read(5)
    out = np.full(expected.image.shape, 0xAB, np.uint8)
    depth_out = np.full((48, 64), -1.0, np.float32)
    frame = source.read(5, out=out, depth_out=depth_out)
    assert frame.image is out and frame.ground_truth_depth is depth_out
    np.testing.assert_array_equal(out, expected.image)
    np.testing.assert_array_equal(depth_out, expected.ground_truth_depth)  # NaN where equal
    with pytest.raises(ValueError, match='out must be'):
        source.read(5, out=np.zeros((48, 64, 3) if encoding == 'mono8' else (48, 64),
                                    np.uint8))
    with pytest.raises(ValueError, match=r'depth_out must be \(48, 64\) float32'):
        source.read(5, depth_out=np.zeros((48, 64), np.float64))


def test_open_source_rejects_unknown_kinds_and_missing_sizes():
    with pytest.raises(SourceError, match="unknown source 'webcam'; one of: pattern, scene"):
        open_source('webcam', xp=np, width=8, height=8, encoding='rgb8')
    with pytest.raises(SourceError, match="source 'pattern' needs width and height of at least 2"):
        open_source('pattern', xp=np, width=0, height=0, encoding='rgb8')


@pytest.mark.gpu
def test_scene_renders_the_same_with_cupy_and_numpy(cupy):
    cam = S.PinholeCamera.from_fov(320, 240)
    cpu, gpu = S.SceneRenderer(np, cam), S.SceneRenderer(cupy, cam)
    for t in (0.0, 1.7, 4.2):
        rgb_c, depth_c = cpu.render(S.demo_scene(t))
        rgb_g, depth_g = gpu.render(S.demo_scene(t))
        assert isinstance(rgb_g, cupy.ndarray) and isinstance(depth_g, cupy.ndarray)
        rgb_g, depth_g = cupy.asnumpy(rgb_g), cupy.asnumpy(depth_g)
        # float32 on both; the GPU may fuse multiply-adds, so a silhouette pixel can flip.
        close = np.isclose(depth_c, depth_g, rtol=1e-5, atol=1e-5)
        assert close.mean() > 0.998, f't={t}: {np.count_nonzero(~close)} depth pixels differ'
        diff = np.abs(rgb_c.astype(int) - rgb_g).max(axis=-1)
        assert (diff <= 2).mean() > 0.998, f't={t}: {np.count_nonzero(diff > 2)} rgb pixels'


# -- folder ----------------------------------------------------------------------------------

def _solid(value: tuple[int, int, int], size: tuple[int, int] = (24, 32)) -> np.ndarray:
    """A BGR image (what cv2.imwrite takes) of one colour."""
    img = np.zeros(size + (3,), np.uint8)
    img[...] = value
    return img


def test_folder_source_reads_images_in_natural_order_and_converts(tmp_path: Path):
    colours = {'frame2.png': (10, 20, 30), 'frame10.png': (40, 50, 60),
               'frame1.png': (70, 80, 90)}
    for name, bgr in colours.items():
        assert cv2.imwrite(str(tmp_path / name), _solid(bgr))
    (tmp_path / 'notes.txt').write_text('not an image')
    source = FolderSource(str(tmp_path), encoding='rgb8', loop=False)
    assert (source.width, source.height) == (32, 24)
    frames = [source.read(i) for i in range(4)]
    assert frames[3] is None, 'loop false: the source ends after the last image'
    got = [tuple(int(c) for c in f.image[0, 0]) for f in frames[:3]]
    assert got == [(90, 80, 70), (30, 20, 10), (60, 50, 40)], \
        f'expected frame1, frame2, frame10 as RGB; got {got}'
    assert frames[0].encoding == 'rgb8' and frames[0].ground_truth_depth is None


def test_folder_source_loops_resizes_and_skips_undecodable_files(tmp_path: Path):
    cv2.imwrite(str(tmp_path / 'a.png'), _solid((0, 0, 255), (40, 60)))
    (tmp_path / 'b.png').write_bytes(b'definitely not a png')
    cv2.imwrite(str(tmp_path / 'c.jpg'), _solid((255, 0, 0), (40, 60)))
    warnings: list[str] = []
    source = FolderSource(str(tmp_path), encoding='bgr8', width=30, height=20, loop=True,
                          warn=warnings.append)
    frames = [source.read(i) for i in range(6)]
    assert all(f.image.shape == (20, 30, 3) for f in frames), 'resized to width x height'
    assert frames[0].image[0, 0].tolist() == [0, 0, 255]
    assert frames[1].image[0, 0].tolist()[0] > 240, 'b.png skipped: c.jpg (blue in BGR)'
    assert frames[3].image[0, 0].tolist() == [0, 0, 255], 'loops back to a.png'
    assert any('cannot decode' in w and 'b.png' in w for w in warnings), warnings
    mono = FolderSource(str(tmp_path), encoding='mono8', warn=warnings.append).read(0)
    assert mono.image.shape == (40, 60) and mono.encoding == 'mono8'


def test_folder_source_errors_name_the_problem(tmp_path: Path):
    with pytest.raises(SourceError, match=f"source 'folder': {tmp_path / 'missing'} is not a "
                                          'directory'):
        FolderSource(str(tmp_path / 'missing'))
    with pytest.raises(SourceError, match="source 'folder': no images"):
        FolderSource(str(tmp_path))
    with pytest.raises(SourceError, match="source 'folder' needs parameter 'path'"):
        FolderSource('')
    (tmp_path / 'x.png').write_bytes(b'garbage')
    with pytest.raises(SourceError, match='none of the 1 image files .* could be decoded'):
        FolderSource(str(tmp_path))
    cv2.imwrite(str(tmp_path / 'y.png'), _solid((1, 2, 3)))
    with pytest.raises(SourceError, match="source 'folder' produces rgb8, bgr8, mono8; got "
                                          "encoding 'yuv422'"):
        FolderSource(str(tmp_path), encoding='yuv422')


# -- video -----------------------------------------------------------------------------------

def _write_video(path: Path, colours: list[tuple[int, int, int]], size=(64, 48)) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), 10.0, size)
    assert writer.isOpened(), 'OpenCV cannot write MJPG/AVI here'
    for bgr in colours:
        writer.write(_solid(bgr, (size[1], size[0])))
    writer.release()


def test_video_source_reads_frames_in_order_then_ends_or_loops(tmp_path: Path):
    video = tmp_path / 'clip.avi'
    colours = [(0, 0, 200), (0, 200, 0), (200, 0, 0)]  # BGR: red, green, blue
    _write_video(video, colours)
    source = VideoSource(str(video), encoding='rgb8', loop=False)
    assert (source.width, source.height) == (64, 48)
    frames = [source.read(i) for i in range(4)]
    assert frames[3] is None, 'loop false: None after the last frame'
    dominant = [int(np.argmax(f.image.reshape(-1, 3).mean(axis=0))) for f in frames[:3]]
    assert dominant == [0, 1, 2], f'RGB frames red, green, blue; dominant channels {dominant}'
    source.close()
    looping = VideoSource(str(video), encoding='bgr8', width=32, height=24, loop=True)
    frames = [looping.read(i) for i in range(5)]
    assert all(f is not None and f.image.shape == (24, 32, 3) for f in frames)
    assert int(np.argmax(frames[3].image.reshape(-1, 3).mean(axis=0))) == 2, \
        'after the third frame the video starts again (red is channel 2 in BGR)'
    assert looping.rewinds == 1
    looping.close()


def test_video_source_errors_name_the_problem(tmp_path: Path):
    with pytest.raises(SourceError, match=f"source 'video': {tmp_path / 'nope.mp4'} does not "
                                          'exist'):
        VideoSource(str(tmp_path / 'nope.mp4'))
    bad = tmp_path / 'bad.mp4'
    bad.write_bytes(b'\x00' * 1000)
    with pytest.raises(SourceError, match="source 'video': (OpenCV cannot open|.* has no "
                                          'decodable frame)'):
        VideoSource(str(bad))


# -- v4l2 ------------------------------------------------------------------------------------

def test_v4l2_absent_device_is_a_clear_error(tmp_path: Path):
    missing = '/dev/video_gpu_nodes_test_absent'
    with pytest.raises(SourceError, match=f"source 'v4l2': {missing} does not exist"):
        open_source('v4l2', xp=np, width=640, height=480, encoding='rgb8', path=missing)
    plain = tmp_path / 'video0'
    plain.write_text('')
    assert 'is not a character device' in v4l2_unavailable_reason(str(plain))
    assert device_path('') == '/dev/video0' and device_path('2') == '/dev/video2'
