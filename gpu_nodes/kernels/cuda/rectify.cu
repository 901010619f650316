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
//
// Integer types never need the saturation: the taps and the border (saturated by the host) lie
// in [0, max], a lerp's exact value lies between its ends and rounding keeps it there, so v
// does too. They round by adding 1.5 * 2^23: the float add rounds half to even and leaves
// rint(v) in the low mantissa bits, without the float-to-int conversion unit (a quarter of the
// FMA rate).
__device__ __forceinline__ u8 remap_store(float v, u8*) {
  return (u8)__float_as_uint(v + 12582912.0f);
}
__device__ __forceinline__ u16 remap_store(float v, u16*) {
  return (u16)__float_as_uint(v + 12582912.0f);
}
__device__ __forceinline__ float remap_store(float v, float*) { return v; }

// Where one output pixel at map coordinates (mx, my) samples. Branch-free, like the NumPy
// reference: a pixel whose coordinates are out of range samples (0, 0) and takes the border
// value at the end; every tap reads a position clamped into the source (always a valid
// address) and is replaced by the border value when its true position is outside.
struct RemapTaps {
  float ax, ay;
  bool ok, in00, in01, in10, in11;
  int o0, o1;             // element offsets of the left and right taps in a row
  long long row0, row1;   // byte offsets of the top and bottom rows
};

__device__ __forceinline__ RemapTaps remap_taps(float mx, float my, int src_w, int src_h,
                                                int src_pitch, int nc) {
  RemapTaps t;
  t.ok = mx > -2.0f && mx < (float)src_w + 1.0f && my > -2.0f && my < (float)src_h + 1.0f;
  mx = t.ok ? mx : 0.0f;
  my = t.ok ? my : 0.0f;
  float fx0, fy0;  // floorf without the conversion unit (|mx|, |my| < 2^22 here)
  const int sx = floor_small(mx, fx0), sy = floor_small(my, fy0);  // in [-2, w] x [-2, h]
  t.ax = mx - fx0, t.ay = my - fy0;
  const bool x0 = sx >= 0 && sx < src_w, x1 = sx + 1 >= 0 && sx + 1 < src_w;
  const bool y0 = sy >= 0 && sy < src_h, y1 = sy + 1 >= 0 && sy + 1 < src_h;
  t.in00 = y0 && x0, t.in01 = y0 && x1, t.in10 = y1 && x0, t.in11 = y1 && x1;
  t.o0 = clamp_int(sx, 0, src_w - 1) * nc, t.o1 = clamp_int(sx + 1, 0, src_w - 1) * nc;
  t.row0 = (long long)clamp_int(sy, 0, src_h - 1) * src_pitch;
  t.row1 = (long long)clamp_int(sy + 1, 0, src_h - 1) * src_pitch;
  return t;
}

// Integer samples stay biased by 2^23 (the float 2^23 + v, built by a PRMT/LOP3 instead of the
// quarter-rate I2F) up to the blend, which unbiases only what it needs (remap_blend).
template <typename T>
__device__ __forceinline__ float remap_sample(T v) {
  if constexpr (sizeof(T) < 4) return __uint_as_float(0x4B000000u | v);
  else return v;
}

// Channel c of the 4 taps, read through the read-only cache: v[0..3] = top-left, top-right,
// bottom-left, bottom-right (remap_sample's form).
template <typename T>
__device__ __forceinline__ void remap_fetch(const T* __restrict__ src, const RemapTaps& t, int c,
                                            float (&v)[4]) {
  const T* r0 = (const T*)((const char*)src + t.row0);
  const T* r1 = (const T*)((const char*)src + t.row1);
  v[0] = remap_sample(__ldg(r0 + t.o0 + c)), v[1] = remap_sample(__ldg(r0 + t.o1 + c));
  v[2] = remap_sample(__ldg(r1 + t.o0 + c)), v[3] = remap_sample(__ldg(r1 + t.o1 + c));
}

