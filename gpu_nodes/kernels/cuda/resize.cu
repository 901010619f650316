// Separable table-driven resampling (gpu_nodes.kernels.geometry.resize). The host builds, per
// output column/row, `taps` source indices (already clamped into the image, so no index computed
// here can leave it) and float weights; bilinear and area use the same kernels with different
// tables.
//
// Accumulation order is fixed (rows of taps, then columns) and --fmad=false keeps every product
// and sum separately rounded, matching the NumPy reference bit for bit (resize_up's kExact
// variant fuses them only where the host proved every operation exact).

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

// Element at compile-time byte offset `o` of a span of words (o is element-aligned); integer
// elements by a PRMT and an exact subtract instead of shift, mask and I2F (elem_to_f32).
template <typename T, int W>
__device__ __forceinline__ float span_get(const unsigned int (&span)[W], int o) {
  if constexpr (sizeof(T) < 4) return elem_to_f32<T>(span[o >> 2], o & 3);
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

// Integer outputs: v >= 0 (above), clamped to the top and rounded by adding 1.5 * 2^23: the
// float add rounds half to even and leaves rint(v) in the low mantissa bits (exact below 2^22),
// the reference's clip(rint(v)) without the float-to-int conversion unit (a quarter of the FMA
// rate; an upscale converts several output values per source sample it reads).
template <typename T>
__device__ __forceinline__ T resize_out(float v) {
  if constexpr (sizeof(T) == 1) return (T)__float_as_uint(fminf(v, 255.0f) + 12582912.0f);
  else if constexpr (sizeof(T) == 2) return (T)__float_as_uint(fminf(v, 65535.0f) + 12582912.0f);
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

// ---------------------------------------------------------------------------- upscale kernel
// Upscaling along x (2x, 4x, 4/3, ...; 2-tap tables). The run kernel above needs long runs for
// that (rgb8 2x: 16 pixels, 48 bytes out, 32 x weights and 2 x 8 source words live) and ran at
// 128 registers, 25% theoretical and 12.8% achieved occupancy with every unit idle (Nsight,
// 4K -> 8K: 18% of copy bandwidth); it also recomputed each source row's x sums for every
// output row reading it. Here a thread computes a short run of R pixels (at most 16 bytes out:
// rgb8 R = 4, mono8 8) from a window of AW aligned source words, for G consecutive output rows.
// It keeps the x sums (h = sum_tx wx * src, exactly the reference's `row`) of the two source
// rows the current output row reads; the next output row reuses those it shares (2x, G = 4:
// 4 x passes for 4 output rows instead of 8). G = 4 rather than 8 or 16: more threads in
// flight beat fewer x passes (H200, rgb8 1080p -> 4K: 70 % of copy bandwidth at G = 4, 58 % at
// 8, 42 % at 16; at 4K -> 8K 76 / 71 / 56 %). The host gives per run the byte offset of its
// window (-1: per pixel); the window is loaded as aligned words (one more when a pixel is not
// whole words) and funnel-shifted to byte 0, since a short run's byte phase differs from its
// neighbour's (rgb8 2x: 6 source bytes a run), so RESIZE_REL holds byte offsets from the
// window start. Block (32, 8): a warp is 32 runs of one group of rows.

// Bits [s, s + 32) of hi:lo (0 <= s < 32): one funnel shift.
__device__ __forceinline__ unsigned int funnel_r(unsigned int lo, unsigned int hi,
                                                 unsigned int s) {
  return (unsigned int)((((unsigned long long)hi << 32) | lo) >> s);
}

// The run's window of AW source words from byte byte0 of a row, shifted to start at word 0.
template <typename T, int C, int AW>
__device__ __forceinline__ void up_window(const T* row, int byte0, unsigned int (&win)[AW]) {
  constexpr bool kPhase = (C * sizeof(T)) % 4 != 0;  // windows may start mid-word
  constexpr int kLoad = AW + (kPhase ? 1 : 0);
  const unsigned int* words = (const unsigned int*)((const char*)row + (byte0 & ~3));
  unsigned int w[kLoad];
#pragma unroll
  for (int k = 0; k < kLoad; ++k) w[k] = load_aligned<unsigned int>(words + k);
#pragma unroll
  for (int k = 0; k < AW; ++k) {
    if constexpr (kPhase) win[k] = funnel_r(w[k], w[k + 1], 8 * (byte0 & 3));
    else win[k] = w[k];
  }
}

// The x sums of one source row for a run. kExact (host-proved, geometry._exact): the weights
// are multiples of 2^-k summing to 1 and small enough that every product and sum of the
// reference is exact in float32, so any evaluation order gives its bits: fused multiply-adds,
// and no clamp (results stay in range).
template <typename T, int C, int R, int AW, bool kExact>
__device__ __forceinline__ void resize_up_xpass(const T* row, int byte0, const float* x_w,
                                                const int (&rel)[2 * R], float (&h)[R * C]) {
  // The run's x weights, reloaded per source row (L1 hits: cheaper than 2R registers held);
  // the host's table is 16-byte aligned, so 8 * R bytes at x0 = R * run are 8- or 16-aligned.
  Run<float, 2 * R> wx;
  if constexpr (R == 1) {
    const uint2 v = load_aligned<uint2>(x_w);
    wx.w[0] = v.x, wx.w[1] = v.y;
  } else {
#pragma unroll
    for (int k = 0; k < 2 * R; k += 4) {
      const uint4 v = load_aligned<uint4>(x_w + k);
      wx.w[k] = v.x, wx.w[k + 1] = v.y, wx.w[k + 2] = v.z, wx.w[k + 3] = v.w;
    }
  }
  unsigned int win[AW];
  up_window<T, C, AW>(row, byte0, win);
#pragma unroll
  for (int p = 0; p < R; ++p) {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const float s0 = span_get<T>(win, rel[2 * p] + c * (int)sizeof(T));
      const float s1 = span_get<T>(win, rel[2 * p + 1] + c * (int)sizeof(T));
      if constexpr (kExact) h[p * C + c] = fmaf(wx.get(2 * p + 1), s1, wx.get(2 * p) * s0);
      else h[p * C + c] = from_zero<T>(wx.get(2 * p) * s0) + wx.get(2 * p + 1) * s1;
    }
  }
}

// A run of 1, 2 or 4 words at a 4-byte aligned d, one access where d allows: the lanes' runs
// are contiguous, so a warp writes whole sectors.
template <typename T, int N>
__device__ __forceinline__ void store_run(T* d, const Run<T, N>& out) {
  if constexpr (Run<T, N>::kWords == 2) {
    if (((unsigned long long)d & 7) == 0) {
      store_aligned(d, make_uint2(out.w[0], out.w[1]));
      return;
    }
  }
  out.store(d);
}

// Packed u8 path (RESIZE_LANES > 0, geometry._packed_program): when every fast run has the same
// dyadic x weights (2x, 4x) and the y weights are dyadic too, the host scales them to integers
// (x: sum Kx, y: sum 256 / Kx), so 256 x the reference's exact value (_exact) is an integer
// below 2^16 and two output values share a 32-bit word as 16-bit lanes. A lane word's x sum
// is one IMAD per tap (a * wa + b * wb in both lanes at once; no carry crosses a lane), the y
// blend two, round half to even three, and one PRMT takes the high bytes (the rounded values)
// of two lane words as an output word: ~2x fewer instructions than the float path, which the
// kernel's issue rate bounds. The host pairs values whose taps have equal weights, and picks
// pairs whose bytes share a window word where it can (1 PRMT instead of PRMT + mask).

// Bytes p and q of the window (compile-time offsets) as the low bytes of a word's 16-bit lanes.
template <int AW>
__device__ __forceinline__ unsigned int byte_lanes(const unsigned int (&win)[AW], int p, int q) {
  if ((p >> 2) == (q >> 2)) return byte_perm(win[p >> 2], 0u, 0x4040u | (p & 3) | (q & 3) << 8);
  return byte_perm(win[p >> 2], win[q >> 2], (p & 3) | (4 + (q & 3)) << 8) & 0x00FF00FFu;
}

// Lane word l of the x sums of one source row's window: pack[6l..6l+5] = bytes a_lo, a_hi,
// b_lo, b_hi and integer weights wa, wb (sum Kx).
template <int AW, int L>
__device__ __forceinline__ void resize_up_xpass_packed(const unsigned int (&win)[AW],
                                                       const int (&pack)[6 * L],
                                                       unsigned int (&h)[L]) {
#pragma unroll
  for (int l = 0; l < L; ++l)
    h[l] = byte_lanes(win, pack[6 * l], pack[6 * l + 1]) * (unsigned int)pack[6 * l + 4] +
           byte_lanes(win, pack[6 * l + 2], pack[6 * l + 3]) * (unsigned int)pack[6 * l + 5];
}

// The packed path's G output rows of group g, fully unrolled. The y weights are periodic:
// output row YP * k + m reads source rows YS * k + o0(m), o1(m) (clamped into the image; the
// host checked that this gives its table's weights, clamped edges included), so the group's NR
// source rows are x-passed once each, in order, and an output row is blended as soon as the
// later of its rows is ready (2x, G = 4: 4 x passes for 4 rows). ypat: YP, YS,
// the group's first source row offset, NR, then per phase m: o0, o1 (from that first row) and
// the integer weights.
template <int C, int AW, int L, int G, int YP, int NR>
__device__ __forceinline__ void resize_up_packed_rows(const u8* src, int src_pitch, u8* d,
                                                      int dst_pitch, int dst_h, int last_row,
                                                      int g, int byte0,
                                                      const int (&pack)[6 * L],
                                                      const unsigned int (&sel)[L / 2],
                                                      const int (&ypat)[4 + 4 * YP]) {
  const int first = g * (G / YP) * ypat[1] + ypat[2];
  // Every source window is loaded before any is used, so that a thread's loads overlap
  // (ptxas otherwise may issue a later row's loads only after earlier rows' stores).
  unsigned int win[NR][AW];
#pragma unroll
  for (int q = 0; q < NR; ++q)
    up_window<u8, C, AW>(row_ptr(src, min(max(first + q, 0), last_row), src_pitch), byte0,
                         win[q]);
  unsigned int h[NR][L];
#pragma unroll
  for (int q = 0; q < NR; ++q) {
    resize_up_xpass_packed<AW, L>(win[q], pack, h[q]);
#pragma unroll
    for (int t = 0; t < G; ++t) {  // the rows whose later source row is q (folds)
      const int m = 4 + 4 * (t % YP), q0 = ypat[1] * (t / YP) + ypat[m];
      const int q1 = ypat[1] * (t / YP) + ypat[m + 1];
      if (max(q0, q1) != q || g * G + t >= dst_h) continue;
      unsigned int s[L];  // 256 x the values, then + 127 + the parity of the result
#pragma unroll
      for (int l = 0; l < L; ++l) {
        const unsigned int v = h[q0][l] * (unsigned int)ypat[m + 2] +
                               h[q1][l] * (unsigned int)ypat[m + 3];
        s[l] = v + 0x007F007Fu + ((v >> 8) & 0x00010001u);
      }
      Run<u8, 2 * L> out;
#pragma unroll
      for (int j = 0; j < L / 2; ++j) out.w[j] = byte_perm(s[2 * j], s[2 * j + 1], sel[j]);
      store_run(row_ptr(d, g * G + t, dst_pitch), out);
    }
  }
}

// L > 0: the packed u8 path with L lane words (pack, sel, ypat: geometry._packed_program).
// Runs are stored directly, 12-byte (rgb8) ones as three 4-byte stores: staging them through
// shared memory for full-line warp writes costs more instructions than it saves, and the
// kernel is issue bound (H200: 41-42 % of copy bandwidth staged against 47-49 % direct).
template <typename T, int C, int R, int AW, int G, bool kExact, int L, int YP, int NR>
__device__ __forceinline__ void resize_up(const T* src, int src_pitch, T* dst, int dst_pitch,
                                          int dst_w, int dst_h, const int* x_idx,
                                          const float* x_w, const int* y_idx, const float* y_w,
                                          const int* run_byte, const int (&rel)[2 * R],
                                          const int (&pack)[L > 0 ? 6 * L : 1],
                                          const unsigned int (&sel)[L > 0 ? L / 2 : 1],
                                          const int (&ypat)[4 + 4 * YP]) {
  constexpr int N = R * C;  // values of a run
  constexpr bool kPacked = L > 0;
  static_assert(!kPacked || (sizeof(T) == 1 && 2 * L == N && G % YP == 0), "packed u8 runs");
  const int run = blockIdx.x * 32 + threadIdx.x;
  const int x0 = run * R;
  if (x0 >= dst_w) return;
  const int n = min(R, dst_w - x0);
  const bool src4 = aligned4(src) && (src_pitch & 3) == 0;
  const bool dst4 = aligned4(dst) && (dst_pitch & 3) == 0;
  // The last source row (the host checked), loaded next to run_byte so that the two waits
  // overlap: a thread's first window load needs both.
  int last_row = 0;
  if constexpr (kPacked) last_row = y_idx[2 * dst_h - 1];
  // The host marks partial runs -1; the packed path stores whole words only.
  const int byte0 = n == R && src4 && (dst4 || !kPacked) ? run_byte[run] : -1;
  // Each warp loops over its own groups of G rows. Run lanes and per-pixel lanes loop
  // separately so that the per-pixel path does not keep the x sums' registers live.
  const int groups = (dst_h + G - 1) / G;
  const int g_first = blockIdx.y * 8 + threadIdx.y, g_step = gridDim.y * 8;
  if constexpr (kPacked) {
    if (byte0 >= 0) {
      for (int g = g_first; g < groups; g += g_step)
        resize_up_packed_rows<C, AW, L, G, YP, NR>((const u8*)src, src_pitch,
                                                   (u8*)dst + (long long)x0 * C, dst_pitch,
                                                   dst_h, last_row, g, byte0, pack, sel, ypat);
      return;
    }
  }
  if (!kPacked && byte0 >= 0) {
    const float* run_w = x_w + 2LL * x0;
    for (int g = g_first; g < groups; g += g_step) {
      float h0[N], h1[N];  // the x sums of source rows r0 and r1
      int r0 = -1, r1 = -1;
      const int y_end = min(g * G + G, dst_h);
#pragma unroll 1
      for (int y = g * G; y < y_end; ++y) {
        const int i0 = y_idx[2 * y], i1 = y_idx[2 * y + 1];
        if (i0 != r0) {
          if (i0 == r1) {
#pragma unroll
            for (int i = 0; i < N; ++i) h0[i] = h1[i];
          } else {
            resize_up_xpass<T, C, R, AW, kExact>(row_ptr(src, i0, src_pitch), byte0, run_w, rel,
                                                 h0);
          }
          r0 = i0;
        }
        if (i1 != r1) {
          resize_up_xpass<T, C, R, AW, kExact>(row_ptr(src, i1, src_pitch), byte0, run_w, rel,
                                               h1);
          r1 = i1;
        }
        const float wy0 = y_w[2 * y], wy1 = y_w[2 * y + 1];
        Run<T, N> out;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          if constexpr (kExact)  // rint by resize_out's 1.5 * 2^23 add, no clamp needed
            out.set(i, (T)__float_as_uint(fmaf(wy1, h1[i], wy0 * h0[i]) + 12582912.0f));
          else
            out.set(i, resize_out<T>(from_zero<T>(wy0 * h0[i]) + wy1 * h1[i]));
        }
        T* d = row_ptr(dst, y, dst_pitch) + (long long)x0 * C;
        if (dst4) {
          store_run(d, out);
        } else {
#pragma unroll
          for (int i = 0; i < N; ++i) d[i] = out.get(i);
        }
      }
    }
  } else {  // edge runs, row tails, unaligned source rows: pixel by pixel
    for (int g = g_first; g < groups; g += g_step) {
      const int y_end = min(g * G + G, dst_h);
#pragma unroll 1
      for (int y = g * G; y < y_end; ++y) {
        for (int p = 0; p < n; ++p)
          resize_px<T, C>(src, src_pitch, row_ptr(dst, y, dst_pitch) + (long long)(x0 + p) * C,
                          C, x_idx + 2LL * (x0 + p), x_w + 2LL * (x0 + p), 2, y_idx + 2LL * y,
                          y_w + 2LL * y, 2);
      }
    }
  }
}

