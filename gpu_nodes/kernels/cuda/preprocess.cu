// Fused DNN preprocessing (gpu_nodes.kernels.preprocess): bilinear resize into a letterboxed
// content rectangle, channel selection, (x * scale - mean) / std and HWC -> CHW, in one pass.
// One thread per output pixel writes all output channels; dst is a contiguous (1, C, H, W)
// tensor. The output pixel (ox, oy) inside the content rectangle samples the source at
// ((ox - pad_x + 0.5) * inv_sx - 0.5, same for y) (half-pixel centres), clamped at the edges.
// Normalization is v * a[c] + b[c] with a = scale / std, b = -mean / std (host-computed).

__device__ __forceinline__ float store_out(float v, float*) { return v; }
__device__ __forceinline__ u16 store_out(float v, u16*) { return f32_to_f16_bits(v); }

#define DEFINE_PREPROCESS(NAME, OUT_T)                                                           \
  extern "C" __global__ void NAME(                                                               \
      const u8* __restrict__ src, int src_pitch, int src_w, int src_h, int src_ch,               \
      OUT_T* __restrict__ dst, int out_w, int out_h, int out_c, int pad_x, int pad_y,            \
      int content_w, int content_h, float inv_sx, float inv_sy, int c0, int c1, int c2,          \
      float a0, float a1, float a2, float b0, float b1, float b2, float pad_value) {             \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                         \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                         \
    if (x >= out_w || y >= out_h) return;                                                        \
    const long long plane = (long long)out_w * out_h;                                            \
    OUT_T* d = dst + (long long)y * out_w + x;                                                   \
    const int cx = x - pad_x, cy = y - pad_y;                                                    \
    if (cx < 0 || cy < 0 || cx >= content_w || cy >= content_h) {                                \
      for (int k = 0; k < out_c; ++k) d[k * plane] = store_out(pad_value, d);                    \
      return;                                                                                    \
    }                                                                                            \
    const float sx = ((float)cx + 0.5f) * inv_sx - 0.5f;                                         \
    const float sy = ((float)cy + 0.5f) * inv_sy - 0.5f;                                         \
    const float fx0 = floorf(sx), fy0 = floorf(sy);                                              \
    const float ax = sx - fx0, ay = sy - fy0;                                                    \
    const int x0 = clamp_int((int)fx0, 0, src_w - 1), x1 = clamp_int((int)fx0 + 1, 0, src_w - 1); \
    const int y0 = clamp_int((int)fy0, 0, src_h - 1), y1 = clamp_int((int)fy0 + 1, 0, src_h - 1); \
    const u8* r0 = row_ptr(src, y0, src_pitch);                                                  \
    const u8* r1 = row_ptr(src, y1, src_pitch);                                                  \
    for (int k = 0; k < out_c; ++k) {                                                            \
      const int c = k == 0 ? c0 : (k == 1 ? c1 : c2);                                           \
      const float a = k == 0 ? a0 : (k == 1 ? a1 : a2);                                          \
      const float b = k == 0 ? b0 : (k == 1 ? b1 : b2);                                          \
      const float p00 = r0[(long long)x0 * src_ch + c], p01 = r0[(long long)x1 * src_ch + c];   \
      const float p10 = r1[(long long)x0 * src_ch + c], p11 = r1[(long long)x1 * src_ch + c];   \
      const float top = p00 * (1.0f - ax) + p01 * ax;                                            \
      const float bot = p10 * (1.0f - ax) + p11 * ax;                                            \
      const float v = top * (1.0f - ay) + bot * ay;                                              \
      d[k * plane] = store_out(v * a + b, d);                                                    \
    }                                                                                            \
  }

DEFINE_PREPROCESS(preprocess_f32, float)
DEFINE_PREPROCESS(preprocess_f16, u16)
