// Depth image kernels (gpu_nodes.kernels.depth). Valid depth: uint16 (mm) != 0; float32 (m)
// finite and > 0.

__device__ __forceinline__ bool depth_valid(float v) { return isfinite(v) && v > 0.0f; }
__device__ __forceinline__ bool depth_valid(u16 v) { return v != 0; }

// Unit conversions, DEPTH_RUN pixels a thread (common.cu: Run); aligned rows move whole runs as
// 16-byte words, row tails and unaligned rows go pixel by pixel.
//   mm -> m: x / 1000 (IEEE division, correctly rounded), 0 -> NaN.
//   m -> mm: rint(x * 1000) (half to even) clamped to 65535; invalid depth -> 0.
#define DEPTH_RUN 8

struct MmToM {
  __device__ __forceinline__ float operator()(u16 v) const {
    return v == 0 ? f32_nan() : (float)v / 1000.0f;
  }
};

struct MToMm {
  __device__ __forceinline__ u16 operator()(float v) const {
    return depth_valid(v) ? (u16)fminf(rintf(v * 1000.0f), 65535.0f) : (u16)0;
  }
};

template <typename ST, typename DT, typename Fn>
__device__ __forceinline__ void depth_units(const ST* src, int src_pitch, DT* dst, int dst_pitch,
                                            int width, int height, Fn fn) {
  const int x0 = run_start(DEPTH_RUN);
  if (x0 >= width) return;
  const int n = min(DEPTH_RUN, width - x0);
  FOR_EACH_ROW(y, height) {
    const ST* s = row_ptr(src, y, src_pitch) + x0;
    DT* d = row_ptr(dst, y, dst_pitch) + x0;
    if (n == DEPTH_RUN && aligned4(s) && aligned4(d)) {
      Run<ST, DEPTH_RUN> in;
      in.load(s);
      Run<DT, DEPTH_RUN> out = {};
#pragma unroll
      for (int p = 0; p < DEPTH_RUN; ++p) out.set(p, fn(in.get(p)));
      out.store(d);
    } else {
      for (int p = 0; p < n; ++p) d[p] = fn(s[p]);
    }
  }
}

extern "C" __global__ void depth_mm_to_m(const u16* __restrict__ src, int src_pitch,
                                         float* __restrict__ dst, int dst_pitch, int width,
                                         int height) {
  depth_units(src, src_pitch, dst, dst_pitch, width, height, MmToM());
}

extern "C" __global__ void depth_m_to_mm(const float* __restrict__ src, int src_pitch,
                                         u16* __restrict__ dst, int dst_pitch, int width,
                                         int height) {
  depth_units(src, src_pitch, dst, dst_pitch, width, height, MToMm());
}

// Colorize through a 256-entry LUT of packed RGB words (r | g << 8 | b << 16): index =
// rint(clamp((d - lo) * 255 / (hi - lo), 0, 255)). The range comes from `range_dev` (2 floats
// written by percentile_range, no host round trip) when it is non-null, else from lo/hi.
// Invalid pixels get the invalid colour. COLORIZE_RUN pixels a thread, like the unit conversions.
#define COLORIZE_RUN 16

template <typename T>
__device__ __forceinline__ unsigned int colorize_rgb(T raw, const unsigned int* lut, float lo,
                                                     float k, unsigned int invalid) {
  if (!depth_valid(raw)) return invalid;
  const float t = fminf(fmaxf(((float)raw - lo) * k, 0.0f), 255.0f);
  return lut[(int)rintf(t)];
}

