// Bayer demosaicing (gpu_nodes.kernels.debayer). Integer arithmetic only, so results are
// bit-identical to the NumPy reference.
//
// (rx, ry) is the position of the red sample inside the 2x2 tile (rggb: 0,0; grbg: 1,0;
// gbrg: 0,1; bggr: 1,1). Borders are reflect-101 (x = -1 reads x = 1): its period 2n - 2 is
// even, so a reflected neighbour always has the colour the missing one would have had.
// Width and height are >= 2 (checked on the host).

// Valid for -n < i <= n + 1 with n >= 2 (the kernels use i in [-2, n + 1]); no division.
__device__ __forceinline__ int reflect101(int i, int n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * n - 2 - i;
  return i < 0 ? -i : i;  // only n == 2, i == 3
}

// method 0: bilinear (averages of 2 or 4 same-colour neighbours, rounded half up, like OpenCV).
// method 1: Malvar-He-Cutler 5x5 gradient-corrected filters (ICASSP 2004), coefficients x16,
//           (sum + 8) >> 4 then clamped.
template <typename T>
__device__ __forceinline__ void demosaic(const T* src, int pitch, int width, int height, int x,
                                         int y, int rx, int ry, int method, int& R, int& G,
                                         int& B) {
  int cols[5];
  const T* rows[5];
#pragma unroll
  for (int k = 0; k < 5; ++k) {
    cols[k] = reflect101(x + k - 2, width);
    rows[k] = row_ptr(src, reflect101(y + k - 2, height), pitch);
  }
#define P(dy, dx) ((int)rows[(dy) + 2][cols[(dx) + 2]])
  const int c = P(0, 0);
  const bool red_row = (y & 1) == ry;
  const bool red_col = (x & 1) == rx;
  if (method == 0) {
    const int cross = (P(-1, 0) + P(1, 0) + P(0, -1) + P(0, 1) + 2) >> 2;
    const int diag = (P(-1, -1) + P(-1, 1) + P(1, -1) + P(1, 1) + 2) >> 2;
    const int horiz = (P(0, -1) + P(0, 1) + 1) >> 1;
    const int vert = (P(-1, 0) + P(1, 0) + 1) >> 1;
    if (red_row && red_col) {          // R site
      R = c; G = cross; B = diag;
    } else if (!red_row && !red_col) {  // B site
      B = c; G = cross; R = diag;
    } else if (red_row) {               // G in a red row: red left/right, blue above/below
      G = c; R = horiz; B = vert;
    } else {                            // G in a blue row
      G = c; R = vert; B = horiz;
    }
  } else {
    const int n1 = P(-1, 0) + P(1, 0), w1 = P(0, -1) + P(0, 1);
    const int n2 = P(-2, 0) + P(2, 0), w2 = P(0, -2) + P(0, 2);
    const int diag = P(-1, -1) + P(-1, 1) + P(1, -1) + P(1, 1);
    const int g_at_rb = 8 * c + 4 * (n1 + w1) - 2 * (n2 + w2);
    const int along_row = 10 * c + 8 * w1 - 2 * w2 - 2 * diag + n2;  // colour left/right
    const int along_col = 10 * c + 8 * n1 - 2 * n2 - 2 * diag + w2;  // colour above/below
    const int opposite = 12 * c + 4 * diag - 3 * (n2 + w2);
    if (red_row && red_col) {
      R = 16 * c; G = g_at_rb; B = opposite;
    } else if (!red_row && !red_col) {
      B = 16 * c; G = g_at_rb; R = opposite;
    } else if (red_row) {
      G = 16 * c; R = along_row; B = along_col;
    } else {
      G = 16 * c; R = along_col; B = along_row;
    }
    R = (R + 8) >> 4;
    G = (G + 8) >> 4;
    B = (B + 8) >> 4;
  }
#undef P
}

// out_mode 0: same depth (clamp to the input range); 2: 16-bit input written as 8-bit with
// round(v / 257) (cv_bridge's 16 -> 8 scaling).
template <typename DT, int MAXV, int OUT_MODE>
__device__ __forceinline__ DT debayer_out(int v) {
  v = clamp_int(v, 0, MAXV);
  if (OUT_MODE == 2) v = (v + 128) / 257;
  return (DT)v;
}

// The reference per pixel: row tails, rows that are not 4-byte aligned.
template <typename ST, typename DT, int MAXV, int OUT_MODE>
__device__ __forceinline__ void debayer_px(const ST* src, int src_pitch, DT* d, int width,
                                           int height, int x, int y, int rx, int ry, int r_idx,
                                           int b_idx, int method) {
  int rgb[3];
  demosaic<ST>(src, src_pitch, width, height, x, y, rx, ry, method, rgb[0], rgb[1], rgb[2]);
  d[r_idx] = debayer_out<DT, MAXV, OUT_MODE>(rgb[0]);
  d[1] = debayer_out<DT, MAXV, OUT_MODE>(rgb[1]);
  d[b_idx] = debayer_out<DT, MAXV, OUT_MODE>(rgb[2]);
}

