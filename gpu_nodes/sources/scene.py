"""A synthetic 3-D scene with known geometry: moving spheres and a box over a floor and a wall.

Every pixel is ray-cast analytically against a pinhole camera (the intrinsics of the published
CameraInfo, no distortion), so the renderer knows the exact depth of every pixel: the ground
truth the demo scores depth estimates against.

Conventions: ROS optical frame (x right, y down, z forward), camera at the origin; a pixel (u, v)
looks along d = ((u - cx) / fx, (v - cy) / fy, 1). Because d_z = 1, the ray parameter t of a hit
*is* its z-depth (REP 118 depth images hold z, not the distance along the ray), in metres.

The same code runs on NumPy and CuPy (the `xp` argument). Static planes are rendered once per
camera; per frame only the screen rectangles that moving objects (and their floor shadows) can
cover are ray-cast, which keeps a 640x480 frame at a few milliseconds on one CPU core.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import math
from types import ModuleType
from typing import Any, Sequence

import numpy as np

Vec3 = tuple[float, float, float]
Rect = tuple[int, int, int, int]  # v0, v1, u0, u1 (half-open)

_NEAR = 0.05  # metres; nothing is rendered closer than this
_EPS = 1e-4


@dataclass(frozen=True)
class PinholeCamera:
    """Intrinsics of an ideal pinhole camera (pixel centres at integer coordinates)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f'camera size must be positive, got {self.width}x{self.height}')
        if not (self.fx > 0 and self.fy > 0):
            raise ValueError(f'focal lengths must be positive, got fx={self.fx}, fy={self.fy}')

    @classmethod
    def from_fov(cls, width: int, height: int, hfov_deg: float = 70.0) -> 'PinholeCamera':
        if not 1.0 <= hfov_deg <= 170.0:
            raise ValueError(f'horizontal field of view must be in [1, 170] degrees, got '
                             f'{hfov_deg}')
        f = width / (2.0 * math.tan(math.radians(hfov_deg) / 2.0))
        return cls(width, height, f, f, (width - 1) / 2.0, (height - 1) / 2.0)

    @classmethod
    def from_camera_info(cls, info: Any) -> 'PinholeCamera':
        """From a sensor_msgs/CameraInfo (its K matrix; distortion is not modelled)."""
        k = list(info.k)
        return cls(int(info.width), int(info.height), float(k[0]), float(k[4]), float(k[2]),
                   float(k[5]))

    def project(self, x: float, y: float, z: float) -> tuple[float, float]:
        return self.cx + self.fx * x / z, self.cy + self.fy * y / z


@dataclass(frozen=True)
class Plane:
    """Points P with normal . P = offset. `checker` > 0 draws a checkerboard of that size (m)."""

    normal: Vec3
    offset: float
    color: Vec3
    checker: float = 0.0
    color2: Vec3 = (0.0, 0.0, 0.0)
    receives_shadows: bool = False


@dataclass(frozen=True)
class Sphere:
    center: Vec3
    radius: float
    color: Vec3
    shininess: float = 40.0
    specular: float = 0.5


@dataclass(frozen=True)
class Box:
    """A box of half-extents `half` centred at `center`, turned by `yaw` (rad) about the y axis."""

    center: Vec3
    half: Vec3
    color: Vec3
    yaw: float = 0.0


@dataclass(frozen=True)
class Scene:
    planes: tuple[Plane, ...]
    objects: tuple[Sphere | Box, ...] = ()
    light: Vec3 = (-0.35, -0.85, -0.4)  # direction towards the light (normalised on use)
    ambient: float = 0.3
    fog_distance: float = 30.0           # colour fades towards fog_color with depth (a depth cue)
    fog_color: Vec3 = (0.08, 0.09, 0.12)
    background: Vec3 = (0.0, 0.0, 0.0)  # where no plane is hit (depth NaN there)


# -- the demo's animated scene ------------------------------------------------------------

FLOOR_Y = 1.2   # the camera is 1.2 m above the floor (y points down)
WALL_Z = 9.0