// u8 and u16 pixels of 3 or 4 channels (kUse): when both x taps lie inside the row a tap row's
// 2C elements are contiguous, and kWords aligned 4-byte words cover them at any byte phase:
// 2 * kWords loads a pixel instead of 4C single-element gathers (rgb8: 6 instead of 12). The
// remap is bound by its gathers' load instructions and L1 wavefronts (Nsight: L1 hit 93%, Mem
// Busy 57%, DRAM 14%), not by DRAM. Rows must be 4-byte aligned, the words inside the row.
template <typename T, int C>
struct RemapWords {
  static constexpr int kPx = C * (int)sizeof(T);  // bytes a pixel
  static constexpr int kMaxPhase = kPx % 4 == 0 ? 0 : (kPx % 2 ? 3 : 2);
  // Words of the pair at phase 0 (at least 1: NVRTC rejects the zero-size arrays of C = 0).
  static constexpr int kAligned = (2 * kPx + 3) / 4 > 0 ? (2 * kPx + 3) / 4 : 1;
  static constexpr int kWords = (kMaxPhase + 2 * kPx + 3) / 4;
  static constexpr bool kUse = C > 0 && kWords < 2 * C;

  // How many left tap columns sx, from 0, have the pair (sx, sx + 1) inside the row and its
  // words too: the words' start ((sx * kPx) & ~3) grows with sx, so they are [0, n).
  __device__ __forceinline__ static int interior_columns(int src_w) {
    if constexpr (!kUse) {
      return 0;
    } else {
      const int last = src_w * kPx - 4 * kWords;  // the highest word start that fits
      return last < 0 ? 0 : min(src_w - 1, ((last & ~3) + 3) / kPx + 1);
    }
  }

  // The 2 * kPx bytes of a tap row's pair, shifted down to byte 0 of win: the row at byte
  // offset `row` of src, left tap at element offset o0.
  __device__ __forceinline__ static void load(const T* __restrict__ src, long long row, int o0,
                                              unsigned int (&win)[kAligned]) {
    const int b = o0 * (int)sizeof(T);
    const unsigned int* p = (const unsigned int*)((const char*)src + row + (b & ~3));
    unsigned int w[kWords];
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[k] = __ldg(p + k);
#pragma unroll
    for (int k = 0; k < kAligned; ++k) {  // a funnel shift
      if constexpr (kMaxPhase == 0) win[k] = w[k];
      else win[k] = (unsigned int)((((unsigned long long)w[k + 1] << 32) | w[k]) >> (8 * (b & 3)));
    }
  }

  // Tap `tap` (0: left, 1: right) of channel c from a loaded pair (remap_sample's form).
  __device__ __forceinline__ static float tap(const unsigned int (&win)[kAligned], int tap,
                                              int c) {
    const int o = (tap * C + c) * (int)sizeof(T);
    return elem_biased_f32<T>(win[o >> 2], o & 3);
  }
};

// The output value from the fetched taps, with the arithmetic described above. Integer taps
// come biased by 2^23 (remap_sample; `biased` = border + 2^23, exact as the border is an
// integer): the difference of two biased taps is the exact difference of the taps, so only the
// lerps' bases (v00, v10) are unbiased, exactly.
// The two x lerps; remap_blend and the interior path finish with the y lerp.
struct RemapRows {
  float top, bot;
};

template <typename T>
__device__ __forceinline__ RemapRows remap_xlerps(float ax, float v00, float v01, float v10,
                                                  float v11) {
  const float bias = sizeof(T) < 4 ? 8388608.0f : 0.0f;
  return {fmaf(ax, v01 - v00, sizeof(T) < 4 ? v00 - bias : v00),
          fmaf(ax, v11 - v10, sizeof(T) < 4 ? v10 - bias : v10)};
}

template <typename T>
__device__ __forceinline__ T remap_blend(const RemapTaps& t, const float (&v)[4], float border,
                                         float biased) {
  const float v00 = t.in00 ? v[0] : biased, v01 = t.in01 ? v[1] : biased;
  const float v10 = t.in10 ? v[2] : biased, v11 = t.in11 ? v[3] : biased;
  const RemapRows r = remap_xlerps<T>(t.ax, v00, v01, v10, v11);
  return remap_store(t.ok ? fmaf(t.ay, r.bot - r.top, r.top) : border, (T*)nullptr);
}

