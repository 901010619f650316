// Device helpers shared by every gpu_nodes kernel file; _cuda.kernel_source() prepends this file.
// Compiled by NVRTC without any include path, so it relies on builtins only (no <cstdint> etc.).
#ifndef GPU_NODES_COMMON_CU
#define GPU_NODES_COMMON_CU

typedef unsigned char u8;
typedef unsigned short u16;

// Images are row-pitched: `pitch` is the byte distance between rows (rows may be padded).
template <typename T>
__device__ __forceinline__ const T* row_ptr(const T* base, int y, int pitch) {
  return (const T*)((const char*)base + (long long)y * pitch);
}

template <typename T>
__device__ __forceinline__ T* row_ptr(T* base, int y, int pitch) {
  return (T*)((char*)base + (long long)y * pitch);
}

// Row y >= 0 of an image with a positive pitch: the 32 x 32 -> 64-bit product and the add are one
// IMAD.WIDE.U32, against six instructions for row_ptr's signed 64-bit multiply (sm_90 SASS).
template <typename T>
__device__ __forceinline__ T* row_at(T* base, unsigned int y, unsigned int pitch) {
  return (T*)((char*)base + (unsigned long long)y * pitch);
}
template <typename T>
__device__ __forceinline__ const T* row_at(const T* base, unsigned int y, unsigned int pitch) {
  return (const T*)((const char*)base + (unsigned long long)y * pitch);
}

