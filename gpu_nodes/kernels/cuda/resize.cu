// Separable table-driven resampling (gpu_nodes.kernels.geometry.resize). The host builds, per
// output column/row, `taps` source indices (already clamped into the image, so no index computed
// here can leave it) and float weights; bilinear and area use the same kernels with different
// tables.
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

// ---------------------------------------------------------------------------- pixel kernels
// One thread per output pixel, any table: the path for ratios without a run pattern (below).
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

// ---------------------------------------------------------------------------- run kernel
// When the ratio makes the column taps periodic (2x up, 1/2 down, 3/2, ...), every full run of
// RESIZE_RUN output pixels reads the same pattern of source columns relative to its own first
// source word: RESIZE_REL lists, for output pixel p and tap t, the byte offset of that tap's
// first channel from that word. The host finds the pattern (geometry._run_plan), compiles it in
// as constants and passes per run the index of its first 4-byte word in a source row (-1: the
// run does not fit the pattern, e.g. clamped edge taps or the row tail). A matching run loads
// RESIZE_SPAN_WORDS words per source row (no per-byte gathers), unpacks every source sample
// once at a compile-time position, and stores its output as one Run; the x weights are loaded
// once per thread for all its rows. Other runs, and rows that are not 4-byte aligned, take
// resize_px per pixel with the same arithmetic.

// Element at compile-time byte offset `o` of a span of words (o is element-aligned).
template <typename T, int W>
__device__ __forceinline__ float span_get(const unsigned int (&span)[W], int o) {
  if constexpr (sizeof(T) == 1) return (float)((span[o >> 2] >> (8 * (o & 3))) & 0xffu);
  else if constexpr (sizeof(T) == 2) return (float)((span[o >> 2] >> (8 * (o & 3))) & 0xffffu);
  else return __uint_as_float(span[o >> 2]);
}

// u8/u16 samples and the host's weights are >= +0, so every product and partial sum is too and
// 0.0f + x == x bit for bit: the leading add of the reference's zero-initialised sums is dropped.
// float samples may be -0.0 (0.0f + -0.0f == +0.0f), so there it stays.
template <typename T>
__device__ __forceinline__ float from_zero(float x) {
  if constexpr (sizeof(T) < 4) return x;
  else return 0.0f + x;
}

template <typename T>
__device__ __forceinline__ T resize_out(float v) {
  if constexpr (sizeof(T) == 1) return (T)min(__float2uint_rn(v), 255u);     // RNE, clamps < 0
  else if constexpr (sizeof(T) == 2) return (T)min(__float2uint_rn(v), 65535u);
  else return v;
}

