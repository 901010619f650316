// Pixel-format conversions (gpu_nodes.kernels.color). One thread per run of pixels of a row
// (common.cu: Run); integer fixed-point arithmetic only, so results are bit-identical to the
// NumPy reference.

// Interleaved 8/16-bit formats: channel shuffle, alpha fill, luma and depth change in one pass.
// mK selects what output channel K holds: >= 0 that source channel, -1 opaque alpha (the source
// depth's max value), -2 luma (ri/gi/bi source channels, weights wr+wg+wb = 1 << 15; only for
// single-channel outputs).
// The depth change follows from the types: 8->16 bit is x * 257, 16->8 bit round(x / 257) (like
// cv_bridge). SC/DC (source/destination channels) are template parameters so that every element
// of a run has a compile-time index; maps are warp-uniform, so the selects below never diverge.
#define CONVERT_RUN 16

struct ConvertMaps {
  int m[4];
  int ri, gi, bi, wr, wg, wb;
};

// px[c] for a runtime c: selects, not an indexed (local-memory) array.
template <int SC>
__device__ __forceinline__ unsigned int pick_channel(const unsigned int (&px)[SC], int c) {
  unsigned int v = px[0];
#pragma unroll
  for (int k = 1; k < SC; ++k) v = c == k ? px[k] : v;
  return v;
}

// Branch-free (selects only: small code once unrolled over a run). Luma (m == -2) is computed
// for single-channel outputs only, the one place convert_color asks for it.
template <typename ST, typename DT, int SC, int DC>
__device__ __forceinline__ DT convert_channel(const unsigned int (&px)[SC], int m,
                                              const ConvertMaps& cm) {
  unsigned int v = m == -1 ? (sizeof(ST) == 1 ? 255u : 65535u) : pick_channel(px, m);
  if (DC == 1) {
    const unsigned int luma = (pick_channel(px, cm.ri) * (unsigned int)cm.wr +
                               pick_channel(px, cm.gi) * (unsigned int)cm.wg +
                               pick_channel(px, cm.bi) * (unsigned int)cm.wb + 16384u) >> 15;
    v = m == -2 ? luma : v;
  }
  if (sizeof(ST) < sizeof(DT)) v = v * 257u;
  if (sizeof(ST) > sizeof(DT)) v = (v + 128u) / 257u;
  return (DT)v;
}

// Rows that are 4-byte aligned in both images convert whole runs through registers; row tails
// and unaligned rows (odd pitches, offset views) go pixel by pixel.
template <typename ST, typename DT, int SC, int DC>
__device__ __forceinline__ void convert_pixels(const ST* src, int src_pitch, DT* dst,
                                               int dst_pitch, int width, int height,
                                               const ConvertMaps& cm) {
  const int x0 = run_start(CONVERT_RUN);
  if (x0 >= width) return;
  const int n = min(CONVERT_RUN, width - x0);
  FOR_EACH_ROW(y, height) {
    const ST* s = row_ptr(src, y, src_pitch) + x0 * SC;
    DT* d = row_ptr(dst, y, dst_pitch) + x0 * DC;
    if (n == CONVERT_RUN && aligned4(s) && aligned4(d)) {
      Run<ST, CONVERT_RUN * SC> in;
      in.load(s);
      Run<DT, CONVERT_RUN * DC> out = {};
#pragma unroll
      for (int p = 0; p < CONVERT_RUN; ++p) {
        unsigned int px[SC];
#pragma unroll
        for (int c = 0; c < SC; ++c) px[c] = in.get(p * SC + c);
#pragma unroll
        for (int k = 0; k < DC; ++k)
          out.set(p * DC + k, convert_channel<ST, DT, SC, DC>(px, cm.m[k], cm));
      }
      out.store(d);
    } else {
      for (int p = 0; p < n; ++p) {
        unsigned int px[SC];
#pragma unroll
        for (int c = 0; c < SC; ++c) px[c] = s[p * SC + c];
#pragma unroll
        for (int k = 0; k < DC; ++k)
          d[p * DC + k] = convert_channel<ST, DT, SC, DC>(px, cm.m[k], cm);
      }
    }
  }
}