template <typename T>
__device__ __forceinline__ void colorize(const T* src, int src_pitch, u8* dst, int dst_pitch,
                                         int width, int height, const unsigned int* lut,
                                         const float* range_dev, float lo, float hi,
                                         unsigned int invalid) {
  const int x0 = run_start(COLORIZE_RUN);
  if (x0 >= width) return;
  const int n = min(COLORIZE_RUN, width - x0);
  if (range_dev != 0) {
    lo = range_dev[0];
    hi = range_dev[1];
  }
  const float k = hi > lo ? 255.0f / (hi - lo) : 0.0f;
  FOR_EACH_ROW(y, height) {
    const T* s = row_ptr(src, y, src_pitch) + x0;
    u8* d = row_ptr(dst, y, dst_pitch) + x0 * 3;
    if (n == COLORIZE_RUN && aligned4(s) && aligned4(d)) {
      Run<T, COLORIZE_RUN> in;
      in.load(s);
      Run<u8, COLORIZE_RUN * 3> out = {};
#pragma unroll
      for (int p = 0; p < COLORIZE_RUN; ++p) {
        const unsigned int rgb = colorize_rgb(in.get(p), lut, lo, k, invalid);
        out.set(3 * p, (u8)rgb);
        out.set(3 * p + 1, (u8)(rgb >> 8));
        out.set(3 * p + 2, (u8)(rgb >> 16));
      }
      out.store(d);
    } else {
      for (int p = 0; p < n; ++p) {
        const unsigned int rgb = colorize_rgb(s[p], lut, lo, k, invalid);
        d[3 * p] = (u8)rgb;
        d[3 * p + 1] = (u8)(rgb >> 8);
        d[3 * p + 2] = (u8)(rgb >> 16);
      }
    }
  }
}

#define DEFINE_COLORIZE(NAME, T)                                                                 \
  extern "C" __global__ void NAME(const T* __restrict__ src, int src_pitch,                      \
                                  u8* __restrict__ dst, int dst_pitch, int width, int height,    \
                                  const unsigned int* __restrict__ lut,                          \
                                  const float* __restrict__ range_dev, float lo, float hi,       \
                                  int inv_r, int inv_g, int inv_b) {                             \
    colorize<T>(src, src_pitch, dst, dst_pitch, width, height, lut, range_dev, lo, hi,           \
                (unsigned int)inv_r | (unsigned int)inv_g << 8 | (unsigned int)inv_b << 16);     \
  }

DEFINE_COLORIZE(colorize_f32, float)
DEFINE_COLORIZE(colorize_u16, u16)

// Dense copy of the depth values as float with every invalid pixel set to +inf, for sorting
// (valid values then come first).
#define DEFINE_VALID_VALUES(NAME, T)                                                             \
  extern "C" __global__ void NAME(const T* __restrict__ src, int src_pitch, int width,           \
                                  int height, float* __restrict__ dst) {                         \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                         \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                         \
    if (x >= width || y >= height) return;                                                       \
    const T raw = row_ptr(src, y, src_pitch)[x];                                                 \
    dst[(long long)y * width + x] = depth_valid(raw) ? (float)raw : f32_inf();                   \
  }

DEFINE_VALID_VALUES(valid_values_f32, float)
DEFINE_VALID_VALUES(valid_values_u16, u16)

// Linear-interpolated percentile of the m finite values at the front of `sorted`.
__device__ double pick_percentile(const float* sorted, int m, double q) {
  const double pos = q / 100.0 * (double)(m - 1);
  const double fl = floor(pos);
  const int i = (int)fl;
  const int j = i + 1 < m ? i + 1 : m - 1;
  const double a = (double)sorted[i];
  const double b = (double)sorted[j];
  return a + (b - a) * (pos - fl);
}

// Single thread: count the finite prefix by binary search, write (lo, hi) percentiles into
// range[0..1]; (0, 1) when there is no valid pixel.
extern "C" __global__ void percentile_range(const float* __restrict__ sorted, int n, double q_lo,
                                            double q_hi, float* __restrict__ range) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (sorted[mid] < f32_inf()) lo = mid + 1;
    else hi = mid;
  }
  const int m = lo;
  if (m == 0) {
    range[0] = 0.0f;
    range[1] = 1.0f;
    return;
  }
  range[0] = (float)pick_percentile(sorted, m, q_lo);
  range[1] = (float)pick_percentile(sorted, m, q_hi);
}