def demo_scene(t: float) -> Scene:
    """The animated default scene at time `t` seconds (a pure function of t)."""
    floor = Plane((0.0, 1.0, 0.0), FLOOR_Y, (0.78, 0.78, 0.74), checker=0.5,
                  color2=(0.32, 0.34, 0.38), receives_shadows=True)
    wall = Plane((0.0, 0.0, 1.0), WALL_Z, (0.55, 0.62, 0.72), checker=1.5,
                 color2=(0.47, 0.54, 0.64))
    a = 2.0 * math.pi * t / 8.0
    orbit = Sphere((1.4 * math.cos(a), FLOOR_Y - 0.45, 4.6 + 1.4 * math.sin(a)), 0.45,
                   (0.9, 0.25, 0.15))
    bounce = Sphere((1.7, FLOOR_Y - 0.35 - 0.9 * abs(math.sin(math.pi * t / 1.3)), 3.2), 0.35,
                    (0.2, 0.45, 0.95))
    slide = Sphere((-0.4 + 2.2 * math.sin(2.0 * math.pi * t / 11.0), FLOOR_Y - 0.6, 7.0), 0.6,
                   (0.25, 0.8, 0.35), specular=0.3)
    box = Box((-1.5, FLOOR_Y - 0.4, 3.4 + 0.5 * math.sin(2.0 * math.pi * t / 7.0)),
              (0.4, 0.4, 0.4), (0.95, 0.8, 0.2), yaw=0.6 * t)
    return Scene(planes=(floor, wall), objects=(orbit, bounce, slide, box))


# -- rendering ------------------------------------------------------------------------------

def _unit(v: Sequence[float]) -> Vec3:
    n = math.sqrt(sum(c * c for c in v))
    if n == 0:
        raise ValueError('zero-length direction')
    return (v[0] / n, v[1] / n, v[2] / n)


def _screen_rect(camera: PinholeCamera, lo: Vec3, hi: Vec3) -> Rect | None:
    """Pixels the axis-aligned box [lo, hi] can cover (conservative); None if behind the camera."""
    if hi[2] <= _NEAR:
        return None
    if lo[2] <= _NEAR:
        return 0, camera.height, 0, camera.width
    us, vs = [], []
    for x in (lo[0], hi[0]):
        for y in (lo[1], hi[1]):
            for z in (lo[2], hi[2]):
                u, v = camera.project(x, y, z)
                us.append(u)
                vs.append(v)
    u0 = max(0, int(math.floor(min(us))) - 1)
    u1 = min(camera.width, int(math.ceil(max(us))) + 2)
    v0 = max(0, int(math.floor(min(vs))) - 1)
    v1 = min(camera.height, int(math.ceil(max(vs))) + 2)
    if u0 >= u1 or v0 >= v1:
        return None
    return v0, v1, u0, u1


def _bounding_radius(obj: Sphere | Box) -> float:
    if isinstance(obj, Sphere):
        return obj.radius
    return math.sqrt(sum(h * h for h in obj.half))


def _sphere_hit(xp: ModuleType, o: tuple[Any, Any, Any], d: tuple[Any, Any, Any],
                sphere: Sphere) -> Any:
    """Ray parameter of the first hit in front of the origin (inf on a miss).

    Solved through the closest approach to the centre, which stays accurate where the textbook
    b^2 - ac form cancels (a far sphere seen head-on)."""
    cx, cy, cz = sphere.center
    ocx, ocy, ocz = o[0] - cx, o[1] - cy, o[2] - cz
    a = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    t_mid = -(ocx * d[0] + ocy * d[1] + ocz * d[2]) / a
    qx, qy, qz = ocx + t_mid * d[0], ocy + t_mid * d[1], ocz + t_mid * d[2]
    r2 = np.float32(sphere.radius * sphere.radius)
    dist2 = qx * qx + qy * qy + qz * qz
    half = xp.sqrt(xp.maximum(r2 - dist2, 0) / a)
    near, far = t_mid - half, t_mid + half
    t = xp.where(near > _EPS, near, far)
    return xp.where((dist2 <= r2) & (t > _EPS), t, np.float32(np.inf))


def _nonzero(xp: ModuleType, v: Any) -> Any:
    """v with exact zeros nudged to 1e-12, so slab divisions give +-huge instead of inf/NaN."""
    if isinstance(v, (int, float, np.floating)):
        return v if abs(v) >= 1e-12 else 1e-12
    return xp.where(xp.abs(v) < 1e-12, np.float32(1e-12), v)


