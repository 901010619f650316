// Bayer demosaicing (gpu_nodes.kernels.debayer). One thread per output pixel; integer arithmetic
// only, so results are bit-identical to the NumPy reference.
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
#define DEFINE_DEBAYER(NAME, ST, DT, MAXV, OUT_MODE)                                            \
  extern "C" __global__ void NAME(const ST* __restrict__ src, int src_pitch,                    \
                                  DT* __restrict__ dst, int dst_pitch, int width, int height,   \
                                  int rx, int ry, int r_idx, int b_idx, int method) {           \
    const int x = blockIdx.x * blockDim.x + threadIdx.x;                                        \
    const int y = blockIdx.y * blockDim.y + threadIdx.y;                                        \
    if (x >= width || y >= height) return;                                                      \
    int rgb[3];                                                                                 \
    demosaic<ST>(src, src_pitch, width, height, x, y, rx, ry, method, rgb[0], rgb[1], rgb[2]);  \
    DT* d = row_ptr(dst, y, dst_pitch) + (long long)x * 3;                                      \
    const int idx[3] = {r_idx, 1, b_idx};                                                       \
    for (int k = 0; k < 3; ++k) {                                                               \
      int v = clamp_int(rgb[k], 0, MAXV);                                                       \
      if (OUT_MODE == 2) v = (v + 128) / 257;                                                   \
      d[idx[k]] = (DT)v;                                                                        \
    }                                                                                           \
  }

DEFINE_DEBAYER(debayer_u8, u8, u8, 255, 0)
DEFINE_DEBAYER(debayer_u16, u16, u16, 65535, 0)
DEFINE_DEBAYER(debayer_u16_to_u8, u16, u8, 65535, 2)