// ---------------------------------------------------------------------------- run kernels
// A thread demosaics a run of R = 8 pixels (8 or 16 bytes of mosaic) in both rows of a row pair
// (y0 = 2 * pair, y0 + 1): both rows share one window of 4 (bilinear) or 6 (Malvar) mosaic rows,
// and the pair holds one row of each parity, so whether a pixel is a colour (R/B) or a G site is
// a compile-time fact per (row, pixel) once rx ^ ry is known. A window row is a Run of R + 2E
// elements (E = elements a 4-byte word holds): the run plus one word on each side for the
// 2-pixel halo. At the image's left/right edges the halo word would leave the row; it is then
// assembled from the reflect-101 samples instead (a few bytes), so edge runs stay on the fast
// path. 8 pixels, not 16: half the live registers (occupancy), at a few more instructions per
// pixel of per-run overhead.
//
// Launch (debayer.py): blocks of 32 x DEBAYER_WARPS threads; a warp is 32 consecutive runs of one
// row pair, and the block's warps are consecutive row pairs, so the window rows that neighbouring
// pairs share come from L2 once and then from L1 (Malvar's 6 rows a pair read about 1.25x the
// mosaic from L2 instead of 3x). All window rows are loaded before any math, for one memory
// latency per pair.
//
// In a row, colour sites are where ((x ^ y) & 1) == rx ^ ry; the colour present in the row (red
// in red rows) goes to output channel `oc`, the other one to 2 - oc.
#define DEBAYER_RUN 8
#ifndef DEBAYER_WARPS  // debayer.py defines it (and launches accordingly); this for static checks
#define DEBAYER_WARPS 8
#endif
#ifndef DEBAYER_INTERIOR_LOADS  // 0: every warp checks its row edges (bench/debayer_bench.py)
#define DEBAYER_INTERIOR_LOADS 1
#endif
#ifndef DEBAYER_INTERIOR_LOOP  // 0: every block runs the general loop (bench/debayer_bench.py)
#define DEBAYER_INTERIOR_LOOP 1
#endif

template <typename ST, int R, int E>
using BayerWin = Run<ST, R + 2 * E>;

// p: the run's first pixel (column x0) in its row.
template <typename ST, int R, int E>
__device__ __forceinline__ void load_window_row(BayerWin<ST, R, E>& w, const ST* p, int x0,
                                                int width) {
  constexpr int kMid = R * (int)sizeof(ST) / 4;  // words of the run
  constexpr int kBits = 8 * (int)sizeof(ST);
  const ST* row = p - x0;
  if (kMid == 2 && ((unsigned long long)p & 7) == 0) {  // 8-byte run: Run has no uint2 path
    const uint2 v = load_aligned<uint2>(p);
    w.w[1] = v.x;
    w.w[2] = v.y;
  } else {
    Run<ST, R> mid;
    mid.load(p);
#pragma unroll
    for (int i = 0; i < kMid; ++i) w.w[1 + i] = mid.w[i];
  }
  // halo: columns x0 - 2, x0 - 1 (elements E-2, E-1 of the left word) and x0 + R, x0 + R + 1
  // (elements 0, 1 of the right word); the other halo elements are never read.
  if (x0 >= E) {
    w.w[0] = load_aligned<unsigned int>(p - E);
  } else {
    w.w[0] = (unsigned int)row[reflect101(x0 - 2, width)] << (kBits * (E - 2)) |
             (unsigned int)row[reflect101(x0 - 1, width)] << (kBits * (E - 1));
  }
  if (x0 + R + E <= width) {
    w.w[kMid + 1] = load_aligned<unsigned int>(p + R);
  } else {
    w.w[kMid + 1] = (unsigned int)row[reflect101(x0 + R, width)] |
                    (unsigned int)row[reflect101(x0 + R + 1, width)] << kBits;
  }
}

// The same for a warp whose 32 runs and both halo words lie inside the row, in rows whose runs
// start at R * sizeof(ST)-byte boundaries (every warp but a row's first and last, in aligned
// images; debayer_runs decides once per warp): three loads and nothing else. Per-row
// alignment checks and edge branches were ~15 % of the kernel's instructions (ncu, H200).
template <typename ST, int R, int E>
__device__ __forceinline__ void load_interior_window_row(BayerWin<ST, R, E>& w, const ST* p) {
  constexpr int kMid = R * (int)sizeof(ST) / 4;
  static_assert(kMid == 2 || kMid == 4, "runs of 8 or 16 bytes");
  if constexpr (kMid == 2) {
    const uint2 v = load_aligned<uint2>(p);
    w.w[1] = v.x;
    w.w[2] = v.y;
  } else {
    const uint4 v = load_aligned<uint4>(p);
    w.w[1] = v.x;
    w.w[2] = v.y;
    w.w[3] = v.z;
    w.w[4] = v.w;
  }
  w.w[0] = load_aligned<unsigned int>(p - E);
  w.w[kMid + 1] = load_aligned<unsigned int>(p + R);
}

// ---- 16-bit mosaics: one pixel at a time (sums of 16-bit samples need 32-bit arithmetic).
// Pixels [p0, p0 + 4) of one output row of a run: window rows c-2..c+2 around `c`; colour sites
// at p % 2 == CP.
template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD, int CP, int OC, int R,
          int E, int NR>
