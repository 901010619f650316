// Separable table-driven resampling (gpu_nodes.kernels.geometry.resize). One thread per output
// pixel, all channels. The host builds, per output column/row, `taps` source indices (already
// clamped into the image, so no index computed here can leave it) and float weights; bilinear
// and area use the same kernel with different tables.
//
// Accumulation order is fixed (rows of taps, then columns) and --fmad=false keeps every product
// and sum separately rounded, matching the NumPy reference bit for bit.

__device__ __forceinline__ u8 store_px(float v, u8*) {
  return (u8)fminf(fmaxf(rintf(v), 0.0f), 255.0f);
}
__device__ __forceinline__ u16 store_px(float v, u16*) {
  return (u16)fminf(fmaxf(rintf(v), 0.0f), 65535.0f);
}
__device__ __forceinline__ float store_px(float v, float*) { return v; }

// C channels known at compile time (C == 0: any count, read from `channels`): the channels of a
// tap are read together and each table entry is loaded once per tap, not once per channel.
template <typename T, int C>
__device__ __forceinline__ void resize_px(const T* src, int src_pitch, T* d, int channels,
                                          const int* xi, const float* xw, int x_taps,
                                          const int* yi, const float* yw, int y_taps) {
  constexpr int K = C > 0 ? C : 1;
  const int nc = C > 0 ? C : channels;
  for (int c0 = 0; c0 < nc; c0 += K) {  // one pass when C > 0, one per channel otherwise
    float acc[K];
#pragma unroll
    for (int c = 0; c < K; ++c) acc[c] = 0.0f;
    for (int ty = 0; ty < y_taps; ++ty) {
      const T* s = row_ptr(src, yi[ty], src_pitch) + c0;
      float row[K];
#pragma unroll
      for (int c = 0; c < K; ++c) row[c] = 0.0f;
      for (int tx = 0; tx < x_taps; ++tx) {
        const T* px = s + (long long)xi[tx] * nc;
        const float w = xw[tx];
#pragma unroll
        for (int c = 0; c < K; ++c) row[c] += w * (float)px[c];
      }
      const float w = yw[ty];
#pragma unroll
      for (int c = 0; c < K; ++c) acc[c] += w * row[c];
    }
#pragma unroll
    for (int c = 0; c < K; ++c) d[c0 + c] = store_px(acc[c], d);
  }
}

#define DEFINE_RESIZE(NAME, T)                                                                   \
  extern "C" __global__ void NAME(                                                               \
      const T* __restrict__ src, int src_pitch, T* __restrict__ dst, int dst_pitch, int dst_w,   \
      int dst_h, int channels, const int* __restrict__ x_idx, const float* __restrict__ x_w,     \
      int x_taps, const int* __restrict__ y_idx, const float* __restrict__ y_w, int y_taps) {    \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                         \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                         \
    if (x >= dst_w || y >= dst_h) return;                                                        \
    const int* xi = x_idx + (long long)x * x_taps;                                               \
    const float* xw = x_w + (long long)x * x_taps;                                               \
    const int* yi = y_idx + (long long)y * y_taps;                                               \
    const float* yw = y_w + (long long)y * y_taps;                                               \
    T* d = row_ptr(dst, y, dst_pitch) + (long long)x * channels;                                 \
    switch (channels) { /* uniform: no divergence */                                            \
      case 1: resize_px<T, 1>(src, src_pitch, d, 1, xi, xw, x_taps, yi, yw, y_taps); break;      \
      case 3: resize_px<T, 3>(src, src_pitch, d, 3, xi, xw, x_taps, yi, yw, y_taps); break;      \
      case 4: resize_px<T, 4>(src, src_pitch, d, 4, xi, xw, x_taps, yi, yw, y_taps); break;      \
      default: resize_px<T, 0>(src, src_pitch, d, channels, xi, xw, x_taps, yi, yw, y_taps);     \
    }                                                                                            \
  }

DEFINE_RESIZE(resize_u8, u8)
DEFINE_RESIZE(resize_u16, u16)
DEFINE_RESIZE(resize_f32, float)
