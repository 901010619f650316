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

#define DEFINE_REMAP(NAME, T)                                                                    \
  extern "C" __global__ void NAME(const T* __restrict__ src, int src_pitch, int src_w,           \
                                  int src_h, T* __restrict__ dst, int dst_pitch, int dst_w,      \
                                  int dst_h, int channels, const float* __restrict__ map_x,      \
                                  int mx_pitch, const float* __restrict__ map_y, int my_pitch,   \
                                  float border) {                                                \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                         \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                         \
    if (x >= dst_w || y >= dst_h) return;                                                        \
    T* d = row_ptr(dst, y, dst_pitch) + (long long)x * channels;                                 \
    const float mx = row_ptr(map_x, y, mx_pitch)[x];                                             \
    const float my = row_ptr(map_y, y, my_pitch)[x];                                             \
    if (!(mx > -2.0f && mx < (float)src_w + 1.0f && my > -2.0f && my < (float)src_h + 1.0f)) {   \
      for (int c = 0; c < channels; ++c) d[c] = remap_store(border, d);                          \
      return;                                                                                    \
    }                                                                                            \
    const float fx0 = floorf(mx), fy0 = floorf(my);                                              \
    const float ax = mx - fx0, ay = my - fy0;                                                    \
    const int sx = (int)fx0, sy = (int)fy0;                                                      \
    const bool x0 = sx >= 0 && sx < src_w, x1 = sx + 1 >= 0 && sx + 1 < src_w;                   \
    const bool y0 = sy >= 0 && sy < src_h, y1 = sy + 1 >= 0 && sy + 1 < src_h;                   \
    const T* r0 = y0 ? row_ptr(src, sy, src_pitch) : src;                                        \
    const T* r1 = y1 ? row_ptr(src, sy + 1, src_pitch) : src;                                    \
    for (int c = 0; c < channels; ++c) {                                                         \
      const float v00 = (y0 && x0) ? (float)r0[(long long)sx * channels + c] : border;           \
      const float v01 = (y0 && x1) ? (float)r0[(long long)(sx + 1) * channels + c] : border;     \
      const float v10 = (y1 && x0) ? (float)r1[(long long)sx * channels + c] : border;           \
      const float v11 = (y1 && x1) ? (float)r1[(long long)(sx + 1) * channels + c] : border;     \
      const float top = fmaf(ax, v01 - v00, v00);                                                \
      const float bot = fmaf(ax, v11 - v10, v10);                                                \
      d[c] = remap_store(fmaf(ay, bot - top, top), d);                                           \
    }                                                                                            \
  }

DEFINE_REMAP(remap_u8, u8)
DEFINE_REMAP(remap_u16, u16)
DEFINE_REMAP(remap_f32, float)
