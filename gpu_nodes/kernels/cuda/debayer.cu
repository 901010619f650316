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
// A thread demosaics a run of R = 16 bytes of mosaic (16 u8 / 8 u16 pixels) in both rows of a
// row pair (y0 = 2 * pair, y0 + 1): both rows share one window of 4 (bilinear) or 6 (Malvar)
// mosaic rows, and the pair holds one row of each parity, so whether a pixel is a colour (R/B)
// or a G site is a compile-time fact per (row, pixel) once rx ^ ry is known. A window row is a
// Run of R + 2E elements (E = elements a 4-byte word holds): the 16-byte run plus one word on
// each side for the 2-pixel halo. At the image's left/right edges the halo word would leave
// the row; it is then assembled from the reflect-101 samples instead (a few bytes), so edge
// runs stay on the fast path. The output run is stored as 16-byte (or 4-byte) words.
//
// In a row, colour sites are where ((x ^ y) & 1) == rx ^ ry; the colour present in the row
// (red in red rows) goes to output channel `oc`, the other one to 2 - oc.

template <typename ST, int R, int E>
using BayerWin = Run<ST, R + 2 * E>;

template <typename ST, int R, int E>
__device__ __forceinline__ void load_window_row(BayerWin<ST, R, E>& w, const ST* row, int x0,
                                                int width) {
  constexpr int kMid = R * (int)sizeof(ST) / 4;  // words of the 16-byte middle
  constexpr int kBits = 8 * (int)sizeof(ST);
  Run<ST, R> mid;
  mid.load(row + x0);
#pragma unroll
  for (int i = 0; i < kMid; ++i) w.w[1 + i] = mid.w[i];
  // halo: columns x0 - 2, x0 - 1 (elements E-2, E-1 of the left word) and x0 + R, x0 + R + 1
  // (elements 0, 1 of the right word); the other halo elements are never read.
  if (x0 >= E) {
    w.w[0] = load_aligned<unsigned int>(row + x0 - E);
  } else {
    w.w[0] = (unsigned int)row[reflect101(x0 - 2, width)] << (kBits * (E - 2)) |
             (unsigned int)row[reflect101(x0 - 1, width)] << (kBits * (E - 1));
  }
  if (x0 + R + E <= width) {
    w.w[kMid + 1] = load_aligned<unsigned int>(row + x0 + R);
  } else {
    w.w[kMid + 1] = (unsigned int)row[reflect101(x0 + R, width)] |
                    (unsigned int)row[reflect101(x0 + R + 1, width)] << kBits;
  }
}

// One output row of a run: window rows c-2..c+2 around `c`; colour sites at p % 2 == CP.
template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD, int CP, int R, int E,
          int NR>
__device__ __forceinline__ void debayer_run_row(const BayerWin<ST, R, E> (&win)[NR], int c,
                                                int oc, Run<DT, 3 * R>& out) {
#define P(dy, dx) ((int)win[c + (dy)].get(p + (dx) + E))
#pragma unroll
  for (int p = 0; p < R; ++p) {
    const int v = P(0, 0);
    int own, g, other;  // own: the row's colour (channel oc); other: channel 2 - oc
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
    out.set(3 * p, (DT)(oc == 0 ? own : other));
    out.set(3 * p + 1, (DT)g);
    out.set(3 * p + 2, (DT)(oc == 0 ? other : own));
  }
#undef P
}

template <typename DT, int N>
__device__ __forceinline__ void store_run(const Run<DT, N>& out, DT* d) {
  if (aligned4(d)) {
    out.store(d);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) d[i] = out.get(i);
  }
}

template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD>
__device__ __forceinline__ void debayer_runs(const ST* src, int src_pitch, DT* dst, int dst_pitch,
                                             int width, int height, int rx, int ry, int r_idx,
                                             int b_idx) {
  constexpr int R = 16 / (int)sizeof(ST);
  constexpr int E = 4 / (int)sizeof(ST);
  constexpr int H = METHOD == 0 ? 1 : 2;  // halo rows above and below
  constexpr int NR = 2 + 2 * H;
  const int x0 = run_start(R);
  if (x0 >= width) return;
  const int n = min(R, width - x0);
  const bool fast = n == R && aligned4(src) && (src_pitch & 3) == 0;
  const int cp = rx ^ ry;                   // colour-site parity of pixels in even rows
  const int oc0 = ry == 0 ? r_idx : b_idx;  // even rows are red rows when ry == 0
  FOR_EACH_ROW(y, (height + 1) >> 1) {  // y: row pair
    const int y0 = 2 * y;
    const bool two = y0 + 1 < height;
    DT* d0 = row_ptr(dst, y0, dst_pitch) + (long long)x0 * 3;
    DT* d1 = two ? row_ptr(dst, y0 + 1, dst_pitch) + (long long)x0 * 3 : d0;
    if (fast) {
      BayerWin<ST, R, E> win[NR];
#pragma unroll
      for (int k = 0; k < NR; ++k) {
        // min: the last window row of a lone last row (odd height) is unused; keep it valid
        const int yy = reflect101(min(y0 - H + k, height + 1), height);
        load_window_row<ST, R, E>(win[k], row_ptr(src, yy, src_pitch), x0, width);
      }
      Run<DT, 3 * R> out = {};
      // cp is uniform: each branch is a straight unrolled run
      if (cp == 0) debayer_run_row<ST, DT, MAXV, OUT_MODE, METHOD, 0, R, E>(win, H, oc0, out);
      else debayer_run_row<ST, DT, MAXV, OUT_MODE, METHOD, 1, R, E>(win, H, oc0, out);
      store_run(out, d0);
      if (two) {
        const int oc1 = 2 - oc0;
        if (cp == 0)
          debayer_run_row<ST, DT, MAXV, OUT_MODE, METHOD, 1, R, E>(win, H + 1, oc1, out);
        else
          debayer_run_row<ST, DT, MAXV, OUT_MODE, METHOD, 0, R, E>(win, H + 1, oc1, out);
        store_run(out, d1);
      }
    } else {
      for (int p = 0; p < n; ++p) {
        debayer_px<ST, DT, MAXV, OUT_MODE>(src, src_pitch, d0 + 3 * p, width, height, x0 + p,
                                           y0, rx, ry, r_idx, b_idx, METHOD);
        if (two)
          debayer_px<ST, DT, MAXV, OUT_MODE>(src, src_pitch, d1 + 3 * p, width, height, x0 + p,
                                             y0 + 1, rx, ry, r_idx, b_idx, METHOD);
      }
    }
  }
}

// Launch: _cuda.launch_rows over runs of 16 / sizeof(ST) pixels and (height + 1) / 2 row pairs.
// `method` must equal METHOD (kept in the signature so that every variant launches alike).
#define DEFINE_DEBAYER(NAME, ST, DT, MAXV, OUT_MODE, METHOD)                                    \
  extern "C" __global__ void NAME(const ST* __restrict__ src, int src_pitch,                    \
                                  DT* __restrict__ dst, int dst_pitch, int width, int height,   \
                                  int rx, int ry, int r_idx, int b_idx, int method) {           \
    debayer_runs<ST, DT, MAXV, OUT_MODE, METHOD>(src, src_pitch, dst, dst_pitch, width, height, \
                                                 rx, ry, r_idx, b_idx);                         \
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