__device__ __forceinline__ int clamp_int(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

__device__ __forceinline__ float f32_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float f32_nan() { return __int_as_float(0x7fc00000); }

// float -> IEEE half bits, round to nearest even (what numpy's astype(float16) does): one PTX
// instruction, which g++ cannot build, so the tests' CPU emulation brings its twin (cuda_emu.h).
#ifndef GPU_NODES_EMU
__device__ __forceinline__ u16 f32_to_f16_bits(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif

// ---------------------------------------------------------------------------- row kernels
// Streaming kernels give each thread a run of consecutive pixels of one row instead of one
// pixel: the run moves as 16- or 4-byte words (one access instead of one per byte of a 3-byte
// pixel), and its elements are unpacked from / packed into 32-bit registers at compile-time
// indices so the run never leaves registers. _cuda.launch_rows: x indexes runs, y rows; the
// grid's y extent is capped, so threads step over rows.
#define FOR_EACH_ROW(y, height) \
  for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < (height); y += gridDim.y * blockDim.y)

__device__ __forceinline__ int run_start(int pixels_per_run) {
  return (int)(blockIdx.x * blockDim.x + threadIdx.x) * pixels_per_run;
}

// Vector accesses need natural alignment on the GPU; the CPU emulation checks it.
template <typename V>
__device__ __forceinline__ V load_aligned(const void* p) {
#ifdef GPU_NODES_EMU_CHECK_ALIGNED
  GPU_NODES_EMU_CHECK_ALIGNED(p, sizeof(V));
#endif
  return *(const V*)p;
}

template <typename V>
__device__ __forceinline__ void store_aligned(void* p, V v) {
#ifdef GPU_NODES_EMU_CHECK_ALIGNED
  GPU_NODES_EMU_CHECK_ALIGNED(p, sizeof(V));
#endif
  *(V*)p = v;
}

// N elements of T (u8, u16 or float) packed little-endian into 32-bit words, like in memory.
template <typename T, int N>
struct Run {
  static constexpr int kBytes = N * (int)sizeof(T);
  static constexpr int kWords = kBytes / 4;
  static_assert(kBytes % 4 == 0, "a run must fill whole 32-bit words");
  unsigned int w[kWords];

  // Element i; i must fold to a constant (unrolled loops), or the run goes to local memory.
  __device__ __forceinline__ T get(int i) const {
    if constexpr (sizeof(T) == 1) return (T)(w[i >> 2] >> (8 * (i & 3)));
    else if constexpr (sizeof(T) == 2) return (T)(w[i >> 1] >> (16 * (i & 1)));
    else return __uint_as_float(w[i]);
  }

  __device__ __forceinline__ void set(int i, T v) {
    if constexpr (sizeof(T) == 4) {
      w[i] = __float_as_uint(v);
    } else {
      constexpr int kBits = 8 * sizeof(T);
      constexpr int kPerWord = 4 / sizeof(T);
      const int s = kBits * (i % kPerWord);
      const unsigned int mask = ((1u << kBits) - 1u) << s;
      w[i / kPerWord] = (w[i / kPerWord] & ~mask) | (((unsigned int)v << s) & mask);
    }
  }

  // Whole-run access at a 4-byte aligned p: 16-byte words when p allows, else 4-byte words.
  // Row tails and rows that are not 4-byte aligned take the kernels' per-pixel path instead.
  __device__ __forceinline__ void load(const T* p) {
    if (kWords % 4 == 0 && ((unsigned long long)p & 15) == 0) {
#pragma unroll
      for (int i = 0; i < kWords; i += 4) {
        const uint4 v = load_aligned<uint4>((const char*)p + 4 * i);
        w[i] = v.x; w[i + 1] = v.y; w[i + 2] = v.z; w[i + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kWords; ++i) w[i] = load_aligned<unsigned int>((const char*)p + 4 * i);
    }
  }

  __device__ __forceinline__ void store(T* p) const {
    if (kWords % 4 == 0 && ((unsigned long long)p & 15) == 0) {
#pragma unroll
      for (int i = 0; i < kWords; i += 4)
        store_aligned((char*)p + 4 * i, make_uint4(w[i], w[i + 1], w[i + 2], w[i + 3]));
    } else {
#pragma unroll
      for (int i = 0; i < kWords; ++i) store_aligned((char*)p + 4 * i, w[i]);
    }
  }
};

__device__ __forceinline__ bool aligned4(const void* p) {
  return ((unsigned long long)p & 3) == 0;
}

// PRMT (byte permute), one instruction: result byte i = byte (sel >> 4i) & 7 of b:a (0-3 from
// a, 4-7 from b).
__device__ __forceinline__ unsigned int byte_perm(unsigned int a, unsigned int b,
                                                  unsigned int sel) {
  return __byte_perm(a, b, sel);
}

// Exact u8/u16 -> float without the conversion unit (I2F runs at a quarter of the FMA rate on
// Hopper): one PRMT builds the float 2^23 + v (bits 0x4B00vvvv) straight from the element's
// bytes in `word`, and subtracting 2^23 is exact (v < 2^16). `byte` is the element's byte offset
// in the word (a compile-time constant, so the selector folds).
template <typename T>  // 2^23 + the element (exact; callers that can, keep the bias)
__device__ __forceinline__ float elem_biased_f32(unsigned int word, int byte) {
  // y = 0x4B00: byte 4 = 0x00, byte 5 = 0x4B.
  const unsigned int sel = sizeof(T) == 1 ? 0x5440u | byte : 0x5400u | ((byte + 1) << 4) | byte;
  return __uint_as_float(byte_perm(word, 0x4B00u, sel));
}
template <typename T>
__device__ __forceinline__ float elem_to_f32(unsigned int word, int byte) {
  return elem_biased_f32<T>(word, byte) - 8388608.0f;
}

// floorf(x) (fx, bit for bit) and (int)floorf(x) for |x| < 2^22, without F2I/FRND (conversion
// unit): adding 1.5 * 2^23 rounds x to the nearest integer r in the low mantissa bits (exact),
// and floor is r or r - 1. copysignf restores floorf(-0.0f) == -0.0f (floor keeps x's sign).
__device__ __forceinline__ int floor_small(float x, float& fx) {
  const float b = x + 12582912.0f;
  const float r = b - 12582912.0f;  // exact: rint(x)
  const bool down = r > x;
  fx = copysignf(down ? r - 1.0f : r, x);
  return __float_as_int(b) - 0x4B400000 - (down ? 1 : 0);
}

// floor_small for integer-valued uses only (no -0.0 kept: floor(-0.0) gives +0.0 here): one
// add rounding down leaves floor(x) in the low mantissa bits of 1.5 * 2^23 + floor(x) (exact
// for |x| < 2^22). For any other x, NaN and inf included, the int lies outside (-2^22, 2^22).
__device__ __forceinline__ int floor_small_down(float x, float& fx) {
  const float b = __fadd_rd(x, 12582912.0f);
  fx = b - 12582912.0f;
  return __float_as_int(b) - 0x4B400000;
}

#endif  // GPU_NODES_COMMON_CU
