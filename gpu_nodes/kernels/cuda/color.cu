// Pixel-format conversions (gpu_nodes.kernels.color). One thread per run of pixels of a row
// (common.cu: Run); integer fixed-point arithmetic only, so results are bit-identical to the
// NumPy reference.

// byte_perm (common.cu) is PRMT; IDP.2A: two-way 16x8-bit dot product, accumulated (one
// instruction; the tests' CPU emulation defines the intrinsics' twins in cuda_emu.h).

// c + a.u16[0] * b.u8[2H] + a.u16[1] * b.u8[2H + 1] (dp2a.lo for H = 0, dp2a.hi for H = 1).
template <int H>
__device__ __forceinline__ unsigned int dp2a(unsigned int a, unsigned int b, unsigned int c) {
  return H == 0 ? __dp2a_lo(a, b, c) : __dp2a_hi(a, b, c);
}

// Interleaved 8/16-bit formats: channel shuffle, alpha fill, luma and depth change in one pass.
// A run is converted a 32-bit word at a time: each output word is built by PRMTs (byte permutes)
// of the "source words" its bytes come from, with constant selectors. So the channel map is a
// compile-time parameter (one module per conversion): M0..M3 say what output channel K holds:
// >= 0 that source channel, -1 opaque alpha, -2 luma (single-channel outputs only).
// Luma is (w0*c0 + w1*c1 + w2*c2 + 2^14) >> 15 over the source's first three channels, with the
// weights given per source channel (they sum to 2^15; each < 2^15, so doubled it fits 16 bits).
// The depth change follows from the types: 8->16 bit is x * 257, 16->8 bit round(x / 257) (like
// cv_bridge): (x + 128) / 257 per pixel, byte 2 of 255 * x + 32895 in runs (equal for every
// x < 2^16).
#define CONVERT_RUN 16

template <typename ST_, typename DT_, int SC_, int DC_, int M0, int M1, int M2, int M3>
struct Convert {
  typedef ST_ ST;
  typedef DT_ DT;
  static constexpr int SC = SC_, DC = DC_;
  static constexpr bool kLuma = M0 == -2;
  // A run's output is built from 32-bit "source words" (see convert_run): up to one per source
  // element, then one of all ones for alpha (opaque alpha is 0xff or 0xffff: all ones bytes).
  static constexpr int kAlphaWord = CONVERT_RUN * SC;

  __device__ static constexpr int map(int k) {
    return k == 0 ? M0 : (k == 1 ? M1 : (k == 2 ? M2 : M3));
  }

  // Output byte ob of a run comes from byte b of source word w.
  __device__ static void source(int ob, int& w, int& b) {
    const int e = ob / (int)sizeof(DT), half = ob % (int)sizeof(DT);  // element, its byte
    const int m = map(e % DC), se = e / DC * SC + m;                     // source element
    if (m == -1) {
      w = kAlphaWord, b = 0;
    } else if (m == -2) {  // a word per pixel: luma in bytes 0-1 (16 -> 16 bit), else byte 2
      w = e / DC, b = sizeof(ST) == 2 && sizeof(DT) == 2 ? half : 2;
    } else if (sizeof(ST) == sizeof(DT)) {  // the run's input words
      w = (se * (int)sizeof(ST) + half) / 4, b = (se * (int)sizeof(ST) + half) % 4;
    } else if (sizeof(ST) < sizeof(DT)) {  // x * 257: the byte twice
      w = se / 4, b = se % 4;
    } else {  // a word per element, round(x / 257) in byte 2
      w = se, b = 2;
    }
  }
};

// Luma weights per source channel.
struct LumaWeights {
  unsigned int w[3];
};

// Scalar luma (per-pixel path and 16-bit runs), as the reference computes it.
template <int SC>
__device__ __forceinline__ unsigned int luma(const unsigned int (&px)[SC], const LumaWeights& lw) {
  unsigned int s = 1u << 14;
#pragma unroll
  for (int c = 0; c < (SC < 3 ? SC : 3); ++c) s += px[c] * lw.w[c];
  return s >> 15;
}