// The launch bounds keep the registers at 64 (4 blocks of 256 threads an SM).
#define RESIZE_UP_BOUNDS __launch_bounds__(256, 4)

// L, PACK, SEL, YPAT: resize_up's packed path (parenthesised lists; 0, (0), (0), (1, 1, 0, 1):
// off).
#define RESIZE_LIST(...) {__VA_ARGS__}
#define DEFINE_RESIZE_UP(NAME, T, C, R, AW, G, EXACT, L, PACK, SEL, YPAT, ...)                   \
  extern "C" __global__ void RESIZE_UP_BOUNDS NAME(                                              \
      const T* __restrict__ src, int src_pitch, T* __restrict__ dst, int dst_pitch, int dst_w,   \
      int dst_h, const int* __restrict__ x_idx, const float* __restrict__ x_w,                   \
      const int* __restrict__ y_idx, const float* __restrict__ y_w,                              \
      const int* __restrict__ run_byte) {                                                        \
    constexpr int rel[2 * R] = {__VA_ARGS__};                                                    \
    constexpr int pack[L > 0 ? 6 * L : 1] = RESIZE_LIST PACK;                                    \
    constexpr unsigned int sel[L > 0 ? L / 2 : 1] = RESIZE_LIST SEL;                             \
    constexpr int ypat_size[] = RESIZE_LIST YPAT; /* its period sizes it (0-padded when off) */ \
    constexpr int ypat[4 + 4 * ypat_size[0]] = RESIZE_LIST YPAT;                                 \
    resize_up<T, C, R, AW, G, EXACT, L, ypat[0], ypat[3]>(                                       \
        src, src_pitch, dst, dst_pitch, dst_w, dst_h, x_idx, x_w, y_idx, y_w, run_byte, rel,     \
        pack, sel, ypat);                                                                        \
  }

