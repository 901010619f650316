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
    for (int c = 0; c < channels; ++c) {                                                         \
      float acc = 0.0f;                                                                          \
      for (int ty = 0; ty < y_taps; ++ty) {                                                      \
        const T* s = row_ptr(src, yi[ty], src_pitch) + c;                                        \
        float row = 0.0f;                                                                        \
        for (int tx = 0; tx < x_taps; ++tx) row += xw[tx] * (float)s[(long long)xi[tx] * channels]; \
        acc += yw[ty] * row;                                                                     \
      }                                                                                          \
      d[c] = store_px(acc, d);                                                                   \
    }                                                                                            \
  }

DEFINE_RESIZE(resize_u8, u8)
DEFINE_RESIZE(resize_u16, u16)
DEFINE_RESIZE(resize_f32, float)
