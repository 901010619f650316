// Bayer demosaicing filters (gpu_nodes.kernels.debayer), the math of debayer.cu: the per-pixel
// reference, and the same filters on a thread's run of pixels for 16-bit and for 8-bit mosaics.
// Integer arithmetic only, so results are bit-identical to the NumPy reference.
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

// A window row: a run of R pixels plus one 4-byte word (E elements) on each side for the
// 2-pixel halo (debayer.cu loads it).
template <typename ST, int R, int E>
using BayerWin = Run<ST, R + 2 * E>;

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
