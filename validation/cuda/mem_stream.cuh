// Device helpers shared by the global-memory microbenchmarks (validation/cuda/micro_gmem.cu and
// micro_membw.cu; micro_launch2.cu takes the clock reads): %globaltimer and %smid reads, the 4/8/16-byte vectors (u32, v2.u32, v4.u32),
// their ld.global.cg, st.global (.wb) and fold into one word, MsStamp (the per-CTA record
// stamps[6*cta + {smid, clk0, clk1, gt0, gt1, 0}] written by thread 0 after a __syncthreads) and
// the streaming read ms_read.
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

__device__ __forceinline__ V4 ms_ld_cg(const V4* p) {
  V4 v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v.x) : "l"(p));
  return v;
}
__device__ __forceinline__ V8 ms_ld_cg(const V8* p) {
  V8 v;
  asm volatile("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}
__device__ __forceinline__ V16 ms_ld_cg(const V16* p) {
  V16 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

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

// The streaming read: every thread issues U independent ld.global.cg of V bytes (i, i+S, .., i+(U-1)S;
// S = grid threads) before it folds them into one word (x = 3x + fold), then i += U*S; `rounds`
// passes over n vectors; sink[thread] = x, then the CTA's stamp.
template <typename V, int U>
__device__ __forceinline__ void ms_read(const V* __restrict__ buf, long long n, int rounds, uint32_t* __restrict__ sink,
                                        long long* __restrict__ stamps) {
  const MsStamp st;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long S = static_cast<long long>(gridDim.x) * blockDim.x;
  uint32_t x = 0;
  for (int r = 0; r < rounds; ++r) {
    long long i = tid;
    for (; i + (U - 1) * S < n; i += U * S) {
      V v[U];
#pragma unroll
      for (int k = 0; k < U; ++k) v[k] = ms_ld_cg(buf + i + k * S);
#pragma unroll
      for (int k = 0; k < U; ++k) x = x * 3u + ms_fold(v[k]);
    }
    for (; i < n; i += S) x = x * 3u + ms_fold(ms_ld_cg(buf + i));
  }
  sink[tid] = x;
  st.finish(stamps);
}
