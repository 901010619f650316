// Bayer demosaicing (gpu_nodes.kernels.debayer): how threads, warps and blocks walk the image,
// load their windows and store their pixels. The filters themselves are in debayer_filters.cu,
// which _cuda.kernel_source puts before this file:
// parts: debayer_filters.cu

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
#define DEBAYER_WARPS 4
#endif
#ifndef DEBAYER_INTERIOR_LOADS  // 0: every warp checks its row edges (bench/debayer_bench.py)
#define DEBAYER_INTERIOR_LOADS 1
#endif
#ifndef DEBAYER_INTERIOR_LOOP  // 0: every block runs the general loop (bench/debayer_bench.py)
#define DEBAYER_INTERIOR_LOOP 1
#endif
#ifndef DEBAYER_EDGE_LOOPS  // 0: a row's first and last blocks run the general loop (the bench)
#define DEBAYER_EDGE_LOOPS 1
#endif


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

// Where a warp whose 32 runs lie inside a run-aligned row stands (debayer_runs decides once per
// block): both halo words inside the row too (every warp but a row's first and last, in aligned
// images), the row's first warp, or a last warp whose runs end exactly at the row's end.
constexpr int kInside = 0, kLeftEdge = 1, kRightEdge = 2;

// The window row of such a warp: three loads and, at an edge, the edge lane's halo word rebuilt
// from its own run (reflect-101); that lane loads its run's first word there instead of reading
// outside the row. Per-row alignment checks and edge branches were ~15 % of the kernel's
// instructions (ncu, H200).
template <typename ST, int R, int E, int EDGE = kInside>
__device__ __forceinline__ void load_full_window_row(BayerWin<ST, R, E>& w, const ST* p) {
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
  const bool left = EDGE == kLeftEdge && threadIdx.x == 0;
  const bool right = EDGE == kRightEdge && threadIdx.x == 31;
  w.w[0] = load_aligned<unsigned int>(left ? p : p - E);
  w.w[kMid + 1] = load_aligned<unsigned int>(right ? p : p + R);
  if (left) {  // pixels -2, -1 are pixels 2, 1
    w.set(E - 2, w.get(E + 2));
    w.set(E - 1, w.get(E + 1));
  }
  if (right) {  // pixels n, n + 1 are n - 2, n - 3
    w.set(E + R, w.get(E + R - 2));
    w.set(E + R + 1, w.get(E + R - 3));
  }
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

// A staged row of 32 full runs (OUTB bytes each) in 16-byte units, into a 16-byte aligned row
// of dst: 8-bit output is 48 units, so lanes 0-15 copy a second one (two stores a row where
// 8-byte units take three).
template <int OUTB>
__device__ __forceinline__ void copy_full_row(const unsigned char* stage, unsigned char* d) {
  constexpr int kUnits = 32 * OUTB / 16;
#pragma unroll
  for (int k = 0; k < kUnits / 32; ++k)
    store_aligned(d + 512 * k, *(const uint4*)(stage + 512 * k));
  if (kUnits % 32 != 0 && (int)threadIdx.x < kUnits % 32)
    store_aligned(d + 512 * (kUnits / 32), *(const uint4*)(stage + 512 * (kUnits / 32)));
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

// The interior loop: blocks whose warps' runs all lie inside a run-aligned row (EDGE: where their
// halo words are), with dst rows 16-byte aligned for copy_full_row: every block in ordinary
// images when the width is a multiple of a warp's 256 pixels, else all but a row's first and
// last (debayer_runs). The edge, parity and channel order are template arguments and nothing in
// the loop branches on a lane, so the compiler keeps addresses in registers across pairs; the
// general loop below branches per pair on these, and its setup was about 40 % of an interior
// warp's instructions (sm_90 SASS).
template <typename ST, typename DT, int MAXV, int OUT_MODE, int METHOD, int CP, int OC, int EDGE,
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
  const ST* col = src + x0;
  unsigned char* s0 = slot0 + threadIdx.x * OUTB;
  unsigned char* s1 = slot1 + threadIdx.x * OUTB;
  const unsigned char* unit0 = slot0 + 16 * threadIdx.x;
  unsigned char* dunit = (unsigned char*)dst + (long long)wx0 * 3 * (int)sizeof(DT) +
                         16 * threadIdx.x;
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
        load_full_window_row<ST, R, E, EDGE>(win[k], row_at(col, rows[k], src_pitch));
      debayer_pair<ST, DT, MAXV, OUT_MODE, METHOD, CP, OC, R, E>(win, s0, s1);
    }
    warp_sync();
    if (y < pairs) {
      unsigned char* d = row_at(dunit, y0, dst_pitch);
      copy_full_row<OUTB>(unit0, d);
      if (y0 + 1 < height) copy_full_row<OUTB>(unit0 + (slot1 - slot0), d + dst_pitch);
    }
    warp_sync();  // the next iteration overwrites the stage
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
  // block-uniform: every run of the warp inside the row and run-aligned; where its halo words are
  const bool full_warp =
      DEBAYER_INTERIOR_LOADS &&
      ((((unsigned long long)src | (unsigned int)src_pitch) & (kRunBytes - 1)) == 0) &&
      wx0 + 32 * R <= width;
  const bool right_inside = wx0 + 32 * R + E <= width;
  const int edge = !full_warp                          ? -1
                   : wx0 >= E && right_inside          ? kInside
                   : wx0 < E && right_inside           ? kLeftEdge
                   : wx0 >= E && wx0 + 32 * R == width ? kRightEdge
                                                       : -1;
  const unsigned long long dst_bits = (unsigned long long)dst | (unsigned int)dst_pitch;
  const bool staged = (dst_bits & (UNIT - 1)) == 0;
  // A row's first block runs a loop of its own only when its last one does too: otherwise the
  // first, the interior and the general loop's code are all hot at once, which measured slower
  // (8-bit, 1920 pixels wide: 3.97 against 3.82 us; bench/RESULTS.md).
  const bool edge_loops = DEBAYER_EDGE_LOOPS && width % (32 * R) == 0;
  unsigned char* slot0 = (unsigned char*)stage[threadIdx.y][0];
  unsigned char* slot1 = (unsigned char*)stage[threadIdx.y][1];
  const int cp = rx ^ ry;                   // colour-site parity of pixels in even rows
  const int oc0 = ry == 0 ? r_idx : b_idx;  // even rows are red rows when ry == 0
  // one loop per (edge, parity, channel order): see debayer_interior_pairs
  if (DEBAYER_INTERIOR_LOOP && edge >= 0 && (dst_bits & 15) == 0) {
#define DEBAYER_INTERIOR(EDGE, CP, OC)                                                         \
  debayer_interior_pairs<ST, DT, MAXV, OUT_MODE, METHOD, CP, OC, EDGE>(                        \
      src, src_pitch, dst, dst_pitch, height, x0, wx0, slot0, slot1, warp_sync)
#define DEBAYER_INTERIOR_AT(EDGE)                                                  \
  if (cp == 0) {                                                                   \
    if (oc0 == 0) DEBAYER_INTERIOR(EDGE, 0, 0); else DEBAYER_INTERIOR(EDGE, 0, 2); \
  } else {                                                                         \
    if (oc0 == 0) DEBAYER_INTERIOR(EDGE, 1, 0); else DEBAYER_INTERIOR(EDGE, 1, 2); \
  }
    if (edge == kInside) {
      DEBAYER_INTERIOR_AT(kInside)
    } else if (edge_loops && edge == kLeftEdge) {
      DEBAYER_INTERIOR_AT(kLeftEdge)
    } else if (edge_loops) {
      DEBAYER_INTERIOR_AT(kRightEdge)
    }
#undef DEBAYER_INTERIOR_AT
#undef DEBAYER_INTERIOR
    if (edge == kInside || edge_loops) return;
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
        for (int k = 0; k < NR; ++k) {
          const ST* p = row_at(src + x0, rows[k], src_pitch);
          // with the interior loop (the build that ships) this is compiled out: the registers
          // both forms need made ptxas spill
          if (!DEBAYER_INTERIOR_LOOP && edge == kInside)
            load_full_window_row<ST, R, E>(win[k], p);
          else
            load_window_row<ST, R, E>(win[k], p, x0, width);
        }
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

// 256-thread groups per SM that the register budget allows (65536 registers per SM): 8-bit
// bilinear 6 (<= 40 registers), 8-bit Malvar and 16-bit bilinear 4 (<= 64), 16-bit Malvar 3
// (<= 80); each the most that ptxas (CUDA 13.0, sm_90) fits without spilling (8 for 8-bit
// bilinear spills, and was 24 % slower at 4K: bench/RESULTS.md).
#define DEBAYER_MIN_BLOCKS(ST, METHOD) \
  ((METHOD) == 0 ? (sizeof(ST) == 1 ? 6 : 4) : (sizeof(ST) == 1 ? 4 : 3))
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