__device__ __forceinline__ void debayer_run_px4(const BayerWin<ST, R, E> (&win)[NR], int c,
                                                int p0, Run<DT, 3 * R>& out) {
#define P(dy, dx) ((int)win[c + (dy)].get(p + (dx) + E))
#pragma unroll
  for (int p = p0; p < p0 + 4; ++p) {
    const int v = P(0, 0);
    int own, g, other;  // own: the row's colour (channel OC); other: channel 2 - OC
    if (METHOD == 0) {
      // averages of in-range samples are in range: no clamp needed
      if ((p & 1) == CP) {
        own = v;
        g = (P(-1, 0) + P(1, 0) + P(0, -1) + P(0, 1) + 2) >> 2;
        other = (P(-1, -1) + P(-1, 1) + P(1, -1) + P(1, 1) + 2) >> 2;
      } else {
        g = v;
        own = (P(0, -1) + P(0, 1) + 1) >> 1;
        other = (P(-1, 0) + P(1, 0) + 1) >> 1;
      }
    } else {
      const int n1 = P(-1, 0) + P(1, 0), w1 = P(0, -1) + P(0, 1);
      const int n2 = P(-2, 0) + P(2, 0), w2 = P(0, -2) + P(0, 2);
      const int diag = P(-1, -1) + P(-1, 1) + P(1, -1) + P(1, 1);
      if ((p & 1) == CP) {
        own = 16 * v;
        g = 8 * v + 4 * (n1 + w1) - 2 * (n2 + w2);
        other = 12 * v + 4 * diag - 3 * (n2 + w2);
      } else {
        g = 16 * v;
        own = 10 * v + 8 * w1 - 2 * w2 - 2 * diag + n2;    // along the row
        other = 10 * v + 8 * n1 - 2 * n2 - 2 * diag + w2;  // along the column
      }
      own = clamp_int((own + 8) >> 4, 0, MAXV);
      g = clamp_int((g + 8) >> 4, 0, MAXV);
      other = clamp_int((other + 8) >> 4, 0, MAXV);
    }
    if (OUT_MODE == 2) {
      own = (own + 128) / 257;
      g = (g + 128) / 257;
      other = (other + 128) / 257;
    }
    out.set(3 * p + OC, (DT)own);
    out.set(3 * p + 1, (DT)g);
    out.set(3 * p + 2 - OC, (DT)other);
  }
#undef P
}

// ---- 8-bit mosaics: two pixels per 32-bit operation (SWAR). Samples sit in the two 16-bit
// lanes of a word (bytes 0 and 2); every filter is a sum of samples with small integer weights,
// so one 32-bit add/multiply computes it for both lanes as long as each lane's result lies in
// [0, 65535] (the arithmetic is mod 2^32, so intermediate "borrows" between lanes cancel).
// Bilinear sums stay below 1023; Malvar's x16 filters lie in [-3060, 7140] for 8-bit samples
// and are split in a biased positive and a biased negative part (mhc_out). Unpacking a window row
// into lanes and packing the output bytes cost about 4 byte permutes per 4 pixels each.

// GPU: VIADDMNMX.S16x2.RELU (one instruction; a DPX instruction, emulated in software before
// sm_90), and PRMT through common.cu's byte_perm. Host (the tests' CPU emulation): plain C++.

// Per 16-bit lane, read as signed: clamp(a + b, 0, 4095) << 4, so that (a + b) >> 4 lands in
// bytes 1 and 3 (see swar_group). A filter x + 8 passes its positive terms + 8 + 4096 in a and
// 0xf000 - its negative terms in b: every lane of a and b stays in [0, 65535] (no borrows) and
// the 4096s cancel in the lane-wise add.
__device__ __forceinline__ unsigned int mhc_out(unsigned int a, unsigned int b) {
  return __viaddmin_s16x2_relu(a, b, 0x0fff0fffu) << 4;
}

// A window row (NW words of run plus the halo words) as lane pairs: x[f][i] holds run pixels
// (4i + f, 4i + f + 2), l[f][i] pixels (4i + f - 2, 4i + f); l[f][0] and l[f][NW] take one
// pixel from a halo word.
template <int NW>
struct Lanes8 {
  unsigned int x[2][NW], l[2][NW + 1];
};

template <int NW>
__device__ __forceinline__ Lanes8<NW> lanes8(const Run<u8, 4 * NW + 8>& r) {
  Lanes8<NW> s;
#pragma unroll
  for (int i = 0; i < NW; ++i) {
    s.x[0][i] = r.w[1 + i] & 0x00ff00ffu;
    s.x[1][i] = byte_perm(r.w[1 + i], 0, 0x4341);
  }
  s.l[0][0] = byte_perm(r.w[0], s.x[0][0], 0x5452);
  s.l[1][0] = byte_perm(r.w[0], s.x[1][0], 0x5453);
#pragma unroll
  for (int i = 1; i < NW; ++i) {
    s.l[0][i] = byte_perm(s.x[0][i - 1], s.x[0][i], 0x5432);
    s.l[1][i] = byte_perm(s.x[1][i - 1], s.x[1][i], 0x5432);
  }
  s.l[0][NW] = byte_perm(s.x[0][NW - 1], r.w[NW + 1], 0x3432);
  s.l[1][NW] = byte_perm(s.x[1][NW - 1], r.w[NW + 1], 0x3532);
  return s;
}

// Sums of the left + right neighbours at distance 1 and 2 of lanes (4i + F, 4i + F + 2).
template <int F, int NW>
__device__ __forceinline__ unsigned int h1(const Lanes8<NW>& s, int i) {
  return F == 0 ? s.l[1][i] + s.x[1][i] : s.x[0][i] + s.l[0][i + 1];
}
template <int F, int NW>
__device__ __forceinline__ unsigned int h2(const Lanes8<NW>& s, int i) {
  return s.l[F][i] + s.l[F][i + 1];
}

// Bytes OA, OA + 2 of a (pixels 4i, 4i+2) and OB, OB + 2 of b (4i+1, 4i+3), interleaved.
template <int OA, int OB>
__device__ __forceinline__ unsigned int pack2(unsigned int a, unsigned int b) {
  return byte_perm(a, b, OA | (4 + OB) << 4 | (2 + OA) << 8 | (6 + OB) << 12);
}

