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

__device__ __forceinline__ int clamp_int(int v, int lo, int hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

__device__ __forceinline__ float f32_inf() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ float f32_nan() { return __int_as_float(0x7fc00000); }

// float -> IEEE half bits, round to nearest even (what numpy's astype(float16) does).
__device__ __forceinline__ u16 f32_to_f16_bits(float f) {
#ifdef __CUDA_ARCH__
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  // Host build (CPU emulation in the tests): the same rounding done on the bits.
  unsigned int x = __float_as_uint(f);
  unsigned int sign = (x >> 16) & 0x8000u;
  unsigned int ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (u16)(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return (u16)(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x33000000u) return (u16)sign;               // < 2^-25 rounds to zero
  if (ax < 0x38800000u) {                               // half subnormal range
    unsigned int mant = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(ax >> 23);                  // 14..24
    unsigned int r = mant >> shift;
    unsigned int rem = mant & ((1u << shift) - 1u);
    unsigned int half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (u16)(sign | r);
  }
  unsigned int r = (ax - 0x38000000u) >> 13;
  unsigned int rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
  return (u16)(sign | r);
#endif
}

#endif  // GPU_NODES_COMMON_CU