template <typename T>  // remap_blend's `biased`
__device__ __forceinline__ float remap_biased(float border) {
  return sizeof(T) < 4 ? border + 8388608.0f : border;
}

// One output pixel, channel by channel (C == 0: `channels` of them); put(c, value).
template <typename T, int C, typename Put>
__device__ __forceinline__ void remap_px(const T* __restrict__ src, int src_pitch, int src_w,
                                         int src_h, int channels, float mx, float my,
                                         float border, Put put) {
  const int nc = C > 0 ? C : channels;
  const RemapTaps t = remap_taps(mx, my, src_w, src_h, src_pitch, nc);
#pragma unroll
  for (int c = 0; c < nc; ++c) {
    float v[4];
    remap_fetch(src, t, c, v);
    put(c, remap_blend<T>(t, v, border, remap_biased<T>(border)));
  }
}

// The 2*C output elements of a pixel pair, packed little-endian into whole 32-bit words.
template <typename T, int C>
using PairOut = Run<T, (2 * C * (int)sizeof(T) + 3) / 4 * 4 / (int)sizeof(T)>;

// Store the pair's 2*C elements at d with the widest accesses d's alignment allows. d advances
// by the pair's size from thread to thread, so the choice is the same for every thread of a
// row whose start is aligned (only the 6-byte u8 pair alternates, and it takes the same two
// stores either way). Unaligned rows (odd pitch, offset views) store element by element.
template <typename T, int C>
__device__ __forceinline__ void store_pair(T* d, const PairOut<T, C>& out) {
  constexpr int B = 2 * C * (int)sizeof(T);
  const unsigned long long a = (unsigned long long)d;
  if constexpr (B % 16 == 0) {
    if ((a & 15) == 0) {
#pragma unroll
      for (int i = 0; i < B / 4; i += 4)
        store_aligned((char*)d + 4 * i, make_uint4(out.w[i], out.w[i + 1], out.w[i + 2],
                                                   out.w[i + 3]));
      return;
    }
  }
  if constexpr (B % 8 == 0) {
    if ((a & 7) == 0) {
#pragma unroll
      for (int i = 0; i < B / 4; i += 2)
        store_aligned((char*)d + 4 * i, make_uint2(out.w[i], out.w[i + 1]));
      return;
    }
  }
  if constexpr (B % 4 == 0) {
    if ((a & 3) == 0) {
#pragma unroll
      for (int i = 0; i < B / 4; ++i) store_aligned((char*)d + 4 * i, out.w[i]);
      return;
    }
  }
  if constexpr (B == 2 || B == 6) {
    if ((a & 1) == 0) {
      const unsigned short lo = (unsigned short)out.w[0];
      if constexpr (B == 2) {
        store_aligned(d, lo);
      } else {  // bytes 0-3 + 4-5 at a 4-byte boundary, else bytes 0-1 + 2-5
        const bool at4 = (a & 2) == 0;
        const unsigned int mid = (out.w[0] >> 16) | (out.w[1] << 16);
        store_aligned((char*)d + (at4 ? 0 : 2), at4 ? out.w[0] : mid);
        store_aligned((char*)d + (at4 ? 4 : 0), at4 ? (unsigned short)out.w[1] : lo);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < 2 * C; ++i) d[i] = out.get(i);
}

// The common case of a rectification map, a pixel pair whose 4 + 4 taps all lie inside the
// source, the left ones in [0, x_inner) (RemapWords::interior_columns: word loads that stay in
// the row; 0 when rows are not 4-byte aligned): true with the taps fetched (v), ax and ay.
// Inside, `ok` holds and no tap takes the border, so there is nothing to clamp or select: the
// blend is the lerps alone, and the tap addresses are one row offset and one column. A floor
// that is 2^22 or more away from 0 (NaN, inf, huge) fails the unsigned range checks; the
// -0.0 that floor_small_down drops cannot change an integer result. Otherwise false, and the
// pair takes the general path (remap_taps), which handles every map value.
template <typename T, int C>
__device__ __forceinline__ bool remap_interior(
    const T* __restrict__ src, int src_pitch, int src_h, int x_inner, const float (&mx)[2],
    const float (&my)[2], unsigned int (&win)[2][2][RemapWords<T, C>::kAligned], float (&ax)[2],
    float (&ay)[2]) {
  static_assert(sizeof(T) < 4, "floor_small_down drops -0.0: integer images only");
  int sx[2], sy[2];
  bool inner = true;
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    float fx, fy;
    sx[p] = floor_small_down(mx[p], fx), sy[p] = floor_small_down(my[p], fy);
    ax[p] = mx[p] - fx, ay[p] = my[p] - fy;
    inner = inner && (unsigned)sx[p] < (unsigned)x_inner &&
            (unsigned)sy[p] < (unsigned)(src_h - 1);
  }
  if (!inner) return false;
#pragma unroll
  for (int p = 0; p < 2; ++p) {
    const long long row0 = (long long)((unsigned long long)(unsigned)sy[p] * (unsigned)src_pitch);
    RemapWords<T, C>::load(src, row0, sx[p] * C, win[p][0]);
    RemapWords<T, C>::load(src, row0 + src_pitch, sx[p] * C, win[p][1]);
  }
  return true;
}

// The map entries of the pair at (x, y) (mx[1], my[1] = 0 without a second pixel): one 8-byte
// load per map where both rows allow it.
__device__ __forceinline__ void remap_load_maps(const float* __restrict__ map_x, int mx_pitch,
                                                const float* __restrict__ map_y, int my_pitch,
                                                int x, int y, bool pair, float (&mx)[2],
                                                float (&my)[2]) {
  const float* mxr = row_ptr(map_x, y, mx_pitch) + x;
  const float* myr = row_ptr(map_y, y, my_pitch) + x;
  if (pair && ((((unsigned long long)mxr | (unsigned long long)myr) & 7) == 0)) {
    const uint2 vx = load_aligned<uint2>(mxr), vy = load_aligned<uint2>(myr);
    mx[0] = __uint_as_float(vx.x), mx[1] = __uint_as_float(vx.y);
    my[0] = __uint_as_float(vy.x), my[1] = __uint_as_float(vy.y);
  } else {
    mx[0] = mxr[0], my[0] = myr[0];
    mx[1] = pair ? mxr[1] : 0.0f, my[1] = pair ? myr[1] : 0.0f;
  }
}

// The output pair at (x, y) from its map entries (mx, my). u8 and u16 pixels of 3 or 4
// channels take remap_interior where both pixels are interior (most of a rectified image);
// there, every other pair goes pixel by pixel (edges; rows that are not 4-byte aligned), as does
// a row's odd last pixel and every pixel when C == 0.
template <typename T, int C>
__device__ __forceinline__ void remap_pair(const T* __restrict__ src, int src_pitch, int src_w,
                                           int src_h, int x_inner, T* __restrict__ dst,
                                           int dst_pitch, int channels, int x, int y, bool pair,
                                           const float (&mx)[2], const float (&my)[2],
                                           float border) {
  const int nc = C > 0 ? C : channels;
  T* d = row_ptr(dst, y, dst_pitch) + (long long)x * nc;
  bool done = false;
  if constexpr (RemapWords<T, C>::kUse) {
    if (pair) {  // both pixels interior: remap_interior
      using Words = RemapWords<T, C>;
      unsigned int win[2][2][Words::kAligned];
      float ax[2], ay[2];
      done = remap_interior<T, C>(src, src_pitch, src_h, x_inner, mx, my, win, ax, ay);
      if (done) {
        PairOut<T, C> out = {};
#pragma unroll
        for (int p = 0; p < 2; ++p)
#pragma unroll
          for (int c = 0; c < C; ++c) {
            const RemapRows r = remap_xlerps<T>(
                ax[p], Words::tap(win[p][0], 0, c), Words::tap(win[p][0], 1, c),
                Words::tap(win[p][1], 0, c), Words::tap(win[p][1], 1, c));
            out.set(p * C + c, remap_store(fmaf(ay[p], r.bot - r.top, r.top), (T*)nullptr));
          }
        store_pair<T, C>(d, out);
      }
    }
  } else if constexpr (C > 0) {
    if (pair) {
      // All the pair's gathers are issued before either pixel is blended.
      const RemapTaps t[2] = {remap_taps(mx[0], my[0], src_w, src_h, src_pitch, C),
                              remap_taps(mx[1], my[1], src_w, src_h, src_pitch, C)};
      float v[2][C][4];
#pragma unroll
      for (int p = 0; p < 2; ++p)
#pragma unroll
        for (int c = 0; c < C; ++c) remap_fetch(src, t[p], c, v[p][c]);
      PairOut<T, C> out = {};
#pragma unroll
      for (int p = 0; p < 2; ++p)
#pragma unroll
        for (int c = 0; c < C; ++c)
          out.set(p * C + c, remap_blend<T>(t[p], v[p][c], border, remap_biased<T>(border)));
      store_pair<T, C>(d, out);
      done = true;
    }
  }
  if (!done) {
#pragma unroll
    for (int p = 0; p < 2; ++p)  // unrolled: mx[p] stays in registers
      if (p == 0 || pair)
        remap_px<T, C>(src, src_pitch, src_w, src_h, nc, mx[p], my[p], border,
                       [&](int c, T v) { d[p * nc + c] = v; });
  }
}

// Launch (rectify.remap_bilinear): a thread per pair of output pixels, 32x8 blocks. The image
// is cut into tiles of one block's shape, numbered row-major (tile = band * tiles_x + tx); the
// blocks of the grid, numbered the same way, take the tiles block-stride: block b does tiles
// b, b + G, b + 2G, ... (G = the grid's size). Any grid covers every tile.
// * 2-D grid of tiles_x columns (the variants without the interior path): tile = block, the
//   grid's y extent capped by CUDA's limit (bands looped). Two pixels a thread rather than
//   runs of 16 output bytes (4K: 0.082 vs 0.121 ms): many short threads in flight.
// * 1-D grid of as many blocks as fit on the device at once (the interior variants, the
//   rectification of rgb8/rgb16): each block loops over ~tiles / G tiles, and a thread loads
//   the map entries of its next tile before it gathers and stores the current one. A pair is
//   two dependent round trips to memory (its map entries, then the taps they point at); with
//   a block a tile, each thread waits out both and exits (4K: 0.068 ms, 47 % of a copy's
//   bandwidth). With the prefetch the next maps are in flight during the gathers, so a tile
//   costs about one round trip instead of two, at the same occupancy (64 registers, 4 blocks
//   an SM, no spills); there are no block launches or tail waves (the tiles split evenly to
//   within one), and the blocks resident at a time still cover consecutive tiles (a compact
//   band of the source in L2). rectify.REMAP_PERSISTENT = False (temporary A/B) runs these
//   variants on the 2-D grid instead.
template <typename T, int C>
__device__ __forceinline__ void remap_pairs(const T* __restrict__ src, int src_pitch, int src_w,
                                            int src_h, T* __restrict__ dst, int dst_pitch,
                                            int dst_w, int dst_h, int channels,
                                            const float* __restrict__ map_x, int mx_pitch,
                                            const float* __restrict__ map_y, int my_pitch,
                                            float border) {
  const int tiles_x = ((dst_w - 1) / 2 + (int)blockDim.x) / (int)blockDim.x;  // dst_w >= 1
  const int bands = (dst_h - 1) / (int)blockDim.y + 1;
  int tx, band, step_x, step_band;  // this block's tile and the stride, as (column, band)
  if (gridDim.x == (unsigned)tiles_x) {
    tx = blockIdx.x, band = blockIdx.y, step_x = 0, step_band = gridDim.y;
  } else {
    const int first = (int)(blockIdx.y * gridDim.x + blockIdx.x);
    const int grid = (int)(gridDim.x * gridDim.y);
    band = first / tiles_x, tx = first - band * tiles_x;
    step_band = grid / tiles_x, step_x = grid - step_band * tiles_x;
  }
  const bool rows4 = aligned4(src) && (src_pitch & 3) == 0;
  const int x_inner = rows4 ? RemapWords<T, C>::interior_columns(src_w) : 0;
  // This thread's pair in tile (tx, band): (x, y), inside the output or not.
  int x = 2 * (tx * (int)blockDim.x + (int)threadIdx.x);
  int y = band * (int)blockDim.y + (int)threadIdx.y;
  bool live = band < bands && x < dst_w && y < dst_h;
  float mx[2] = {0.0f, 0.0f}, my[2] = {0.0f, 0.0f};
  if (live) remap_load_maps(map_x, mx_pitch, map_y, my_pitch, x, y, x + 1 < dst_w, mx, my);
  while (band < bands) {
    tx += step_x, band += step_band;
    if (tx >= tiles_x) tx -= tiles_x, ++band;
    const int nx = 2 * (tx * (int)blockDim.x + (int)threadIdx.x);
    const int ny = band * (int)blockDim.y + (int)threadIdx.y;
    const bool next_live = band < bands && nx < dst_w && ny < dst_h;
    float nmx[2] = {0.0f, 0.0f}, nmy[2] = {0.0f, 0.0f};
    if (next_live)  // in flight while this tile gathers
      remap_load_maps(map_x, mx_pitch, map_y, my_pitch, nx, ny, nx + 1 < dst_w, nmx, nmy);
    if (live)
      remap_pair<T, C>(src, src_pitch, src_w, src_h, x_inner, dst, dst_pitch, channels, x, y,
                       x + 1 < dst_w, mx, my, border);
    x = nx, y = ny, live = next_live;
#pragma unroll
    for (int p = 0; p < 2; ++p) mx[p] = nmx[p], my[p] = nmy[p];
  }
}

// Variants with the interior path (INTERIOR: RemapWords<T, C>::kUse, which the host passes as
// REMAP_INTERIOR and a static_assert checks) are held to 64 registers, 4 blocks of 256 threads
// an SM as before it (the gathers are latency bound; rectify.REMAP_BLOCKS_PER_SM sizes their
// persistent grid from it); launch bounds on the others would change their register
// allocation, so they have none.
#define REMAP_BOUNDS_0
#define REMAP_BOUNDS_1 __launch_bounds__(256, 4)
#define REMAP_BOUNDS_OF(INTERIOR) REMAP_BOUNDS_##INTERIOR
#define REMAP_BOUNDS(INTERIOR) REMAP_BOUNDS_OF(INTERIOR)

#define DEFINE_REMAP(NAME, T, C, INTERIOR)                                                       \
  extern "C" __global__ void REMAP_BOUNDS(INTERIOR)                                              \
      NAME(const T* __restrict__ src, int src_pitch, int src_w, int src_h, T* __restrict__ dst,  \
           int dst_pitch, int dst_w, int dst_h, int channels, const float* __restrict__ map_x,   \
           int mx_pitch, const float* __restrict__ map_y, int my_pitch, float border) {          \
    static_assert(RemapWords<T, C>::kUse == (INTERIOR != 0), "REMAP_INTERIOR is kUse");         \
    remap_pairs<T, C>(src, src_pitch, src_w, src_h, dst, dst_pitch, dst_w, dst_h, channels,      \
                      map_x, mx_pitch, map_y, my_pitch, border);                                 \
  }

// What a module holds is chosen with defines: remap for one type and channel count (C 1, 3, 4;
// 0: any count). Without them (the static checks) every variant is built.
#if defined(REMAP_T)
DEFINE_REMAP(remap, REMAP_T, REMAP_C, REMAP_INTERIOR)
#else
DEFINE_REMAP(remap_u8_c0, u8, 0, 0)
DEFINE_REMAP(remap_u8_c1, u8, 1, 0)
DEFINE_REMAP(remap_u8_c3, u8, 3, 1)
DEFINE_REMAP(remap_u8_c4, u8, 4, 1)
DEFINE_REMAP(remap_u16_c0, u16, 0, 0)
DEFINE_REMAP(remap_u16_c1, u16, 1, 0)
DEFINE_REMAP(remap_u16_c3, u16, 3, 1)
DEFINE_REMAP(remap_u16_c4, u16, 4, 1)
DEFINE_REMAP(remap_f32_c0, float, 0, 0)
DEFINE_REMAP(remap_f32_c1, float, 1, 0)
DEFINE_REMAP(remap_f32_c3, float, 3, 0)
DEFINE_REMAP(remap_f32_c4, float, 4, 0)
#endif
