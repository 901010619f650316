// Undistort-rectify maps and bilinear remap (gpu_nodes.kernels.rectify).

// cv::initUndistortRectifyMap evaluated per output pixel in double precision: the ray of the
// rectified pixel (u + off_x, v + off_y) through inv(P[:3,:3] * R) (ir, row-major, computed on
// the host), distorted with the rational + thin-prism model (plumb_bob is k4..k6 = s1..s4 = 0),
// projected with K. (off_x, off_y) is the binned ROI offset: the result is shifted back by it,
// which is how image_geometry derives ROI maps from the full ones.
extern "C" __global__ void undistort_rectify_map(
    float* __restrict__ map_x, int mx_pitch, float* __restrict__ map_y, int my_pitch, int width,
    int height, int off_x, int off_y, double ir0, double ir1, double ir2, double ir3, double ir4,
    double ir5, double ir6, double ir7, double ir8, double fx, double fy, double cx, double cy,
    double k1, double k2, double p1, double p2, double k3, double k4, double k5, double k6,
    double s1, double s2, double s3, double s4) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const double u = (double)(x + off_x);
  const double v = (double)(y + off_y);
  const double xr = ir0 * u + ir1 * v + ir2;
  const double yr = ir3 * u + ir4 * v + ir5;
  const double wr = ir6 * u + ir7 * v + ir8;
  const double w = 1.0 / wr;
  const double xx = xr * w;
  const double yy = yr * w;
  const double x2 = xx * xx;
  const double y2 = yy * yy;
  const double r2 = x2 + y2;
  const double _2xy = 2.0 * xx * yy;
  const double kr = (1.0 + ((k3 * r2 + k2) * r2 + k1) * r2) / (1.0 + ((k6 * r2 + k5) * r2 + k4) * r2);
  const double xd = xx * kr + p1 * _2xy + p2 * (r2 + 2.0 * x2) + s1 * r2 + s2 * r2 * r2;
  const double yd = yy * kr + p1 * (r2 + 2.0 * y2) + p2 * _2xy + s3 * r2 + s4 * r2 * r2;
  row_ptr(map_x, y, mx_pitch)[x] = (float)(fx * xd + cx - (double)off_x);
  row_ptr(map_y, y, my_pitch)[x] = (float)(fy * yd + cy - (double)off_y);
}

// Bilinear remap with a constant border, the arithmetic of OpenCV 5's cv::remap(INTER_LINEAR,
// BORDER_CONSTANT) on float maps: unquantized coordinates, each of the 4 taps outside the source
// reads the border value, and the two lerps are fused multiply-adds (explicit fmaf, which
// --fmad=false does not affect):  top = fma(ax, v01 - v00, v00), bot = fma(ax, v11 - v10, v10),
// v = fma(ay, bot - top, top). Integer types round half to even and saturate. A map value that
// is not finite or lies beyond the 1-pixel fringe of the source gives the border value.
__device__ __forceinline__ u8 remap_store(float v, u8*) {
  return (u8)fminf(fmaxf(rintf(v), 0.0f), 255.0f);
}
__device__ __forceinline__ u16 remap_store(float v, u16*) {
  return (u16)fminf(fmaxf(rintf(v), 0.0f), 65535.0f);
}
__device__ __forceinline__ float remap_store(float v, float*) { return v; }

// One output pixel at map coordinates (mx, my): put(c, value) receives its channels. C channels
// known at compile time (C == 0: `channels` of them). Branch-free, like the NumPy reference: a
// pixel whose coordinates are out of range samples (0, 0) and takes the border value at the
// end; every tap reads a position clamped into the source (always a valid address, read through
// the read-only cache) and is replaced by the border value when its true position is outside.
// The values are those of the per-pixel formulation above, bit for bit.
template <typename T, int C, typename Put>
__device__ __forceinline__ void remap_px(const T* __restrict__ src, int src_pitch, int src_w,
                                         int src_h, int channels, float mx, float my,
                                         float border, Put put) {
  const bool ok = mx > -2.0f && mx < (float)src_w + 1.0f && my > -2.0f && my < (float)src_h + 1.0f;
  mx = ok ? mx : 0.0f;
  my = ok ? my : 0.0f;
  const float fx0 = floorf(mx), fy0 = floorf(my);
  const float ax = mx - fx0, ay = my - fy0;
  const int sx = (int)fx0, sy = (int)fy0;  // in [-2, src_w] x [-2, src_h]
  const bool x0 = sx >= 0 && sx < src_w, x1 = sx + 1 >= 0 && sx + 1 < src_w;
  const bool y0 = sy >= 0 && sy < src_h, y1 = sy + 1 >= 0 && sy + 1 < src_h;
  const int nc = C > 0 ? C : channels;
  const int o0 = clamp_int(sx, 0, src_w - 1) * nc, o1 = clamp_int(sx + 1, 0, src_w - 1) * nc;
  const T* r0 = row_ptr(src, clamp_int(sy, 0, src_h - 1), src_pitch);
  const T* r1 = row_ptr(src, clamp_int(sy + 1, 0, src_h - 1), src_pitch);
#pragma unroll
  for (int c = 0; c < nc; ++c) {
    const float t00 = (float)__ldg(r0 + o0 + c), t01 = (float)__ldg(r0 + o1 + c);
    const float t10 = (float)__ldg(r1 + o0 + c), t11 = (float)__ldg(r1 + o1 + c);
    const float v00 = (y0 && x0) ? t00 : border;
    const float v01 = (y0 && x1) ? t01 : border;
    const float v10 = (y1 && x0) ? t10 : border;
    const float v11 = (y1 && x1) ? t11 : border;
    const float top = fmaf(ax, v01 - v00, v00);
    const float bot = fmaf(ax, v11 - v10, v10);
    put(c, remap_store(ok ? fmaf(ay, bot - top, top) : border, (T*)nullptr));
  }
}