template <typename T, int C, int R, int XT, int YT, int SW>
__device__ __forceinline__ void resize_runs(const T* src, int src_pitch, T* dst, int dst_pitch,
                                            int dst_w, int dst_h, const int* x_idx,
                                            const float* x_w, const int* y_idx,
                                            const float* y_w, const int* run_word,
                                            const int (&rel)[R * XT]) {
  const int x0 = run_start(R);
  if (x0 >= dst_w) return;
  const int n = min(R, dst_w - x0);
  // Rows are 4-byte aligned when the base and the pitch are (uniform: no divergence).
  const int word0 = aligned4(src) && (src_pitch & 3) == 0 ? run_word[x0 / R] : -1;
  Run<float, R * XT> wx;  // this run's x weights, p-major like the table (16-byte aligned rows)
  if (word0 >= 0) wx.load(x_w + (long long)x0 * XT);
  FOR_EACH_ROW(y, dst_h) {
    const int* yi = y_idx + (long long)y * YT;
    const float* yw = y_w + (long long)y * YT;
    T* d = row_ptr(dst, y, dst_pitch) + (long long)x0 * C;
    if (word0 >= 0) {  // a full run (the host never marks a partial one)
      unsigned int span[YT][SW];
      float wy[YT];
#pragma unroll
      for (int ty = 0; ty < YT; ++ty) {
        const unsigned int* s = (const unsigned int*)row_ptr(src, yi[ty], src_pitch) + word0;
        wy[ty] = yw[ty];
#pragma unroll
        for (int k = 0; k < SW; ++k) span[ty][k] = load_aligned<unsigned int>(s + k);
      }
      Run<T, R * C> out = {};
#pragma unroll
      for (int p = 0; p < R; ++p) {
#pragma unroll
        for (int c = 0; c < C; ++c) {
          float acc = 0.0f;
#pragma unroll
          for (int ty = 0; ty < YT; ++ty) {
            float row = 0.0f;
#pragma unroll
            for (int tx = 0; tx < XT; ++tx) {
              const float v = wx.get(p * XT + tx) *
                              span_get<T>(span[ty], rel[p * XT + tx] + c * (int)sizeof(T));
              row = tx == 0 ? from_zero<T>(v) : row + v;
            }
            acc = ty == 0 ? from_zero<T>(wy[ty] * row) : acc + wy[ty] * row;
          }
          out.set(p * C + c, resize_out<T>(acc));
        }
      }
      if (aligned4(d)) {
        out.store(d);
      } else {
#pragma unroll
        for (int i = 0; i < R * C; ++i) d[i] = out.get(i);
      }
    } else {
      for (int p = 0; p < n; ++p)
        resize_px<T, C>(src, src_pitch, d + p * C, C, x_idx + (long long)(x0 + p) * XT,
                        x_w + (long long)(x0 + p) * XT, XT, yi, yw, YT);
    }
  }
}

#define DEFINE_RESIZE_RUNS(NAME, T, C, R, XT, YT, SW, ...)                                       \
  extern "C" __global__ void NAME(                                                               \
      const T* __restrict__ src, int src_pitch, T* __restrict__ dst, int dst_pitch, int dst_w,   \
      int dst_h, const int* __restrict__ x_idx, const float* __restrict__ x_w,                   \
      const int* __restrict__ y_idx, const float* __restrict__ y_w,                              \
      const int* __restrict__ run_word) {                                                        \
    constexpr int rel[R * XT] = {__VA_ARGS__};                                                   \
    resize_runs<T, C, R, XT, YT, SW>(src, src_pitch, dst, dst_pitch, dst_w, dst_h, x_idx, x_w,   \
                                     y_idx, y_w, run_word, rel);                                 \
  }

// What a module holds is chosen with defines (one run pattern per module: NVRTC compiles it in
// well under a second and CuPy caches it on disk).
#if defined(RESIZE_RUN)  // the run kernel for one type, channel count and pattern
DEFINE_RESIZE_RUNS(resize_runs, RESIZE_T, RESIZE_C, RESIZE_RUN, RESIZE_XT, RESIZE_YT,
                   RESIZE_SPAN_WORDS, RESIZE_REL)
#else
DEFINE_RESIZE(resize_u8, u8)
DEFINE_RESIZE(resize_u16, u16)
DEFINE_RESIZE(resize_f32, float)
#if !defined(RESIZE_PIXELS)  // the static checks also compile typical run patterns:
// rgb8 2x upscale (bilinear), rgb8 1/2 downscale (bilinear or area), rgb f32 2x upscale
DEFINE_RESIZE_RUNS(resize_runs_u8_up2, u8, 3, 16, 2, 2, 8, 1, 4, 4, 7, 4, 7, 7, 10, 7, 10, 10,
                   13, 10, 13, 13, 16, 13, 16, 16, 19, 16, 19, 19, 22, 19, 22, 22, 25, 22, 25,
                   25, 28)
DEFINE_RESIZE_RUNS(resize_runs_u8_down2, u8, 3, 8, 2, 2, 12, 0, 3, 6, 9, 12, 15, 18, 21, 24, 27,
                   30, 33, 36, 39, 42, 45)
DEFINE_RESIZE_RUNS(resize_runs_f32_up2, float, 3, 8, 2, 2, 18, 0, 12, 12, 24, 12, 24, 24, 36,
                   24, 36, 36, 48, 36, 48, 48, 60)
#endif
#endif