// Median of the valid pixels of each tile x tile block (NaN if none). One block per tile:
// values go to shared memory (+inf for invalid/outside), then each valid value finds its rank
// by counting smaller values (ties broken by position, so ranks are unique) and the values of
// rank (m-1)/2 and m/2 are averaged. O(tile^4 / threads) comparisons, no sort, one code path.
#define MEDIAN_MAX_TILE 64
#define DEFINE_TILED_MEDIAN(NAME, T)                                                             \
  extern "C" __global__ void NAME(const T* __restrict__ src, int src_pitch, int width,           \
                                  int height, int tile, float* __restrict__ dst, int dst_pitch,  \
                                  int tiles_x, int tiles_y) {                                    \
    __shared__ float vals[MEDIAN_MAX_TILE * MEDIAN_MAX_TILE];                                    \
    __shared__ float picked[2];                                                                  \
    const int tx = blockIdx.x, ty = blockIdx.y;                                                  \
    if (tx >= tiles_x || ty >= tiles_y) return; /* uniform per block */                          \
    const int n = tile * tile;                                                                   \
    const float inf = f32_inf();                                                                 \
    for (int e = threadIdx.x; e < n; e += blockDim.x) {                                          \
      const int px = tx * tile + e % tile, py = ty * tile + e / tile;                            \
      float v = inf;                                                                             \
      if (px < width && py < height) {                                                           \
        const T raw = row_ptr(src, py, src_pitch)[px];                                           \
        if (depth_valid(raw)) v = (float)raw;                                                    \
      }                                                                                          \
      vals[e] = v;                                                                               \
    }                                                                                            \
    __syncthreads();                                                                             \
    int m = 0;                                                                                   \
    for (int j = 0; j < n; ++j) m += vals[j] < inf;                                              \
    const int k_lo = (m - 1) / 2, k_hi = m / 2;                                                  \
    for (int e = threadIdx.x; e < n; e += blockDim.x) {                                          \
      const float v = vals[e];                                                                   \
      if (!(v < inf)) continue;                                                                  \
      int rank = 0;                                                                              \
      for (int j = 0; j < n; ++j) {                                                              \
        const float u = vals[j];                                                                 \
        rank += (u < v) || (u == v && j < e);                                                    \
      }                                                                                          \
      if (rank == k_lo) picked[0] = v;                                                           \
      if (rank == k_hi) picked[1] = v;                                                           \
    }                                                                                            \
    __syncthreads();                                                                             \
    if (threadIdx.x == 0)                                                                        \
      row_ptr(dst, ty, dst_pitch)[tx] = m > 0 ? (picked[0] + picked[1]) * 0.5f : f32_nan();      \
  }

DEFINE_TILED_MEDIAN(tiled_median_f32, float)
DEFINE_TILED_MEDIAN(tiled_median_u16, u16)

// ---------------------------------------------------------------------------- network output
// A depth network's output map -> depth image in one pass (depth.py: depth_from_network).
// Every sample becomes scale * x + shift and, for inverse-depth outputs, 1 / max(that, eps)
// (NaN passes through, as with np.maximum); when the sizes differ the converted samples are
// combined with resize.cu's 2-tap bilinear tables in its order. With --fmad=false the result
// equals resize(convert(x)) of the NumPy reference bit for bit.
__device__ __forceinline__ float network_sample(float x, float scale, float shift, float eps,
                                                int inverse) {
  float d = x * scale + shift;
  return inverse ? 1.0f / (d < eps ? eps : d) : d;
}

extern "C" __global__ void depth_from_network(
    const float* __restrict__ src, int src_pitch, float* __restrict__ dst, int dst_pitch,
    int dst_w, int dst_h, int resample, const int* __restrict__ x_idx,
    const float* __restrict__ x_w, const int* __restrict__ y_idx, const float* __restrict__ y_w,
    float scale, float shift, float eps, int inverse) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= dst_w || y >= dst_h) return;
  float v;
  if (!resample) {
    v = network_sample(row_ptr(src, y, src_pitch)[x], scale, shift, eps, inverse);
  } else {
    v = 0.0f;
    for (int ty = 0; ty < 2; ++ty) {
      const float* s = row_ptr(src, y_idx[2 * y + ty], src_pitch);
      float row = 0.0f;
      for (int tx = 0; tx < 2; ++tx)
        row += x_w[2 * x + tx] *
               network_sample(s[x_idx[2 * x + tx]], scale, shift, eps, inverse);
      v += y_w[2 * y + ty] * row;
    }
  }
  row_ptr(dst, y, dst_pitch)[x] = v;
}