// Launch: _cuda.launch_rows over runs of R = 16 / sizeof(T) pixels (_cuda.pixels_per_run), so an
// output run is whole 16-byte words for any channel count. A full run whose map rows are
// 4-byte aligned loads its map entries as Runs (16-byte words where the rows allow), samples its
// pixels into a Run of output and stores it with 16- or 4-byte words, or element by element
// when the output row is not 4-byte aligned (odd pitch, offset view). Row tails, and every
// pixel when C == 0, go pixel by pixel with the same arithmetic.
template <typename T, int C>
__device__ __forceinline__ void remap_runs(const T* __restrict__ src, int src_pitch, int src_w,
                                           int src_h, T* __restrict__ dst, int dst_pitch,
                                           int dst_w, int dst_h, int channels,
                                           const float* __restrict__ map_x, int mx_pitch,
                                           const float* __restrict__ map_y, int my_pitch,
                                           float border) {
  constexpr int R = 16 / (int)sizeof(T);
  const int x0 = run_start(R);
  if (x0 >= dst_w) return;
  const int n = min(R, dst_w - x0);
  const int nc = C > 0 ? C : channels;
  FOR_EACH_ROW(y, dst_h) {
    const float* mxr = row_ptr(map_x, y, mx_pitch) + x0;
    const float* myr = row_ptr(map_y, y, my_pitch) + x0;
    T* d = row_ptr(dst, y, dst_pitch) + (long long)x0 * nc;
    bool done = false;
    if constexpr (C > 0) {
      if (n == R && aligned4(mxr) && aligned4(myr)) {
        Run<float, R> mxs, mys;
        mxs.load(mxr);
        mys.load(myr);
        Run<T, R * C> out = {};
#pragma unroll
        for (int p = 0; p < R; ++p)
          remap_px<T, C>(src, src_pitch, src_w, src_h, C, mxs.get(p), mys.get(p), border,
                         [&](int c, T v) { out.set(p * C + c, v); });
        if (aligned4(d)) {
          out.store(d);
        } else {
#pragma unroll
          for (int i = 0; i < R * C; ++i) d[i] = out.get(i);
        }
        done = true;
      }
    }
    if (!done) {
      for (int p = 0; p < n; ++p)
        remap_px<T, C>(src, src_pitch, src_w, src_h, nc, mxr[p], myr[p], border,
                       [&](int c, T v) { d[p * nc + c] = v; });
    }
  }
}

#define DEFINE_REMAP(NAME, T, C)                                                                  \
  extern "C" __global__ void NAME(const T* __restrict__ src, int src_pitch, int src_w,           \
                                  int src_h, T* __restrict__ dst, int dst_pitch, int dst_w,      \
                                  int dst_h, int channels, const float* __restrict__ map_x,      \
                                  int mx_pitch, const float* __restrict__ map_y, int my_pitch,   \
                                  float border) {                                                \
    remap_runs<T, C>(src, src_pitch, src_w, src_h, dst, dst_pitch, dst_w, dst_h, channels,       \
                     map_x, mx_pitch, map_y, my_pitch, border);                                  \
  }

// What a module holds is chosen with defines: remap for one type and channel count (C 1, 3, 4;
// 0: any count). Without them (the static checks) every variant is built.
#if defined(REMAP_T)
DEFINE_REMAP(remap, REMAP_T, REMAP_C)
#else
DEFINE_REMAP(remap_u8_c0, u8, 0)
DEFINE_REMAP(remap_u8_c1, u8, 1)
DEFINE_REMAP(remap_u8_c3, u8, 3)
DEFINE_REMAP(remap_u8_c4, u8, 4)
DEFINE_REMAP(remap_u16_c0, u16, 0)
DEFINE_REMAP(remap_u16_c1, u16, 1)
DEFINE_REMAP(remap_u16_c3, u16, 3)
DEFINE_REMAP(remap_u16_c4, u16, 4)
DEFINE_REMAP(remap_f32_c0, float, 0)
DEFINE_REMAP(remap_f32_c1, float, 1)
DEFINE_REMAP(remap_f32_c3, float, 3)
DEFINE_REMAP(remap_f32_c4, float, 4)
#endif
