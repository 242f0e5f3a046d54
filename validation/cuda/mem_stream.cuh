// Device helpers shared by the global-memory microbenchmarks (validation/cuda/micro_gmem.cu and
// micro_membw.cu): %globaltimer and %smid reads, the 4/8/16-byte vectors (u32, v2.u32, v4.u32),
// their st.global (.wb) and fold into one word, and MsStamp, the per-CTA record
// stamps[6*cta + {smid, clk0, clk1, gt0, gt1, 0}] written by thread 0 after a __syncthreads.
#pragma once
#include <stdint.h>

__device__ __forceinline__ uint64_t ms_gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ uint32_t ms_smid() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

struct V4 { uint32_t x; };
struct V8 { uint32_t x, y; };
struct V16 { uint32_t x, y, z, w; };

__device__ __forceinline__ void ms_st(V4* p, V4 v) { asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(v.x) : "memory"); }
__device__ __forceinline__ void ms_st(V8* p, V8 v) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}
__device__ __forceinline__ void ms_st(V16* p, V16 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ uint32_t ms_fold(V4 v) { return v.x; }
__device__ __forceinline__ uint32_t ms_fold(V8 v) { return v.x ^ v.y; }
__device__ __forceinline__ uint32_t ms_fold(V16 v) { return v.x ^ v.y ^ v.z ^ v.w; }

struct MsStamp {
  long long c0;
  uint64_t g0;
  __device__ __forceinline__ MsStamp() : c0(clock64()), g0(ms_gtimer()) {}
  __device__ __forceinline__ void finish(long long* stamps) const {
    __syncthreads();
    if (threadIdx.x == 0) {
      long long* s = stamps + 6 * blockIdx.x;
      s[0] = ms_smid();
      s[1] = c0;
      s[2] = clock64();
      s[3] = static_cast<long long>(g0);
      s[4] = static_cast<long long>(ms_gtimer());
      s[5] = 0;
    }
  }
};