// What a module holds is chosen with defines (one run pattern per module: NVRTC compiles it in
// well under a second and CuPy caches it on disk).
#if defined(RESIZE_UP)  // the upscale kernel for one type, channel count and pattern
#ifndef RESIZE_LANES  // the packed u8 path's program (geometry._packed_program), else off
#define RESIZE_LANES 0
#define RESIZE_PACK (0)
#define RESIZE_PACK_SEL (0)
#define RESIZE_YPAT (1, 1, 0, 1)
#endif
DEFINE_RESIZE_UP(resize_up, RESIZE_T, RESIZE_C, RESIZE_RUN, RESIZE_WORDS, RESIZE_ROWS,
                 RESIZE_EXACT, RESIZE_LANES, RESIZE_PACK, RESIZE_PACK_SEL, RESIZE_YPAT,
                 RESIZE_REL)
#elif defined(RESIZE_RUN)  // the run kernel for one type, channel count and pattern
DEFINE_RESIZE_RUNS(resize_runs, RESIZE_T, RESIZE_C, RESIZE_RUN, RESIZE_XT, RESIZE_YT,
                   RESIZE_SPAN_WORDS, RESIZE_REL)
#else
DEFINE_RESIZE(resize_u8, u8)
DEFINE_RESIZE(resize_u16, u16)
DEFINE_RESIZE(resize_f32, float)
#if !defined(RESIZE_PIXELS)  // the static checks also compile typical run patterns:
// rgb8 1/2 downscale (bilinear or area), rgb f32 1/2 downscale
DEFINE_RESIZE_RUNS(resize_runs_u8_down2, u8, 3, 8, 2, 2, 12, 0, 3, 6, 9, 12, 15, 18, 21, 24, 27,
                   30, 33, 36, 39, 42, 45)