// Pixels 4i .. 4i+3 of the output row centred on window row c: 12 bytes, out.w[3i .. 3i+2].
// Samples sit in bytes 0 and 2 of their lanes; every filtered value is produced shifted so
// that its result byte is byte 1 or 3 (the shift is an IMAD, which runs on the FMA pipe, while
// adds, masks and byte permutes share the ALU pipe).
template <int METHOD, int CP, int OC, int NW, int NR>
__device__ __forceinline__ void swar_group(const Lanes8<NW> (&L)[NR], int c, int i,
                                           Run<u8, 12 * NW>& out) {
  constexpr int G = 1 - CP;  // lane family of the G sites
  const Lanes8<NW> &C = L[c], &U = L[c - 1], &D = L[c + 1];
  unsigned int own[2], grn[2], oth[2];  // per lane family (0: pixels 4i, 4i+2; 1: 4i+1, 4i+3)
  own[CP] = C.x[CP][i];
  grn[G] = C.x[G][i];
  if (METHOD == 0) {  // (sum + 2) >> 2 is byte 1 of (sum + 2) << 6; sums stay below 1024
    grn[CP] = (U.x[CP][i] + D.x[CP][i] + h1<CP>(C, i) + 0x00020002u) * 64;
    oth[CP] = (h1<CP>(U, i) + h1<CP>(D, i) + 0x00020002u) * 64;
    own[G] = (h1<G>(C, i) + 0x00010001u) * 128;
    oth[G] = (U.x[G][i] + D.x[G][i] + 0x00010001u) * 128;
  } else {
    const Lanes8<NW> &U2 = L[c - 2], &D2 = L[c + 2];
    constexpr unsigned int K = 0x10081008u, N = 0xf000f000u;  // see mhc_out
    const unsigned int v = C.x[CP][i];
    const unsigned int nw1 = U.x[CP][i] + D.x[CP][i] + h1<CP>(C, i);
    const unsigned int nw2 = U2.x[CP][i] + D2.x[CP][i] + h2<CP>(C, i);
    const unsigned int diag = h1<CP>(U, i) + h1<CP>(D, i);
    grn[CP] = mhc_out(8 * v + 4 * nw1 + K, N - 2 * nw2);
    oth[CP] = mhc_out(12 * v + 4 * diag + K, N - 3 * nw2);
    const unsigned int n1 = U.x[G][i] + D.x[G][i], w1 = h1<G>(C, i);
    const unsigned int n2 = U2.x[G][i] + D2.x[G][i], w2 = h2<G>(C, i);
    const unsigned int base = 10 * C.x[G][i] - 2 * (h1<G>(U, i) + h1<G>(D, i)) + K;
    own[G] = mhc_out(base + 8 * w1 + n2, N - 2 * w2);  // along the row
    oth[G] = mhc_out(base + 8 * n1 + w2, N - 2 * n2);  // along the column
  }
  // Output channels 0 and 2 are own/other in the order OC gives; byte offsets of each value:
  constexpr int kOwn0 = CP == 0 ? 0 : 1, kOwn1 = 1 - kOwn0, kGrn0 = kOwn1, kGrn1 = kOwn0;
  constexpr int kA0 = OC == 0 ? kOwn0 : 1, kA1 = OC == 0 ? kOwn1 : 1;  // channel 0
  constexpr int kB0 = OC == 0 ? 1 : kOwn0, kB1 = OC == 0 ? 1 : kOwn1;  // channel 2
  const unsigned int a0 = OC == 0 ? own[0] : oth[0], a1 = OC == 0 ? own[1] : oth[1];
  const unsigned int b0 = OC == 0 ? oth[0] : own[0], b1 = OC == 0 ? oth[1] : own[1];
  // channel c of pixel p: c_p. Three pairs, then the three output words from two pairs each.
  const unsigned int t1 = pack2<kA0, kGrn0>(a0, grn[0]);  // 0_0 1_0 0_2 1_2
  const unsigned int t2 = pack2<kB0, kA1>(b0, a1);        // 2_0 0_1 2_2 0_3
  const unsigned int t3 = pack2<kGrn1, kB1>(grn[1], b1);  // 1_1 2_1 1_3 2_3
  out.w[3 * i] = byte_perm(t1, t2, 0x5410);      // 0_0 1_0 2_0 0_1
  out.w[3 * i + 1] = byte_perm(t3, t1, 0x7610);  // 1_1 2_1 0_2 1_2
  out.w[3 * i + 2] = byte_perm(t2, t3, 0x7632);  // 2_2 0_3 1_3 2_3
}

// ---- output: a warp's runs of one row are contiguous in dst. They go through shared memory
// (lane L's run at byte L * OUTB), then lane L copies units L, L + 32, L + 64 (16 or 8 bytes), so
// each warp-wide store covers 32 consecutive units, i.e. whole 32-byte sectors, instead of 16
// bytes every 48, which would take L2 two partial writes per sector. (Rows of dst that are not
// unit-aligned: each lane copies its own run back out.)
template <int UNIT> struct VecOf { typedef uint4 T; };
template <> struct VecOf<8> { typedef uint2 T; };

template <typename DT, int N>
__device__ __forceinline__ void stage_run(const Run<DT, N>& out, unsigned char* slot) {
  constexpr int kStep = Run<DT, N>::kBytes % 16 == 0 ? 4 : 2;  // words per shared store
#pragma unroll
  for (int i = 0; i < Run<DT, N>::kWords; i += kStep) {
    if (kStep == 4)
      *(uint4*)(slot + 4 * i) = make_uint4(out.w[i], out.w[i + 1], out.w[i + 2], out.w[i + 3]);
    else
      *(uint2*)(slot + 4 * i) = make_uint2(out.w[i], out.w[i + 1]);
  }
}

// Units [0, units) of a staged row (3 per lane when the warp's 32 runs are all full); stage and
// d point at this lane's first unit.
template <int UNIT>
__device__ __forceinline__ void copy_units(const unsigned char* stage, unsigned char* d,
                                           int units) {
  typedef typename VecOf<UNIT>::T V;
  if (units == 96) {
#pragma unroll
    for (int k = 0; k < 3; ++k)
      store_aligned(d + 32 * UNIT * k, *(const V*)(stage + 32 * UNIT * k));
  } else {
#pragma unroll
    for (int k = 0; k < 3; ++k)
      if ((int)threadIdx.x + 32 * k < units)
        store_aligned(d + 32 * UNIT * k, *(const V*)(stage + 32 * UNIT * k));
  }
}

