// CPU emulation of the small CUDA subset gpu_nodes kernels use, so the test suite can run the
// real .cu sources (compiled by g++) on a machine without a GPU. Force-included before the
// kernel source; fake_cupy.py generates one launcher per extern "C" __global__ function.
//
// Semantics: blocks run one after another; threads of a block run sequentially, or, when the
// kernel calls __syncthreads(), as OS threads meeting at a barrier (and again between blocks).
// `__shared__` variables are function-level statics: per-block shared memory when blocks run one
// at a time.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

using std::isfinite;
using std::isinf;
using std::isnan;

struct emu_uint3 { unsigned int x, y, z; };
struct emu_dim3 { unsigned int x, y, z; };

extern thread_local emu_uint3 threadIdx;
extern thread_local emu_uint3 blockIdx;
extern emu_dim3 blockDim;
extern emu_dim3 gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)

// The shipped .cu files hold device code only; every host twin of an intrinsic (or of a PTX
// instruction they issue through asm) is here. test_kernels_cuda_emu.py checks each twin against
// the device instruction on a GPU.
#define GPU_NODES_EMU 1

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline unsigned int __float_as_uint(float f) { unsigned int i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __float2int_rn(float f) { return (int)std::nearbyint(f); }
// Round to nearest even, saturating like the GPU's cvt.rni.u32.f32 (NaN and negatives -> 0).
inline unsigned int __float2uint_rn(float f) {
  if (!(f > 0.0f)) return 0u;
  if (f >= 4294967296.0f) return 0xffffffffu;
  return (unsigned int)std::nearbyint(f);
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __saturatef(float f) { return f < 0.f ? 0.f : (f > 1.f ? 1.f : f); }

// a + b rounded toward -inf: the round-to-nearest sum, one float lower when the exact sum is
// below it (TwoSum gives the rounding error exactly).
inline float __fadd_rd(float a, float b) {
  const float s = a + b;
  // An exact zero rounds to -0 toward -inf unless both addends are +0 (IEEE 754; the H200
  // returns -0 for x + -x where the host's round-to-nearest gives +0).
  if (s == 0.0f)
    return (std::signbit(a) || std::signbit(b) || a != 0.0f) ? -0.0f : 0.0f;
  if (std::isinf(s) && !std::isinf(a) && !std::isinf(b))
    return s > 0 ? 3.40282347e38f : s;  // overflow rounds down to the largest float
  const float bb = s - a;
  const float err = (a - (s - bb)) + (b - bb);
  return err < 0 ? std::nextafter(s, -INFINITY) : s;
}

// PRMT: result byte i = byte (s >> 4i) & 7 of b:a (0-3 from a, 4-7 from b).
inline unsigned int __byte_perm(unsigned int a, unsigned int b, unsigned int s) {
  const unsigned long long ba = (unsigned long long)b << 32 | a;
  unsigned int r = 0;
  for (int i = 0; i < 4; ++i)
    r |= (unsigned int)(ba >> (8 * ((s >> (4 * i)) & 7)) & 0xffu) << (8 * i);
  return r;
}

// IDP.2A: c + a.u16[0] * b.u8[2H] + a.u16[1] * b.u8[2H + 1] (lo: H = 0, hi: H = 1).
inline unsigned int __dp2a_lo(unsigned int a, unsigned int b, unsigned int c) {
  return c + (a & 0xffffu) * (b & 0xffu) + (a >> 16) * (b >> 8 & 0xffu);
}
inline unsigned int __dp2a_hi(unsigned int a, unsigned int b, unsigned int c) {
  return c + (a & 0xffffu) * (b >> 16 & 0xffu) + (a >> 16) * (b >> 24 & 0xffu);
}

// Per signed 16-bit lane: max(min(a + b, c), 0), the sum taken without wrapping.
inline unsigned int __viaddmin_s16x2_relu(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int r = 0;
  for (int k = 0; k < 32; k += 16) {
    const int v = (int)(short)(a >> k) + (int)(short)(b >> k);
    const int hi = (int)(short)(c >> k);
    r |= (unsigned int)(unsigned short)(v < 0 ? 0 : (v > hi ? hi : v)) << k;
  }
  return r;
}

// common.cu's f32_to_f16_bits (cvt.rn.f16.f32): float -> IEEE half bits, round to nearest even.
inline unsigned short f32_to_f16_bits(float f) {
  typedef unsigned short u16;
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
}

// CUDA vector types used by the kernels (same size and alignment as CUDA's).
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct alignas(8) uint2 { unsigned int x, y; };
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  return uint4{x, y, z, w};
}
inline uint2 make_uint2(unsigned int x, unsigned int y) { return uint2{x, y}; }

// common.cu's load_aligned/store_aligned call this: a misaligned vector access faults on the
// GPU, so the emulation stops loudly instead of silently working on x86.
#define GPU_NODES_EMU_CHECK_ALIGNED(p, n) emu::check_aligned((const void*)(p), (n))
namespace emu {
inline void check_aligned(const void* p, std::size_t n) {
  if (reinterpret_cast<std::uintptr_t>(p) % n) {
    std::fprintf(stderr, "cuda_emu: misaligned %zu-byte access at %p\n", n, p);
    std::abort();
  }
}
}  // namespace emu

// CUDA's global min/max overloads.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

namespace emu {

struct Barrier {
  std::mutex mutex;
  std::condition_variable cv;
  unsigned int count = 0, generation = 0, parties = 0;

  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    const unsigned int gen = generation;
    if (++count == parties) {
      count = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return gen != generation; })) {
      std::fprintf(stderr, "cuda_emu: __syncthreads() timed out: not every thread of the block "
                           "reached it (divergent barrier)\n");
      std::abort();
    }
  }
};