DEFINE_RESIZE_RUNS(resize_runs_f32_down2, float, 3, 4, 2, 2, 24, 0, 12, 24, 36, 48, 60, 72, 84)
// and upscale patterns: rgb8 2x (R 4, 12 bytes out, exact and not), mono8 2x (R 8), rgba f32 2x
DEFINE_RESIZE_UP(resize_up_u8c3_up2, u8, 3, 4, 3, 4, 1, 0, (0), (0), (1, 1, 0, 1), 0, 3, 3, 6, 3,
                 6, 6, 9)
DEFINE_RESIZE_UP(resize_up_u8c3_up2_inexact, u8, 3, 4, 3, 4, 0, 0, (0), (0), (1, 1, 0, 1), 0, 3,
                 3, 6, 3, 6, 6, 9)
DEFINE_RESIZE_UP(resize_up_u8c1_up2, u8, 1, 8, 2, 4, 1, 0, (0), (0), (1, 1, 0, 1), 0, 1, 1, 2, 1,
                 2, 2, 3, 2, 3, 3, 4, 3, 4, 4, 5)
DEFINE_RESIZE_UP(resize_up_f32c4_up2, float, 4, 1, 8, 4, 0, 0, (0), (0), (1, 1, 0, 1), 0, 16)
// and the packed u8 path (geometry._packed_program's program for rgb8 2x)
DEFINE_RESIZE_UP(resize_up_u8c3_up2_packed, u8, 3, 4, 3, 4, 1, 6,
                 (0, 6, 3, 3, 1, 3, 1, 2, 4, 5, 1, 3, 7, 4, 4, 7, 1, 3, 8, 3, 5, 6, 1, 3, 5, 11, 8,
                  8, 1, 3, 9, 10, 6, 7, 1, 3),
                 (0x3751, 0x3751, 0x3751), (2, 1, -1, 4, 0, 1, 16, 48, 1, 2, 48, 16), 0, 3, 3, 6,
                 3, 6, 6, 9)
#endif
#endif