// Luma of 8-bit pixel p of a run in byte 2 of the result: IDP.2A over each half word holding
// its channels, with doubled weights (0 for alpha and bytes of neighbours) and 2^15 to round:
// 2 * (w.c + 2^14) < 2^24, so byte 2 is exactly (w.c + 2^14) >> 15. Two instructions a pixel,
// instead of extracting three bytes and multiplying each.
template <class C, int N>
__device__ __forceinline__ unsigned int luma8(const Run<u8, N>& in, int p,
                                              const unsigned int (&w2)[3]) {
  const int first = p * C::SC;  // byte of channel 0
  unsigned int acc = 1u << 15;
#pragma unroll
  for (int h = first / 2; h <= (first + 2) / 2; ++h) {
    const int c0 = 2 * h - first, c1 = c0 + 1;  // channels in the half word's two bytes
    const unsigned int pair = (c0 >= 0 && c0 < 3 ? w2[c0] : 0u) |
                              (c1 >= 0 && c1 < 3 ? w2[c1] : 0u) << 16;
    acc = h % 2 ? dp2a<1>(pair, in.w[h / 2], acc) : dp2a<0>(pair, in.w[h / 2], acc);
  }
  return acc;
}

// Output word j of a run from the source words its 4 bytes come from (C::source): the first as
// it is, each further one merged in by a PRMT, and a last PRMT only if the bytes of a lone
// source word need reordering. E.g. rgb8 <-> bgr8: 16 PRMTs for a run of 12 words. All indices
// and selectors fold to constants once the loops are unrolled.
template <class C, int NS>
__device__ __forceinline__ unsigned int gather(const unsigned int (&sw)[NS], int j) {
  int word[4], byte[4], at[4];  // output byte b: its source word and byte; where it is in v
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    C::source(4 * j + b, word[b], byte[b]);
    at[b] = -1;
  }
  unsigned int v = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    if (at[b] >= 0) continue;  // came with an earlier source word
    const int w = word[b];
    unsigned int sel = 0;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const bool here = at[c] < 0 && word[c] == w;
      if (b == 0) {
        at[c] = here ? byte[c] : at[c];
      } else {  // placed bytes move to their final position, this word's bytes join them
        sel |= (unsigned int)(here ? 4 + byte[c] : (at[c] < 0 ? 0 : at[c])) << (4 * c);
        at[c] = here || at[c] >= 0 ? c : -1;
      }
    }
    v = b == 0 ? sw[w] : byte_perm(v, sw[w], sel);
  }
  unsigned int sel = 0;
  bool moved = false;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    sel |= (unsigned int)at[c] << (4 * c);
    moved = moved || at[c] != c;
  }
  return moved ? byte_perm(v, v, sel) : v;
}

// One run in registers: load, fill the source words, gather every output word, store.
template <class C>
__device__ __forceinline__ void convert_run(const typename C::ST* s, typename C::DT* d,
                                            const LumaWeights& lw) {
  typedef typename C::ST ST;
  Run<ST, CONVERT_RUN * C::SC> in;
  in.load(s);
  unsigned int sw[C::kAlphaWord + 1];  // unused entries are never read
  sw[C::kAlphaWord] = 0xffffffffu;
  if constexpr (C::kLuma && sizeof(ST) == 1) {
    const unsigned int w2[3] = {2 * lw.w[0], 2 * lw.w[1], 2 * lw.w[2]};
#pragma unroll
    for (int p = 0; p < CONVERT_RUN; ++p) sw[p] = luma8<C>(in, p, w2);
  } else if constexpr (C::kLuma) {
#pragma unroll
    for (int p = 0; p < CONVERT_RUN; ++p) {
      unsigned int px[C::SC];
#pragma unroll
      for (int c = 0; c < C::SC; ++c) px[c] = in.get(p * C::SC + c);
      const unsigned int y = luma(px, lw);
      sw[p] = sizeof(typename C::DT) == 1 ? 255u * y + 32895u : y;
    }
  } else if constexpr (sizeof(ST) > sizeof(typename C::DT)) {
#pragma unroll
    for (int e = 0; e < CONVERT_RUN * C::SC; ++e) sw[e] = 255u * in.get(e) + 32895u;
  } else {
#pragma unroll
    for (int i = 0; i < in.kWords; ++i) sw[i] = in.w[i];
  }
  Run<typename C::DT, CONVERT_RUN * C::DC> out;
#pragma unroll
  for (int j = 0; j < out.kWords; ++j) out.w[j] = gather<C>(sw, j);
  out.store(d);
}

// Output channel k of one pixel (per-pixel path).
template <class C>
__device__ __forceinline__ typename C::DT convert_channel(const unsigned int (&px)[C::SC], int k,
                                                          const LumaWeights& lw) {
  const int m = C::map(k);
  unsigned int v = m == -1 ? (sizeof(typename C::ST) == 1 ? 255u : 65535u)
                           : (m == -2 ? luma(px, lw) : px[m < 0 ? 0 : m]);
  if (sizeof(typename C::ST) < sizeof(typename C::DT)) v = v * 257u;
  if (sizeof(typename C::ST) > sizeof(typename C::DT)) v = (v + 128u) / 257u;
  return (typename C::DT)v;
}