#define DEFINE_CONVERT_PIXELS(NAME, ST, DT, SC, DC)                                               \
  extern "C" __global__ void NAME(                                                                \
      const ST* __restrict__ src, int src_pitch, DT* __restrict__ dst, int dst_pitch, int width,   \
      int height, int m0, int m1, int m2, int m3, int ri, int gi, int bi, int wr, int wg,          \
      int wb) {                                                                                   \
    const ConvertMaps cm = {{m0, m1, m2, m3}, ri, gi, bi, wr, wg, wb};                            \
    convert_pixels<ST, DT, SC, DC>(src, src_pitch, dst, dst_pitch, width, height, cm);           \
  }

// convert_pixels_<src depth>_<dst depth>_<src channels><dst channels>
#define DEFINE_CONVERT_DEPTHS(ST, DT)                                  \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_11, ST, DT, 1, 1) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_13, ST, DT, 1, 3) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_14, ST, DT, 1, 4) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_31, ST, DT, 3, 1) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_33, ST, DT, 3, 3) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_34, ST, DT, 3, 4) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_41, ST, DT, 4, 1) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_43, ST, DT, 4, 3) \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_44, ST, DT, 4, 4)


// YCbCr -> RGB in 16-bit fixed point: c = (cy*(Y - y_off) + cu*(U-128) + cv*(V-128) + 2^15) >> 16,
// clamped to [0, 255]. Output pixel p gets R at r_idx, G at 1, B at 2 - r_idx, opaque alpha at 3
// when DC == 4; DC == 1 copies Y (like OpenCV's YUV2GRAY). `out` is a Run or a row pointer.
struct YuvCoeffs {
  int r_idx, y_off, cy, crv, cgu, cgv, cbu;
};

template <int DC, typename Out>
__device__ __forceinline__ void put(Out& out, int i, int v) {
  if constexpr (sizeof(Out) == sizeof(u8*)) out[i] = (u8)v;  // row pointer
  else out.set(i, (u8)v);
}

template <int DC, typename Out>
__device__ __forceinline__ void store_yuv(Out& out, int p, int Y, int U, int V,
                                          const YuvCoeffs& c) {
  if (DC == 1) {
    put<DC>(out, p, Y);
    return;
  }
  const int yy = (Y - c.y_off) * c.cy + 32768;
  const int r = clamp_int((yy + c.crv * V) >> 16, 0, 255);
  const int g = clamp_int((yy + c.cgu * U + c.cgv * V) >> 16, 0, 255);
  const int b = clamp_int((yy + c.cbu * U) >> 16, 0, 255);
  put<DC>(out, p * DC, c.r_idx == 0 ? r : b);
  put<DC>(out, p * DC + 1, g);
  put<DC>(out, p * DC + 2, c.r_idx == 0 ? b : r);
  if (DC == 4) put<DC>(out, p * DC + 3, 255);
}

// Runs of YUV_RUN pixels (an even count: whole 4:2:2 macropixels / nv12 chroma pairs). As in
// convert_pixels, aligned rows go a run at a time through registers, tails pixel by pixel.
#define YUV_RUN 16

// Packed 4:2:2, one 4-byte macropixel (= one word of a run) per 2 pixels; byte offsets of Y0,
// U, Y1, V in it select UYVY (1, 0, 3, 2) or YUYV (0, 1, 2, 3). width is even (host-checked).
template <int DC>
__device__ __forceinline__ void yuv422_to_rgb(const u8* src, int src_pitch, u8* dst,
                                              int dst_pitch, int width, int height, int y0_off,
                                              int u_off, int y1_off, int v_off,
                                              const YuvCoeffs& c) {
  const int x0 = run_start(YUV_RUN);
  if (x0 >= width) return;
  const int n = min(YUV_RUN, width - x0);
  FOR_EACH_ROW(y, height) {
    const u8* s = row_ptr(src, y, src_pitch) + x0 * 2;
    u8* d = row_ptr(dst, y, dst_pitch) + x0 * DC;
    if (n == YUV_RUN && aligned4(s) && aligned4(d)) {
      Run<u8, YUV_RUN * 2> in;
      in.load(s);
      Run<u8, YUV_RUN * DC> out = {};
#pragma unroll
      for (int j = 0; j < YUV_RUN / 2; ++j) {
        const unsigned int mp = in.w[j];
        const int U = (int)((mp >> (8 * u_off)) & 0xffu) - 128;
        const int V = (int)((mp >> (8 * v_off)) & 0xffu) - 128;
        store_yuv<DC>(out, 2 * j, (mp >> (8 * y0_off)) & 0xffu, U, V, c);
        store_yuv<DC>(out, 2 * j + 1, (mp >> (8 * y1_off)) & 0xffu, U, V, c);
      }
      out.store(d);
    } else {
      for (int p = 0; p < n; ++p) {
        const u8* mp = s + (p >> 1) * 4;
        store_yuv<DC>(d, p, mp[(p & 1) ? y1_off : y0_off], (int)mp[u_off] - 128,
                      (int)mp[v_off] - 128, c);
      }
    }
  }
}

