// Global-memory microbenchmarks for the hopsim global-memory model (sm_90a; plain sm_90 PTX).
// Run by `python3 -m validation.micro_gmem` (validation/micro_gmem.py; plan in gmem_plan.py).
//
// gm_chase_{ca,cg}     one thread follows p = ld.global.{ca|cg}.u64 [p] `warm` untimed then `steps`
//                      timed steps; each 128-B line holds the address of the next line of a random
//                      cyclic permutation. out = {clock64 cycles, globaltimer ns, final p}.
// gm_read_v{4,8,16}_u{1,2,4,8}
//                      streaming ld.global.cg of V-byte vectors (u32, v2.u32, v4.u32): every thread
//                      issues U independent loads (i, i+S, .., i+(U-1)S; S = grid threads) before it
//                      uses any, folds them into one word, then i += U*S; `rounds` passes over the
//                      buffer in one launch (rounds > 1: an L2-resident buffer; .cg bypasses L1).
// gm_write_v{4,16}_u4  the same walk with st.global (.wb) of a thread-dependent non-zero value.
// gm_copy_v{4,16}_u4   U=4 loads (ld.global.cg) then U stores to the same index of dst.
// gm_strided_u4        4-byte ld.global.cg per lane at byte offset j*stride (j = global lane index,
//                      grid-stride, 4 independent loads per thread): a warp request spans 32*stride
//                      bytes, i.e. min(32, stride) 32-B sectors for 32*4 useful bytes.
// Every streaming kernel: thread 0 of each CTA writes stamps[6*cta + {smid, clk0, clk1, gt0, gt1, 0}]
// after a __syncthreads at its end (the effective SM clock, per-SM residency and overlap).
#include <stdint.h>

#include "mem_stream.cuh"

// ---------------------------------------------------------------- pointer chase
#define GM_CHASE(NAME, OP)                                                                          \
  extern "C" __global__ void __launch_bounds__(32, 1)                                               \
      NAME(const unsigned long long* __restrict__ first, int warm, int steps, long long* __restrict__ out) { \
    if (threadIdx.x != 0) return;                                                                   \
    unsigned long long p = first[0];                                                                \
    for (int i = 0; i < warm; ++i) asm volatile(OP " %0, [%0];" : "+l"(p)::"memory");               \
    const uint64_t g0 = ms_gtimer();                                                                \
    const long long t0 = clock64();                                                                 \
    _Pragma("unroll 8") for (int i = 0; i < steps; ++i) asm volatile(OP " %0, [%0];" : "+l"(p)::"memory"); \
    const long long t1 = clock64();                                                                 \
    const uint64_t g1 = ms_gtimer();                                                                \
    out[0] = t1 - t0;                                                                               \
    out[1] = static_cast<long long>(g1 - g0);                                                       \
    out[2] = static_cast<long long>(p);                                                             \
  }
GM_CHASE(gm_chase_ca, "ld.global.ca.u64")
GM_CHASE(gm_chase_cg, "ld.global.cg.u64")

// ---------------------------------------------------------------- vector loads/stores
__device__ __forceinline__ V4 gm_val(V4*, uint32_t s) { return V4{s}; }
__device__ __forceinline__ V16 gm_val(V16*, uint32_t s) { return V16{s, s + 1u, s + 2u, s + 3u}; }

template <typename V, int U>
__device__ __forceinline__ void gm_write(V* __restrict__ dst, long long n, int rounds, long long* __restrict__ stamps) {
  const MsStamp st;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long S = static_cast<long long>(gridDim.x) * blockDim.x;
  for (int r = 0; r < rounds; ++r) {
    const uint32_t s = static_cast<uint32_t>(tid) * 2654435761u + static_cast<uint32_t>(r) * 40503u + 1u;
    long long i = tid;
    for (; i + (U - 1) * S < n; i += U * S) {
#pragma unroll
      for (int k = 0; k < U; ++k) ms_st(dst + i + k * S, gm_val(dst, s + 4u * k));
    }
    for (; i < n; i += S) ms_st(dst + i, gm_val(dst, s));
  }
  st.finish(stamps);
}

template <typename V, int U>
__device__ __forceinline__ void gm_copy(const V* __restrict__ src, V* __restrict__ dst, long long n, int rounds,
                                        long long* __restrict__ stamps) {
  const MsStamp st;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long S = static_cast<long long>(gridDim.x) * blockDim.x;
  for (int r = 0; r < rounds; ++r) {
    long long i = tid;
    for (; i + (U - 1) * S < n; i += U * S) {
      V v[U];
#pragma unroll
      for (int k = 0; k < U; ++k) v[k] = ms_ld_cg(src + i + k * S);
#pragma unroll
      for (int k = 0; k < U; ++k) ms_st(dst + i + k * S, v[k]);
    }
    for (; i < n; i += S) ms_st(dst + i, ms_ld_cg(src + i));
  }
  st.finish(stamps);
}

#define GM_READ(VB, U)                                                                              \
  extern "C" __global__ void gm_read_v##VB##_u##U(const V##VB* __restrict__ buf, long long n, int rounds, \
                                                  uint32_t* __restrict__ sink, long long* __restrict__ stamps) { \
    ms_read<V##VB, U>(buf, n, rounds, sink, stamps);                                                \
  }
GM_READ(4, 1) GM_READ(4, 2) GM_READ(4, 4) GM_READ(4, 8)
GM_READ(8, 1) GM_READ(8, 2) GM_READ(8, 4) GM_READ(8, 8)
GM_READ(16, 1) GM_READ(16, 2) GM_READ(16, 4) GM_READ(16, 8)

#define GM_WRITE_COPY(VB)                                                                           \
  extern "C" __global__ void gm_write_v##VB##_u4(V##VB* __restrict__ dst, long long n, int rounds,  \
                                                 long long* __restrict__ stamps) {                  \
    gm_write<V##VB, 4>(dst, n, rounds, stamps);                                                     \
  }                                                                                                 \
  extern "C" __global__ void gm_copy_v##VB##_u4(const V##VB* __restrict__ src, V##VB* __restrict__ dst, long long n, \
                                                int rounds, long long* __restrict__ stamps) {       \
    gm_copy<V##VB, 4>(src, dst, n, rounds, stamps);                                                 \
  }
GM_WRITE_COPY(4)
GM_WRITE_COPY(16)

// ---------------------------------------------------------------- coalescing
extern "C" __global__ void gm_strided_u4(const uint32_t* __restrict__ buf, long long lanes, int stride_words, int rounds,
                                         uint32_t* __restrict__ sink, long long* __restrict__ stamps) {
  const MsStamp st;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long S = static_cast<long long>(gridDim.x) * blockDim.x;
  const V4* b = reinterpret_cast<const V4*>(buf);
  uint32_t x = 0;
  for (int r = 0; r < rounds; ++r) {
    long long j = tid;
    for (; j + 3 * S < lanes; j += 4 * S) {
      V4 v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = ms_ld_cg(b + (j + k * S) * stride_words);
#pragma unroll
      for (int k = 0; k < 4; ++k) x = x * 3u + v[k].x;
    }
    for (; j < lanes; j += S) x = x * 3u + ms_ld_cg(b + j * stride_words).x;
  }
  sink[tid] = x;
  st.finish(stamps);
}