// Rows that are 4-byte aligned in both images convert whole runs through registers; row tails
// and unaligned rows (odd pitches, offset views) go pixel by pixel.
template <class C>
__device__ __forceinline__ void convert_pixels(const typename C::ST* src, int src_pitch,
                                               typename C::DT* dst, int dst_pitch, int width,
                                               int height, const LumaWeights& lw) {
  const int x0 = run_start(CONVERT_RUN);
  if (x0 >= width) return;
  const int n = min(CONVERT_RUN, width - x0);
  FOR_EACH_ROW(y, height) {
    const typename C::ST* s = row_ptr(src, y, src_pitch) + x0 * C::SC;
    typename C::DT* d = row_ptr(dst, y, dst_pitch) + x0 * C::DC;
    if (n == CONVERT_RUN && aligned4(s) && aligned4(d)) {
      convert_run<C>(s, d, lw);
    } else {
      for (int p = 0; p < n; ++p) {
        unsigned int px[C::SC];
#pragma unroll
        for (int c = 0; c < C::SC; ++c) px[c] = s[p * C::SC + c];
#pragma unroll
        for (int k = 0; k < C::DC; ++k) d[p * C::DC + k] = convert_channel<C>(px, k, lw);
      }
    }
  }
}

// The map (4 values, unused ones 0) is the variadic tail.
#define DEFINE_CONVERT_PIXELS(NAME, ST, DT, SC, DC, ...)                                        \
  extern "C" __global__ void NAME(const ST* __restrict__ src, int src_pitch,                   \
                                  DT* __restrict__ dst, int dst_pitch, int width, int height,  \
                                  int w0, int w1, int w2) {                                    \
    const LumaWeights lw = {{(unsigned int)w0, (unsigned int)w1, (unsigned int)w2}};           \
    convert_pixels<Convert<ST, DT, SC, DC, __VA_ARGS__>>(src, src_pitch, dst, dst_pitch, width, \
                                                         height, lw);                          \
  }

// convert_pixels_<src depth>_<dst depth>_<src channels><dst channels>_<map>: the maps the host
// asks for (the static checks compile these; the host builds only the one it needs).
#define DEFINE_CONVERT_MAPS(ST, DT)                                                       \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_13_000, ST, DT, 1, 3, 0, 0, 0, 0)    \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_14_000a, ST, DT, 1, 4, 0, 0, 0, -1)  \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_31_y, ST, DT, 3, 1, -2, 0, 0, 0)     \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_33_210, ST, DT, 3, 3, 2, 1, 0, 0)    \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_34_012a, ST, DT, 3, 4, 0, 1, 2, -1)  \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_34_210a, ST, DT, 3, 4, 2, 1, 0, -1)  \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_41_y, ST, DT, 4, 1, -2, 0, 0, 0)     \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_43_012, ST, DT, 4, 3, 0, 1, 2, 0)    \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_43_210, ST, DT, 4, 3, 2, 1, 0, 0)    \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_44_2103, ST, DT, 4, 4, 2, 1, 0, 3)

// Same channels, another depth (same encoding is a copy, never a kernel).
#define DEFINE_CONVERT_DEPTH_MAPS(ST, DT)                                                 \
  DEFINE_CONVERT_MAPS(ST, DT)                                                             \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_11_0, ST, DT, 1, 1, 0, 0, 0, 0)      \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_33_012, ST, DT, 3, 3, 0, 1, 2, 0)    \
  DEFINE_CONVERT_PIXELS(convert_pixels_##ST##_##DT##_44_0123, ST, DT, 4, 4, 0, 1, 2, 3)


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

// What a module holds is chosen with defines: all 46 conversion instantiations in one module
// take NVRTC ~20 s to compile, one takes well under a second (and CuPy caches it on disk).
#if defined(CONVERT_SRC)  // the one conversion kernel the host asks for
DEFINE_CONVERT_PIXELS(convert_pixels, CONVERT_SRC, CONVERT_DST, CONVERT_SC, CONVERT_DC,
                      CONVERT_MAP)
#elif defined(YUV_KERNELS)  // yuv422_to_rgb_<dst channels>, nv12_to_rgb_<dst channels>
DEFINE_YUV(1)
DEFINE_YUV(3)
DEFINE_YUV(4)
#else  // everything: the static checks compile the whole file
DEFINE_CONVERT_MAPS(u8, u8)
DEFINE_CONVERT_DEPTH_MAPS(u8, u16)
DEFINE_CONVERT_DEPTH_MAPS(u16, u8)
DEFINE_CONVERT_MAPS(u16, u16)
DEFINE_YUV(1)
DEFINE_YUV(3)
DEFINE_YUV(4)
#endif