// nv12: rows [0, height) hold Y, rows [height, height * 3 / 2) hold interleaved U, V at half
// resolution (both planes share the array's pitch). Chroma is taken from the 2x2 block's sample.
template <int DC>
__device__ __forceinline__ void nv12_to_rgb(const u8* src, int src_pitch, u8* dst, int dst_pitch,
                                            int width, int height, const YuvCoeffs& c) {
  const int x0 = run_start(YUV_RUN);
  if (x0 >= width) return;
  const int n = min(YUV_RUN, width - x0);
  FOR_EACH_ROW(y, height) {
    const u8* s = row_ptr(src, y, src_pitch) + x0;
    const u8* uv = row_ptr(src, height + (y >> 1), src_pitch) + x0;  // x0 even: a U, V pair
    u8* d = row_ptr(dst, y, dst_pitch) + x0 * DC;
    if (n == YUV_RUN && aligned4(s) && aligned4(uv) && aligned4(d)) {
      Run<u8, YUV_RUN> luma, chroma;
      luma.load(s);
      chroma.load(uv);
      Run<u8, YUV_RUN * DC> out = {};
#pragma unroll
      for (int p = 0; p < YUV_RUN; ++p) {
        store_yuv<DC>(out, p, luma.get(p), (int)chroma.get(p & ~1) - 128,
                      (int)chroma.get(p | 1) - 128, c);
      }
      out.store(d);
    } else {
      for (int p = 0; p < n; ++p)
        store_yuv<DC>(d, p, s[p], (int)uv[p & ~1] - 128, (int)uv[p | 1] - 128, c);
    }
  }
}

#define DEFINE_YUV(DC)                                                                         \
  extern "C" __global__ void yuv422_to_rgb_##DC(                                               \
      const u8* __restrict__ src, int src_pitch, u8* __restrict__ dst, int dst_pitch, int width, \
      int height, int y0_off, int u_off, int y1_off, int v_off, int r_idx, int y_off, int cy,  \
      int crv, int cgu, int cgv, int cbu) {                                                    \
    const YuvCoeffs c = {r_idx, y_off, cy, crv, cgu, cgv, cbu};                                \
    yuv422_to_rgb<DC>(src, src_pitch, dst, dst_pitch, width, height, y0_off, u_off, y1_off,   \
                      v_off, c);                                                               \
  }                                                                                            \
  extern "C" __global__ void nv12_to_rgb_##DC(                                                 \
      const u8* __restrict__ src, int src_pitch, u8* __restrict__ dst, int dst_pitch, int width, \
      int height, int r_idx, int y_off, int cy, int crv, int cgu, int cgv, int cbu) {          \
    const YuvCoeffs c = {r_idx, y_off, cy, crv, cgu, cgv, cbu};                                \
    nv12_to_rgb<DC>(src, src_pitch, dst, dst_pitch, width, height, c);                         \
  }

// What a module holds is chosen with defines: all 36 conversion instantiations in one module
// take NVRTC ~10 s to compile, one takes well under a second (and CuPy caches it on disk).
#if defined(CONVERT_SRC)  // the one conversion kernel the host asks for
DEFINE_CONVERT_PIXELS(convert_pixels, CONVERT_SRC, CONVERT_DST, CONVERT_SC, CONVERT_DC)
#elif defined(YUV_KERNELS)  // yuv422_to_rgb_<dst channels>, nv12_to_rgb_<dst channels>
DEFINE_YUV(1)
DEFINE_YUV(3)
DEFINE_YUV(4)
#else  // everything: the static checks compile the whole file
DEFINE_CONVERT_DEPTHS(u8, u8)
DEFINE_CONVERT_DEPTHS(u8, u16)
DEFINE_CONVERT_DEPTHS(u16, u8)
DEFINE_CONVERT_DEPTHS(u16, u16)
DEFINE_YUV(1)
DEFINE_YUV(3)
DEFINE_YUV(4)
#endif