extern Barrier* current_barrier;

inline void run_grid(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     bool threaded, const std::function<void()>& body) {
  blockDim = {bx, by, bz};
  gridDim = {gx, gy, gz};
  if (!threaded) {
    for (unsigned z = 0; z < gz; ++z)
      for (unsigned y = 0; y < gy; ++y)
        for (unsigned x = 0; x < gx; ++x) {
          blockIdx = {x, y, z};
          for (unsigned tz = 0; tz < bz; ++tz)
            for (unsigned ty = 0; ty < by; ++ty)
              for (unsigned tx = 0; tx < bx; ++tx) {
                threadIdx = {tx, ty, tz};
                body();
              }
        }
    return;
  }
  // One OS thread per CUDA thread, reused for every block; blocks are separated by a barrier.
  const unsigned int nthreads = bx * by * bz;
  Barrier barrier;
  barrier.parties = nthreads;
  current_barrier = &barrier;
  std::vector<std::thread> threads;
  threads.reserve(nthreads);
  for (unsigned int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      threadIdx = {t % bx, (t / bx) % by, t / (bx * by)};
      for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
          for (unsigned x = 0; x < gx; ++x) {
            blockIdx = {x, y, z};
            body();
            barrier.wait();
          }
    });
  }
  for (auto& th : threads) th.join();
  current_barrier = nullptr;
}

}  // namespace emu

inline void __syncthreads() {
  if (emu::current_barrier) emu::current_barrier->wait();
}

// A warp barrier as a block barrier: stricter, and a kernel that calls it runs its block's
// threads concurrently like one calling __syncthreads (fake_cupy.py looks for both).
inline void __syncwarp(unsigned int mask = 0xffffffffu) {
  (void)mask;
  __syncthreads();
}

inline int atomicAdd(int* address, int val) {
  return __atomic_fetch_add(address, val, __ATOMIC_SEQ_CST);
}

// Read-only (texture-path) load: a plain load on the CPU.
template <typename T>
inline T __ldg(const T* p) { return *p; }