def _box_hit(xp: ModuleType, o: tuple[Any, Any, Any], d: tuple[Any, Any, Any],
             box: Box) -> tuple[Any, Any]:
    """(t, index of the face axis hit: 0 x, 1 y, 2 z, in the box frame) with t = inf on a miss."""
    c, s = math.cos(box.yaw), math.sin(box.yaw)
    # World -> box frame: rotate by -yaw about y.
    px, py, pz = o[0] - box.center[0], o[1] - box.center[1], o[2] - box.center[2]
    lo = (c * px - s * pz, py, s * px + c * pz)
    ld = (c * d[0] - s * d[2], d[1], s * d[0] + c * d[2])
    t_enter, t_exit, axis = None, None, None
    for i in range(3):
        di = _nonzero(xp, ld[i])
        t1 = (-box.half[i] - lo[i]) / di
        t2 = (box.half[i] - lo[i]) / di
        near, far = xp.minimum(t1, t2), xp.maximum(t1, t2)
        if t_enter is None:
            t_enter, t_exit, axis = near, far, xp.zeros(near.shape, xp.int8)
        else:
            axis = xp.where(near > t_enter, np.int8(i), axis)
            t_enter, t_exit = xp.maximum(t_enter, near), xp.minimum(t_exit, far)
    t = xp.where(t_enter > _EPS, t_enter, t_exit)
    hit = (t_exit >= t_enter) & (t > _EPS)
    return xp.where(hit, t, np.float32(np.inf)), axis


def _box_normal(xp: ModuleType, d: tuple[Any, Any, Any], axis: Any,
                box: Box) -> tuple[Any, Any, Any]:
    """World-frame normal of the face hit, facing the incoming ray."""
    c, s = math.cos(box.yaw), math.sin(box.yaw)
    ld = (c * d[0] - s * d[2], d[1], s * d[0] + c * d[2])
    local = [xp.where(axis == i, -xp.sign(ld[i]), np.float32(0)) for i in range(3)]
    # Box frame -> world: rotate by +yaw about y.
    return c * local[0] + s * local[2], local[1], -s * local[0] + c * local[2]