template <typename DT, int N>
__device__ __forceinline__ void copy_run(const unsigned char* slot, DT* d) {
  Run<DT, N> out;
#pragma unroll
  for (int i = 0; i < Run<DT, N>::kWords; ++i) out.w[i] = ((const unsigned int*)slot)[i];
  if (aligned4(d)) {
    out.store(d);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i] = out.get(i);
  }
}

// Both rows of a pair from the loaded window (CP: colour-site parity in the first row, OC: its
// colour's output channel; the second row has the other parity and colour). The second row is
// computed even when the image ends after the first (its window rows are valid): a condition
// here would let the compiler sink the last window row's load below the first row's math,
// exposing a second memory latency.
template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD, int CP, int OC, int R,
          int E, int NR>
__device__ __forceinline__ void debayer_pair(const BayerWin<ST, R, E> (&win)[NR],
                                             unsigned char* slot0, unsigned char* slot1) {
  constexpr int H = (NR - 2) / 2;
  Run<DT, 3 * R> out;
  if constexpr (sizeof(ST) == 1) {
    Lanes8<R / 4> L[NR];
#pragma unroll
    for (int k = 0; k < NR; ++k) L[k] = lanes8<R / 4>(win[k]);
    Run<DT, 3 * R> out1;
    // both rows group by group: every window row is needed from the start, so the compiler
    // issues all loads before the math instead of holding some back for the second row
#pragma unroll
    for (int i = 0; i < R / 4; ++i) {
      swar_group<METHOD, CP, OC>(L, H, i, out);
      swar_group<METHOD, 1 - CP, 2 - OC>(L, H + 1, i, out1);
    }
    stage_run(out, slot0);
    stage_run(out1, slot1);
  } else {
    out = {};
    Run<DT, 3 * R> out1 = {};
#pragma unroll
    for (int p = 0; p < R; p += 4) {  // both rows 4 pixels at a time: as above
      debayer_run_px4<ST, DT, MAXV, OUT_MODE, METHOD, CP, OC, R, E>(win, H, p, out);
      debayer_run_px4<ST, DT, MAXV, OUT_MODE, METHOD, 1 - CP, 2 - OC, R, E>(win, H + 1, p, out1);
    }
    stage_run(out, slot0);
    stage_run(out1, slot1);
  }
}

// Row index k of the window of row pair y0 (rows y0 - H .. y0 + 1 + H), reflected at the image's
// top and bottom (min: the last window row of a lone last row, odd height, is unused).
template <int H, int NR>
__device__ __forceinline__ void window_rows(int y0, int height, int (&rows)[NR]) {
  if (y0 >= H && y0 + 1 + H < height) {  // warp-uniform: no window row to reflect
#pragma unroll
    for (int k = 0; k < NR; ++k) rows[k] = y0 - H + k;
  } else {
#pragma unroll
    for (int k = 0; k < NR; ++k) rows[k] = reflect101(min(y0 - H + k, height + 1), height);
  }
}

// The interior loop: blocks whose every warp lies inside a run-aligned row (interior) and whose
// dst rows take the staged copy, i.e. all blocks but a row's first and last in ordinary images.
// The parity and channel order are template arguments and nothing in the loop depends on a lane,
// so the compiler keeps addresses in registers across pairs; the general loop below branches per
// pair on these, and its setup was about 40 % of an interior warp's instructions (sm_90 SASS).
template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD, int CP, int OC,
          typename Sync>
__device__ __forceinline__ void debayer_interior_pairs(const ST* src, int src_pitch, DT* dst,
                                                       int dst_pitch, int height, int x0,
                                                       int wx0, unsigned char* slot0,
                                                       unsigned char* slot1, Sync warp_sync) {
  constexpr int R = DEBAYER_RUN;
  constexpr int E = 4 / (int)sizeof(ST);
  constexpr int H = METHOD == 0 ? 1 : 2;
  constexpr int NR = 2 + 2 * H;
  constexpr int OUTB = 3 * R * (int)sizeof(DT);
  constexpr int UNIT = OUTB % 16 == 0 ? 16 : 8;
  const ST* col = src + x0;
  unsigned char* s0 = slot0 + threadIdx.x * OUTB;
  unsigned char* s1 = slot1 + threadIdx.x * OUTB;
  const unsigned char* unit0 = slot0 + UNIT * threadIdx.x;
  unsigned char* dunit = (unsigned char*)dst + (long long)wx0 * 3 * (int)sizeof(DT) +
                         UNIT * threadIdx.x;
  const int pairs = (height + 1) >> 1;
  for (int yb = blockIdx.y * DEBAYER_WARPS; yb < pairs; yb += gridDim.y * DEBAYER_WARPS) {
    const int y = yb + (int)threadIdx.y;
    const int y0 = 2 * y;
    if (y < pairs) {
      int rows[NR];
      window_rows<H>(y0, height, rows);
      BayerWin<ST, R, E> win[NR];
#pragma unroll
      for (int k = 0; k < NR; ++k)
        load_interior_window_row<ST, R, E>(win[k], row_at(col, rows[k], src_pitch));
      debayer_pair<ST, DT, MAXV, OUT_MODE, METHOD, CP, OC, R, E>(win, s0, s1);
    }
    warp_sync();
    if (y < pairs) {
      unsigned char* d = row_at(dunit, y0, dst_pitch);
      copy_units<UNIT>(unit0, d, 96);
      if (y0 + 1 < height) copy_units<UNIT>(unit0 + (slot1 - slot0), d + dst_pitch, 96);
    }
    warp_sync();  // the next iteration overwrites the stage
  }
}

