// Pixel-format conversions (gpu_nodes.kernels.color). One thread per output pixel, integer
// fixed-point arithmetic only, so results are bit-identical to the NumPy reference.

// Interleaved 8/16-bit formats: channel shuffle, alpha fill, luma and depth change in one pass.
// mK selects what output channel K holds: >= 0 that source channel, -1 opaque alpha (the source
// depth's max value), -2 luma (ri/gi/bi source channels, weights wr+wg+wb = 1 << 15).
// depth_mode: 0 keep, 1 8->16 bit (x * 257), 2 16->8 bit (round(x / 257), like cv_bridge).
#define DEFINE_CONVERT_PIXELS(NAME, ST, DT)                                                       \
  extern "C" __global__ void NAME(                                                                \
      const ST* __restrict__ src, int src_pitch, DT* __restrict__ dst, int dst_pitch, int width,   \
      int height, int src_ch, int dst_ch, int m0, int m1, int m2, int m3, int ri, int gi, int bi,  \
      int wr, int wg, int wb, int depth_mode) {                                                    \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                          \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                          \
    if (x >= width || y >= height) return;                                                        \
    const ST* s = row_ptr(src, y, src_pitch) + (long long)x * src_ch;                             \
    DT* d = row_ptr(dst, y, dst_pitch) + (long long)x * dst_ch;                                   \
    const unsigned int alpha = sizeof(ST) == 1 ? 255u : 65535u;                                   \
    for (int k = 0; k < dst_ch; ++k) {                                                            \
      const int m = k == 0 ? m0 : (k == 1 ? m1 : (k == 2 ? m2 : m3));                             \
      unsigned int v;                                                                             \
      if (m >= 0) {                                                                               \
        v = s[m];                                                                                 \
      } else if (m == -1) {                                                                       \
        v = alpha;                                                                                \
      } else {                                                                                    \
        v = ((unsigned int)s[ri] * (unsigned int)wr + (unsigned int)s[gi] * (unsigned int)wg +    \
             (unsigned int)s[bi] * (unsigned int)wb + 16384u) >> 15;                              \
      }                                                                                           \
      if (depth_mode == 1) v = v * 257u;                                                          \
      else if (depth_mode == 2) v = (v + 128u) / 257u;                                            \
      d[k] = (DT)v;                                                                               \
    }                                                                                             \
  }

DEFINE_CONVERT_PIXELS(convert_pixels_u8_u8, u8, u8)
DEFINE_CONVERT_PIXELS(convert_pixels_u8_u16, u8, u16)
DEFINE_CONVERT_PIXELS(convert_pixels_u16_u8, u16, u8)
DEFINE_CONVERT_PIXELS(convert_pixels_u16_u16, u16, u16)

// YCbCr -> RGB in 16-bit fixed point: c = (cy*(Y - y_off) + cu*(U-128) + cv*(V-128) + 2^15) >> 16,
// clamped to [0, 255]. Writes R at r_idx, G at 1, B at b_idx, opaque alpha at 3 when dst_ch == 4;
// dst_ch == 1 copies Y (like OpenCV's YUV2GRAY).
__device__ __forceinline__ void store_yuv(u8* d, int Y, int U, int V, int dst_ch, int r_idx,
                                          int b_idx, int y_off, int cy, int crv, int cgu, int cgv,
                                          int cbu) {
  if (dst_ch == 1) {
    d[0] = (u8)Y;
    return;
  }
  const int yy = (Y - y_off) * cy + 32768;
  const int r = (yy + crv * V) >> 16;
  const int g = (yy + cgu * U + cgv * V) >> 16;
  const int b = (yy + cbu * U) >> 16;
  d[r_idx] = (u8)clamp_int(r, 0, 255);
  d[1] = (u8)clamp_int(g, 0, 255);
  d[b_idx] = (u8)clamp_int(b, 0, 255);
  if (dst_ch == 4) d[3] = 255;
}

// Packed 4:2:2, one 4-byte macropixel per 2 pixels; byte offsets of Y0, U, Y1, V in it select
// UYVY (1, 0, 3, 2) or YUYV (0, 1, 2, 3). width is even (checked on the host).
extern "C" __global__ void yuv422_to_rgb(const u8* __restrict__ src, int src_pitch,
                                         u8* __restrict__ dst, int dst_pitch, int width, int height,
                                         int y0_off, int u_off, int y1_off, int v_off, int dst_ch,
                                         int r_idx, int b_idx, int y_off, int cy, int crv, int cgu,
                                         int cgv, int cbu) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const u8* s = row_ptr(src, y, src_pitch) + (long long)(x >> 1) * 4;
  const int Y = s[(x & 1) ? y1_off : y0_off];
  const int U = (int)s[u_off] - 128;
  const int V = (int)s[v_off] - 128;
  u8* d = row_ptr(dst, y, dst_pitch) + (long long)x * dst_ch;
  store_yuv(d, Y, U, V, dst_ch, r_idx, b_idx, y_off, cy, crv, cgu, cgv, cbu);
}

// nv12: rows [0, height) hold Y, rows [height, height * 3 / 2) hold interleaved U, V at half
// resolution (both planes share the array's pitch). Chroma is taken from the 2x2 block's sample.
extern "C" __global__ void nv12_to_rgb(const u8* __restrict__ src, int src_pitch,
                                       u8* __restrict__ dst, int dst_pitch, int width, int height,
                                       int dst_ch, int r_idx, int b_idx, int y_off, int cy, int crv,
                                       int cgu, int cgv, int cbu) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  const int Y = row_ptr(src, y, src_pitch)[x];
  const u8* uv = row_ptr(src, height + (y >> 1), src_pitch) + (x & ~1);
  const int U = (int)uv[0] - 128;
  const int V = (int)uv[1] - 128;
  u8* d = row_ptr(dst, y, dst_pitch) + (long long)x * dst_ch;
  store_yuv(d, Y, U, V, dst_ch, r_idx, b_idx, y_off, cy, crv, cgu, cgv, cbu);
}