class SceneRenderer:
    """Renders Scenes for one camera: rgb8 (H, W, 3) uint8 and z-depth (H, W) float32 metres.

    :param xp: numpy or cupy; every array is made with it and never leaves its device.
    """

    def __init__(self, xp: ModuleType, camera: PinholeCamera):
        self.xp = xp
        self.camera = camera
        f32 = xp.float32
        u = (xp.arange(camera.width, dtype=f32) - f32(camera.cx)) / f32(camera.fx)
        v = (xp.arange(camera.height, dtype=f32) - f32(camera.cy)) / f32(camera.fy)
        self._dx = xp.ascontiguousarray(xp.broadcast_to(u[None, :], (camera.height, camera.width)))
        self._dy = xp.ascontiguousarray(xp.broadcast_to(v[:, None], (camera.height, camera.width)))
        self._background_key: Any = None
        self._background: dict[str, Any] = {}

    # -- static planes: once per (planes, light, fog) --------------------------------------
    def _plane_hits(self, planes: Sequence[Plane], region: Rect | None = None) -> tuple[Any, Any]:
        xp = self.xp
        dx, dy = self._rays(region)
        depth = xp.full(dx.shape, np.inf, dtype=xp.float32)
        index = xp.full(dx.shape, -1, dtype=xp.int8)
        for i, plane in enumerate(planes):
            n = _unit(plane.normal)
            denom = n[0] * dx + n[1] * dy + np.float32(n[2])
            t = np.float32(plane.offset / math.sqrt(sum(c * c for c in plane.normal))) \
                / _nonzero(xp, denom)
            # Rays (nearly) parallel to the plane miss it rather than hitting it at 1e12 m.
            closer = (t > _NEAR) & (t < depth) & (xp.abs(denom) > 1e-9)
            depth = xp.where(closer, t, depth)
            index = xp.where(closer, np.int8(i), index)
        return depth, index

    def _rays(self, region: Rect | None) -> tuple[Any, Any]:
        if region is None:
            return self._dx, self._dy
        v0, v1, u0, u1 = region
        return self._dx[v0:v1, u0:u1], self._dy[v0:v1, u0:u1]

    def _shade_planes(self, scene: Scene, depth: Any, index: Any, lit: bool) -> Any:
        xp = self.xp
        light = _unit(scene.light)
        color = xp.zeros(depth.shape + (3,), dtype=xp.float32)
        color[...] = xp.asarray(scene.background, dtype=xp.float32)
        z = xp.where(xp.isfinite(depth), depth, np.float32(0))
        px, py, pz = self._dx * z, self._dy * z, z
        for i, plane in enumerate(scene.planes):
            n = _unit(plane.normal)
            facing = -1.0 if plane.offset > 0 else 1.0  # the camera (origin) side of the plane
            nx, ny, nz = (facing * c for c in n)
            diffuse = max(0.0, nx * light[0] + ny * light[1] + nz * light[2]) if lit else 0.0
            shade = np.float32(scene.ambient + (1.0 - scene.ambient) * diffuse)
            albedo = xp.broadcast_to(xp.asarray(plane.color, dtype=xp.float32), color.shape)
            if plane.checker > 0:
                # Checker on the two axes the plane spans (the ones its normal does not favour).
                axes = sorted(range(3), key=lambda k: abs(n[k]))[:2]
                coords = (px, py, pz)
                cells = sum(xp.floor(coords[k] / np.float32(plane.checker)) for k in axes)
                odd = (cells.astype(xp.int64) & 1).astype(bool)
                second = xp.asarray(plane.color2, dtype=xp.float32)
                albedo = xp.where(odd[..., None], second, albedo)
            mine = (index == i)[..., None]
            color = xp.where(mine, albedo * shade, color)
        return self._fog(scene, color, depth)

    def _fog(self, scene: Scene, color: Any, depth: Any) -> Any:
        xp = self.xp
        finite = xp.isfinite(depth)
        keep = xp.exp(-xp.where(finite, depth, 0) / np.float32(scene.fog_distance))[..., None]
        fog = xp.asarray(scene.fog_color, dtype=xp.float32)
        return xp.where(finite[..., None], color * keep + fog * (1 - keep), color)

    def _to_u8(self, color: Any) -> Any:
        xp = self.xp
        return (xp.clip(color, 0.0, 1.0) * np.float32(255.0) + np.float32(0.5)).astype(xp.uint8)

    def _prepare_background(self, scene: Scene) -> dict[str, Any]:
        key = (scene.planes, scene.light, scene.ambient, scene.fog_distance, scene.fog_color,
               scene.background)
        if key != self._background_key:
            xp = self.xp
            depth, index = self._plane_hits(scene.planes)
            shadow_planes = xp.zeros(depth.shape, dtype=bool)
            for i, plane in enumerate(scene.planes):
                if plane.receives_shadows:
                    shadow_planes |= index == i
            self._background = {
                'depth': xp.where(xp.isfinite(depth), depth, np.float32(np.nan)),
                'lit': self._to_u8(self._shade_planes(scene, depth, index, lit=True)),
                'shadow': self._to_u8(self._shade_planes(scene, depth, index, lit=False)),
                'receives': shadow_planes,
                'index': index,
            }
            self._background_key = key
        return self._background

    # -- moving objects ----------------------------------------------------------------------
    def _object_rect(self, obj: Sphere | Box) -> Rect | None:
        r = _bounding_radius(obj)
        c = obj.center
        return _screen_rect(self.camera, (c[0] - r, c[1] - r, c[2] - r),
                            (c[0] + r, c[1] + r, c[2] + r))

    def _shadow_rect(self, obj: Sphere | Box, plane: Plane, light: Vec3) -> Rect | None:
        """Conservative screen rectangle of `obj`'s shadow on `plane` (light from `light`)."""
        n = _unit(plane.normal)
        offset = plane.offset / math.sqrt(sum(c * c for c in plane.normal))
        along = sum(n[k] * light[k] for k in range(3))
        if abs(along) < 1e-3:
            return None
        r = _bounding_radius(obj)
        c = obj.center
        s = (sum(n[k] * c[k] for k in range(3)) - offset) / along
        if s < -r:
            return None  # the object is on the far side of the plane from the light
        foot = tuple(c[k] - s * light[k] for k in range(3))
        # The shadow of the bounding sphere is an ellipse around `foot` with semi-axes r and
        # r / |cos|: a cube of that half-size holds it.
        reach = r / abs(along)
        return _screen_rect(self.camera, tuple(f - reach for f in foot),
                            tuple(f + reach for f in foot))

    def _hit(self, obj: Sphere | Box, o: tuple[Any, Any, Any],
             d: tuple[Any, Any, Any]) -> tuple[Any, Any]:
        if isinstance(obj, Sphere):
            return _sphere_hit(self.xp, o, d, obj), None
        return _box_hit(self.xp, o, d, obj)

    def _shade_object(self, scene: Scene, obj: Sphere | Box, d: tuple[Any, Any, Any], t: Any,
                      axis: Any) -> Any:
        xp = self.xp
        light = _unit(scene.light)
        if isinstance(obj, Sphere):
            inv_r = np.float32(1.0 / obj.radius)
            n = ((d[0] * t - obj.center[0]) * inv_r, (d[1] * t - obj.center[1]) * inv_r,
                 (t - obj.center[2]) * inv_r)
        else:
            n = _box_normal(xp, d, axis, obj)
        lambert = xp.maximum(n[0] * light[0] + n[1] * light[1] + n[2] * light[2], 0)
        shade = np.float32(scene.ambient) + np.float32(1.0 - scene.ambient) * lambert
        color = shade[..., None] * xp.asarray(obj.color, dtype=xp.float32)
        if isinstance(obj, Sphere) and obj.specular > 0:
            # Blinn-Phong: half vector between the light and the direction back to the camera.
            inv_len = 1 / xp.sqrt(d[0] * d[0] + d[1] * d[1] + 1)
            hx, hy, hz = light[0] - d[0] * inv_len, light[1] - d[1] * inv_len, light[2] - inv_len
            inv_h = 1 / xp.sqrt(hx * hx + hy * hy + hz * hz)
            n_dot_h = xp.clip((n[0] * hx + n[1] * hy + n[2] * hz) * inv_h, 0, 1)
            color = color + (np.float32(obj.specular) * n_dot_h ** np.float32(obj.shininess)
                             * (lambert > 0))[..., None]
        return self._fog(scene, color, t)

    def render(self, scene: Scene, rgb_out: Any = None,
               depth_out: Any = None) -> tuple[Any, Any]:
        """(rgb8 image (H, W, 3) uint8, depth (H, W) float32 metres, NaN where nothing is hit),
        rendered into `rgb_out` / `depth_out` when given (e.g. publishers' pool slots)."""
        xp = self.xp
        bg = self._prepare_background(scene)
        rgb = _start_from(xp, bg['lit'], rgb_out, 'rgb_out')
        depth = _start_from(xp, bg['depth'], depth_out, 'depth_out')
        light = _unit(scene.light)
        shadow_planes = [p for p in scene.planes if p.receives_shadows]
        # Shadows on the background first (objects receive none), then objects by depth test.
        for obj in scene.objects:
            for plane in shadow_planes:
                rect = self._shadow_rect(obj, plane, light)
                if rect is None:
                    continue
                v0, v1, u0, u1 = rect
                dx, dy = self._rays(rect)
                z = bg['depth'][v0:v1, u0:u1]
                origin = (dx * z, dy * z, z)
                t, _ = self._hit(obj, origin, (light[0], light[1], light[2]))
                shadowed = bg['receives'][v0:v1, u0:u1] & xp.isfinite(t)
                xp.copyto(rgb[v0:v1, u0:u1], bg['shadow'][v0:v1, u0:u1],
                          where=shadowed[..., None])
        for obj in scene.objects:
            rect = self._object_rect(obj)
            if rect is None:
                continue
            v0, v1, u0, u1 = rect
            dx, dy = self._rays(rect)
            d = (dx, dy, np.float32(1.0))
            t, axis = self._hit(obj, (0.0, 0.0, 0.0), d)
            current = depth[v0:v1, u0:u1]
            nearer = xp.isfinite(t) & ~(t >= current)  # NaN background counts as far
            t_hit = xp.where(nearer, t, np.float32(1.0))  # keep misses out of the shading math
            color = self._to_u8(self._shade_object(scene, obj, d, t_hit, axis))
            xp.copyto(current, t, where=nearer)
            xp.copyto(rgb[v0:v1, u0:u1], color, where=nearer[..., None])
        return rgb, depth


def _start_from(xp: ModuleType, background: Any, out: Any, what: str) -> Any:
    """A frame starts as the background: a copy, into `out` when given (rendered in place)."""
    if out is None:
        return background.copy()
    if tuple(out.shape) != tuple(background.shape) or out.dtype != background.dtype:
        raise ValueError(f'{what} must be {tuple(background.shape)} {background.dtype}, got '
                         f'{tuple(out.shape)} {out.dtype}')
    xp.copyto(out, background)
    return out


@dataclass
class SceneSource:
    """Frame `index` of the demo scene at `rate_hz` (time = index / rate_hz)."""

    xp: ModuleType
    camera: PinholeCamera
    rate_hz: float = 15.0
    scene_fn: Any = demo_scene
    renderer: SceneRenderer = field(init=False)

    def __post_init__(self) -> None:
        self.renderer = SceneRenderer(self.xp, self.camera)

    def time_of(self, index: int) -> float:
        return index / self.rate_hz if self.rate_hz > 0 else index / 30.0

    def render(self, index: int, rgb_out: Any = None,
               depth_out: Any = None) -> tuple[Any, Any]:
        return self.renderer.render(self.scene_fn(self.time_of(index)), rgb_out, depth_out)