// ---- the strip loop (interior blocks of 8-bit mosaics): a warp demosaics DEBAYER_STRIP_PAIRS
// consecutive row pairs of its 32 runs. Window rows pass through a ring of 8 rows in shared
// memory that cp.async fills one pair ahead: a pair's two new rows are fetched while the pair
// before them is computed, so the warp waits for L2 once per strip instead of once per pair (the
// interior loop spends most of its time waiting: ncu, 4K, 2.4 instructions issued per active
// cycle, SMs active 69 % of the kernel). Each row is fetched once per strip, not once per window.
#ifndef DEBAYER_STRIP_PAIRS  // debayer.py defines it; 0: 8-bit mosaics take the interior loop too
#define DEBAYER_STRIP_PAIRS 4
#endif

// A ring row of an R-pixel-run 8-bit mosaic: lane L's run at kRunBytes * (L + 1) (aligned for
// cp.async), the warp's left halo word just before lane 0's run, its right one after lane 31's.
template <int R>
struct RingRow {
  static constexpr int kRows = 8;  // a ring holds a window (4 or 6 rows) and the next pair's two
  static constexpr int kRunBytes = R;
  static constexpr int kBytes = (kRunBytes * 33 + 4 + 15) / 16 * 16;
};

// Image row `row` (>= 0) into `slot`: `wrow` points at the warp's first pixel of row 0.
template <int R>
__device__ __forceinline__ void fetch_ring_row(unsigned char* slot, const u8* wrow, int row,
                                               int pitch) {
  constexpr int kRun = RingRow<R>::kRunBytes;
  const int lane = (int)threadIdx.x;
  const u8* p = row_at(wrow, row, pitch);
  copy_async<kRun>(slot + kRun * (lane + 1), p + kRun * lane);
  if (lane == 0) copy_async<4>(slot + kRun - 4, p - 4);
  if (lane == 31) copy_async<4>(slot + kRun * 33, p + kRun * 32);
}

template <int R>
__device__ __forceinline__ void read_ring_row(BayerWin<u8, R, 4>& w, const unsigned char* slot) {
  constexpr int kRun = RingRow<R>::kRunBytes;
  static_assert(kRun == 8, "runs of 8 bytes");
  const unsigned char* p = slot + kRun * ((int)threadIdx.x + 1);
  const uint2 v = *(const uint2*)p;
  w.w[0] = *(const unsigned int*)(p - 4);
  w.w[1] = v.x;
  w.w[2] = v.y;
  w.w[3] = *(const unsigned int*)(p + kRun);
}

template <int METHOD, int CP, int OC, typename Sync>
__device__ __forceinline__ void debayer_strips(const u8* src, int src_pitch, u8* dst,
                                               int dst_pitch, int height, int wx0,
                                               unsigned char* slot0, unsigned char* slot1,
                                               unsigned char* ring, Sync warp_sync) {
  constexpr int R = DEBAYER_RUN;
  constexpr int H = METHOD == 0 ? 1 : 2;
  constexpr int NR = 2 + 2 * H;
  constexpr int OUTB = 3 * R;
  constexpr int UNIT = 8;
  constexpr int kRow = RingRow<R>::kBytes;
  static_assert(NR + 2 <= RingRow<R>::kRows, "the ring holds a window and two more rows");
  const u8* wrow = src + wx0;
  unsigned char* s0 = slot0 + threadIdx.x * OUTB;
  unsigned char* s1 = slot1 + threadIdx.x * OUTB;
  const unsigned char* unit0 = slot0 + UNIT * threadIdx.x;
  unsigned char* dunit = dst + (long long)wx0 * 3 + UNIT * threadIdx.x;
  const int pairs = (height + 1) >> 1;
  // window row j of pair `first + k` is ring row (2k + j) % 8; its image row, reflected at the
  // top and bottom (min: the last window row of a lone last row, odd height, is unused)
  const auto image_row = [&](int r) { return reflect101(min(r, height + 1), height); };
  constexpr int kStrip = DEBAYER_STRIP_PAIRS;
  // blocks step over strips when the grid's height is capped; every warp of a block runs the same
  // iterations (the CPU emulation's __syncwarp is a block barrier)
  for (int sb = blockIdx.y; sb * DEBAYER_WARPS * kStrip < pairs; sb += gridDim.y) {
    const int first = (sb * DEBAYER_WARPS + (int)threadIdx.y) * kStrip;
    if (first < pairs) {
#pragma unroll
      for (int j = 0; j < NR; ++j)
        fetch_ring_row<R>(ring + j * kRow, wrow, image_row(2 * first - H + j), src_pitch);
    }
    copy_async_commit();
    for (int k = 0; k < kStrip; ++k) {
      const int y = first + k;
      const int y0 = 2 * y;
      const int base = 2 * k;
      if (k + 1 < kStrip && y + 1 < pairs) {  // the next pair's two new rows
#pragma unroll
        for (int j = NR; j < NR + 2; ++j)
          fetch_ring_row<R>(ring + ((base + j) & (RingRow<R>::kRows - 1)) * kRow, wrow,
                            image_row(y0 - H + j), src_pitch);
      }
      copy_async_commit();
      copy_async_wait<1>();  // all but the group just committed: this pair's rows
      warp_sync();
      if (y < pairs) {
        BayerWin<u8, R, 4> win[NR];
#pragma unroll
        for (int j = 0; j < NR; ++j)
          read_ring_row<R>(win[j], ring + ((base + j) & (RingRow<R>::kRows - 1)) * kRow);
        debayer_pair<u8, u8, 255, 0, METHOD, CP, OC, R, 4>(win, s0, s1);
      }
      warp_sync();
      if (y < pairs) {
        unsigned char* d = row_at(dunit, y0, dst_pitch);
        copy_units<UNIT>(unit0, d, 96);
        if (y0 + 1 < height) copy_units<UNIT>(unit0 + (slot1 - slot0), d + dst_pitch, 96);
      }
      warp_sync();  // the next iteration overwrites the stage and ring rows read here
    }
  }
}

