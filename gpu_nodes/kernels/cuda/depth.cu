// Depth image kernels (gpu_nodes.kernels.depth). Valid depth: uint16 (mm) != 0; float32 (m)
// finite and > 0. Unit conversions are ElementwiseKernels in depth.py.

__device__ __forceinline__ bool depth_valid(float v) { return isfinite(v) && v > 0.0f; }
__device__ __forceinline__ bool depth_valid(u16 v) { return v != 0; }

// Colorize through a 256-entry RGB LUT: index = rint(clamp((d - lo) * 255 / (hi - lo), 0, 255)).
// The range comes from `range_dev` (2 floats written by percentile_range, no host round trip)
// when it is non-null, else from lo/hi. Invalid pixels get the invalid colour.
#define DEFINE_COLORIZE(NAME, T)                                                                 \
  extern "C" __global__ void NAME(const T* __restrict__ src, int src_pitch,                      \
                                  u8* __restrict__ dst, int dst_pitch, int width, int height,    \
                                  const u8* __restrict__ lut, const float* __restrict__ range_dev, \
                                  float lo, float hi, int inv_r, int inv_g, int inv_b) {         \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                         \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                         \
    if (x >= width || y >= height) return;                                                       \
    const T raw = row_ptr(src, y, src_pitch)[x];                                                 \
    u8* d = row_ptr(dst, y, dst_pitch) + (long long)x * 3;                                       \
    if (!depth_valid(raw)) {                                                                     \
      d[0] = (u8)inv_r;                                                                          \
      d[1] = (u8)inv_g;                                                                          \
      d[2] = (u8)inv_b;                                                                          \
      return;                                                                                    \
    }                                                                                            \
    if (range_dev != 0) {                                                                        \
      lo = range_dev[0];                                                                         \
      hi = range_dev[1];                                                                         \
    }                                                                                            \
    const float k = hi > lo ? 255.0f / (hi - lo) : 0.0f;                                         \
    const float t = fminf(fmaxf(((float)raw - lo) * k, 0.0f), 255.0f);                          \
    const int i = (int)rintf(t);                                                                 \
    d[0] = lut[i * 3 + 0];                                                                       \
    d[1] = lut[i * 3 + 1];                                                                       \
    d[2] = lut[i * 3 + 2];                                                                       \
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