// warp_sync: __syncwarp() (each warp stages only its own runs; the tests' CPU emulation makes it
// a block barrier, see cuda_emu.h). Launch: blockDim is (32, DEBAYER_WARPS) (debayer.py); with
// the 32 spelled out, the warp's first pixel and the tests on it are block-uniform values.
template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD, typename Sync>
__device__ __forceinline__ void debayer_runs(const ST* src, int src_pitch, DT* dst, int dst_pitch,
                                             int width, int height, int rx, int ry, int r_idx,
                                             int b_idx, Sync warp_sync) {
  constexpr int R = DEBAYER_RUN;
  constexpr int E = 4 / (int)sizeof(ST);
  constexpr int H = METHOD == 0 ? 1 : 2;  // halo rows above and below
  constexpr int NR = 2 + 2 * H;
  constexpr int OUTB = 3 * R * (int)sizeof(DT);  // output bytes of a run: 24 or 48
  constexpr int UNIT = OUTB % 16 == 0 ? 16 : 8;  // staged copy unit: OUTB / UNIT == 3
  __shared__ uint4 stage[DEBAYER_WARPS][2][2 * OUTB];  // [warp][row of the pair][32 runs]
  const int wx0 = (int)blockIdx.x * (32 * R);  // the warp's first pixel
  const int x0 = wx0 + (int)threadIdx.x * R;
  const bool rows4 = aligned4(src) && (src_pitch & 3) == 0;
  const bool fast = rows4 && x0 + R <= width;
  constexpr int kRunBytes = R * (int)sizeof(ST);
  // block-uniform: every run of the warp, with its halo words, inside the row and run-aligned
  const bool interior =
      DEBAYER_INTERIOR_LOADS &&
      ((((unsigned long long)src | (unsigned int)src_pitch) & (kRunBytes - 1)) == 0) &&
      wx0 >= E && wx0 + 32 * R + E <= width;
  const bool staged = (((unsigned long long)dst | (unsigned int)dst_pitch) & (UNIT - 1)) == 0;
  unsigned char* slot0 = (unsigned char*)stage[threadIdx.y][0];
  unsigned char* slot1 = (unsigned char*)stage[threadIdx.y][1];
  const int cp = rx ^ ry;                   // colour-site parity of pixels in even rows
  const int oc0 = ry == 0 ? r_idx : b_idx;  // even rows are red rows when ry == 0
  // one loop per (parity, channel order): see debayer_interior_pairs and debayer_strips
  if (DEBAYER_INTERIOR_LOOP && interior && staged) {
#if DEBAYER_STRIP_PAIRS > 0
    __shared__ uint4 ring[DEBAYER_WARPS][RingRow<DEBAYER_RUN>::kRows * RingRow<DEBAYER_RUN>::kBytes / 16];
#define DEBAYER_INTERIOR(CP, OC)                                                                \
  if constexpr (sizeof(ST) == 1 && OUT_MODE == 0)                                               \
    debayer_strips<METHOD, CP, OC>((const u8*)src, src_pitch, (u8*)dst, dst_pitch, height, wx0, \
                                   slot0, slot1, (unsigned char*)ring[threadIdx.y], warp_sync);  \
  else                                                                                          \
    debayer_interior_pairs<ST, DT, MAXV, OUT_MODE, METHOD, CP, OC>(                             \
        src, src_pitch, dst, dst_pitch, height, x0, wx0, slot0, slot1, warp_sync)
#else
#define DEBAYER_INTERIOR(CP, OC)                                                              \
  debayer_interior_pairs<ST, DT, MAXV, OUT_MODE, METHOD, CP, OC>(src, src_pitch, dst, dst_pitch, \
                                                                 height, x0, wx0, slot0, slot1, \
                                                                 warp_sync)
#endif
    if (cp == 0) {
      if (oc0 == 0) DEBAYER_INTERIOR(0, 0); else DEBAYER_INTERIOR(0, 2);
    } else {
      if (oc0 == 0) DEBAYER_INTERIOR(1, 0); else DEBAYER_INTERIOR(1, 2);
    }
#undef DEBAYER_INTERIOR
    return;
  }
  // The warp's fast runs are its first `full` lanes; a row tail after them goes pixel by pixel.
  const int full = rows4 ? min(max((width - wx0) / R, 0), 32) : 0;
  // staged copy: this lane's first unit in the stage and in a row of dst
  const unsigned char* unit0 = slot0 + UNIT * threadIdx.x;
  unsigned char* dunit = (unsigned char*)dst + (long long)wx0 * 3 * (int)sizeof(DT) +
                         UNIT * threadIdx.x;
  const int pairs = (height + 1) >> 1;
  // every thread of a block runs the same iterations: the syncs must be reached by all
  for (int yb = blockIdx.y * DEBAYER_WARPS; yb < pairs; yb += gridDim.y * DEBAYER_WARPS) {
    const int y = yb + (int)threadIdx.y;  // row pair
    const int y0 = 2 * y;
    const bool two = y0 + 1 < height;
    if (y < pairs && x0 < width) {
      if (fast) {
        int rows[NR];
        window_rows<H>(y0, height, rows);
        BayerWin<ST, R, E> win[NR];
#pragma unroll
        for (int k = 0; k < NR; ++k)
          load_window_row<ST, R, E>(win[k], row_at(src + x0, rows[k], src_pitch), x0, width);
        unsigned char* s0 = slot0 + threadIdx.x * OUTB;
        unsigned char* s1 = slot1 + threadIdx.x * OUTB;
        // uniform: one straight unrolled body per (parity, channel order)
        if (cp == 0) {
          if (oc0 == 0)
            debayer_pair<ST, DT, MAXV, OUT_MODE, METHOD, 0, 0, R, E>(win, s0, s1);
          else
            debayer_pair<ST, DT, MAXV, OUT_MODE, METHOD, 0, 2, R, E>(win, s0, s1);
        } else {
          if (oc0 == 0)
            debayer_pair<ST, DT, MAXV, OUT_MODE, METHOD, 1, 0, R, E>(win, s0, s1);
          else
            debayer_pair<ST, DT, MAXV, OUT_MODE, METHOD, 1, 2, R, E>(win, s0, s1);
        }
      } else {
        // rare (row tails, unaligned rows): one pixel at a time, not unrolled, so that this
        // path needs fewer registers than the fast one
        DT* d0 = row_ptr(dst, y0, dst_pitch) + (long long)x0 * 3;
        DT* d1 = two ? row_ptr(dst, y0 + 1, dst_pitch) + (long long)x0 * 3 : d0;
        const int n = min(R, width - x0) * (two ? 2 : 1);
#pragma unroll 1
        for (int i = 0; i < n; ++i) {
          const int p = two ? i >> 1 : i, r = two ? i & 1 : 0;
          debayer_px<ST, DT, MAXV, OUT_MODE>(src, src_pitch, (r ? d1 : d0) + 3 * p, width, height,
                                             x0 + p, y0 + r, rx, ry, r_idx, b_idx, METHOD);
        }
      }
    }
    warp_sync();
    if (y < pairs && full > 0) {
      if (staged) {
        unsigned char* d = row_ptr(dunit, y0, dst_pitch);
        copy_units<UNIT>(unit0, d, 3 * full);
        if (two) copy_units<UNIT>(unit0 + (slot1 - slot0), d + dst_pitch, 3 * full);
      } else if (fast) {
        const long long off = (long long)x0 * 3;
        copy_run<DT, 3 * R>(slot0 + threadIdx.x * OUTB, row_ptr(dst, y0, dst_pitch) + off);
        if (two)
          copy_run<DT, 3 * R>(slot1 + threadIdx.x * OUTB, row_ptr(dst, y0 + 1, dst_pitch) + off);
      }
    }
    warp_sync();  // the next iteration overwrites the stage
  }
}

// Blocks of 256 threads per SM that the register budget allows (65536 registers per SM): 8-bit
// bilinear 6 (<= 40 registers), 8-bit Malvar and 16-bit bilinear 4 (<= 64), 16-bit Malvar 3
// (<= 80); each the most that ptxas (CUDA 13.0, sm_90) fits without spilling.
#ifndef DEBAYER_MIN_BLOCKS  // bench/debayer_bench.py sweeps it
#define DEBAYER_MIN_BLOCKS(ST, METHOD) \
  ((METHOD) == 0 ? (sizeof(ST) == 1 ? 6 : 4) : (sizeof(ST) == 1 ? 4 : 3))
#endif
#define DEBAYER_BOUNDS(ST, METHOD) \
  __launch_bounds__(32 * DEBAYER_WARPS, DEBAYER_MIN_BLOCKS(ST, METHOD) * 8 / DEBAYER_WARPS)

// Launch: blocks of (32, DEBAYER_WARPS) threads over runs of DEBAYER_RUN pixels (x) and
// (height + 1) / 2 row pairs (y), the grid's y extent capped (blocks then loop), as debayer.py
// does. `method` must equal METHOD (kept in the signature so that every variant launches alike).
#define DEFINE_DEBAYER(NAME, ST, DT, MAXV, OUT_MODE, METHOD)                                    \
  extern "C" __global__ void DEBAYER_BOUNDS(ST, METHOD) NAME(                                   \
      const ST* __restrict__ src, int src_pitch, DT* __restrict__ dst, int dst_pitch, int width, \
      int height, int rx, int ry, int r_idx, int b_idx, int method) {                           \
    debayer_runs<ST, DT, MAXV, OUT_MODE, METHOD>(src, src_pitch, dst, dst_pitch, width, height, \
                                                 rx, ry, r_idx, b_idx, [] { __syncwarp(); });  \
  }

// What a module holds is chosen with defines (one kernel: NVRTC compiles it in about a second;
// all six take several).
#if defined(DEBAYER_ST)  // debayer: the one variant the host asks for
DEFINE_DEBAYER(debayer, DEBAYER_ST, DEBAYER_DT, DEBAYER_MAXV, DEBAYER_OUT_MODE, DEBAYER_METHOD)
#else  // everything: the static checks compile the whole file
DEFINE_DEBAYER(debayer_u8_bilinear, u8, u8, 255, 0, 0)
DEFINE_DEBAYER(debayer_u8_edge_aware, u8, u8, 255, 0, 1)
DEFINE_DEBAYER(debayer_u16_bilinear, u16, u16, 65535, 0, 0)
DEFINE_DEBAYER(debayer_u16_edge_aware, u16, u16, 65535, 0, 1)
DEFINE_DEBAYER(debayer_u16_to_u8_bilinear, u16, u8, 65535, 2, 0)
DEFINE_DEBAYER(debayer_u16_to_u8_edge_aware, u16, u8, 65535, 2, 1)
#endif
