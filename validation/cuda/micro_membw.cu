// Memory-bound mechanism microbenchmarks (issue 15: the memory-bound portfolio's mechanisms, measured
// apart from the portfolio kernels). Run by `python3 -m validation.micro_membw` (plan and schema:
// validation/membw_plan.py). sm_90a; plain PTX loads and stores.
//
// mb_chain_{cg,ca}_v{4,8,16}
//     load-use chain: every warp walks a row of `trips` x (32 or blockDim) vectors with ONE vector load
//     per trip, used before the next load (#pragma unroll 1; the row kernels' loop shape), `passes`
//     passes over the same row (pass 0 reads HBM: the row was never read before; later passes re-read it
//     from L2/L1). layout 0: each warp its own row (lane l: vectors l, l+32, ...); layout 1: each CTA one
//     row (thread t: vectors t, t+blockDim, ...). Lane 0 of every warp writes
//     times[(warp_global * (passes + 1)) + p] = clock64 cycles of pass p, and [.. + passes] = smid.
// mb_stream_v{4,16}_u{1,4,8}
//     streaming read: every thread issues U independent ld.global.cg of V bytes (i, i+S, .., S = grid
//     threads) before folding them, `rounds` passes over n vectors (rounds > 1: re-reads of the same
//     footprint; whether they hit L2 is what the reuse family measures).
// mb_copy_v{4,8,16}_u{1,2}
//     copy: U loads (ld.global.cg) then U st.global of the same index, grid-stride, `rounds` passes
//     (U = 1: the grid-stride copy's one load in flight per thread, the stores interleaved).
// Every stream/copy kernel: thread 0 of each CTA writes stamps[6*cta + {smid, clk0, clk1, gt0, gt1, 0}]
// after a __syncthreads at its end. Dynamic shared memory (unused) pins the CTAs per SM.
#include <stdint.h>

#include "mem_stream.cuh"

#define MB_LD(OP)                                                                                    \
  __device__ __forceinline__ V4 ms_ld_##OP(const V4* p) {                                            \
    V4 v;                                                                                            \
    asm volatile("ld.global." #OP ".u32 %0, [%1];" : "=r"(v.x) : "l"(p));                            \
    return v;                                                                                        \
  }                                                                                                  \
  __device__ __forceinline__ V8 ms_ld_##OP(const V8* p) {                                            \
    V8 v;                                                                                            \
    asm volatile("ld.global." #OP ".v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));        \
    return v;                                                                                        \
  }                                                                                                  \
  __device__ __forceinline__ V16 ms_ld_##OP(const V16* p) {                                          \
    V16 v;                                                                                           \
    asm volatile("ld.global." #OP ".v4.u32 {%0, %1, %2, %3}, [%4];"                                  \
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));                             \
    return v;                                                                                        \
  }
MB_LD(ca)  // ms_ld_ca; ms_ld_cg is mem_stream.cuh's

// ---------------------------------------------------------------- load-use chain
#define MB_CHAIN(OP, VB)                                                                             \
  extern "C" __global__ void __launch_bounds__(1024, 2) mb_chain_##OP##_v##VB(                         \
      const V##VB* __restrict__ buf, int trips, int passes, int layout, long long* __restrict__ times, \
      uint32_t* __restrict__ sink) {                                                                 \
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wpc = blockDim.x >> 5;               \
    const long long wg = static_cast<long long>(blockIdx.x) * wpc + warp;                            \
    const V##VB* p;                                                                                  \
    int step;                                                                                        \
    if (layout == 0) {                                                                               \
      p = buf + wg * (32LL * trips) + lane;                                                          \
      step = 32;                                                                                     \
    } else {                                                                                         \
      p = buf + static_cast<long long>(blockIdx.x) * (static_cast<long long>(blockDim.x) * trips) + threadIdx.x; \
      step = blockDim.x;                                                                             \
    }                                                                                                \
    uint32_t x = 0;                                                                                  \
    long long* t = times + wg * (passes + 1);                                                        \
    for (int ps = 0; ps < passes; ++ps) {                                                            \
      const long long c0 = clock64();                                                                \
      _Pragma("unroll 1") for (int k = 0; k < trips; ++k) x = x * 3u + ms_fold(ms_ld_##OP(p + static_cast<long long>(k) * step)); \
      const long long c1 = clock64() + (x == 0x9e3779b9u ? 1 : 0); /* the pass ends after its last use */ \
      if (lane == 0) t[ps] = c1 - c0;                                                                \
    }                                                                                                \
    if (lane == 0) t[passes] = ms_smid();                                                            \
    sink[wg * 32 + lane] = x;                                                                        \
  }
MB_CHAIN(cg, 4)
MB_CHAIN(cg, 8)
MB_CHAIN(cg, 16)
MB_CHAIN(ca, 4)
MB_CHAIN(ca, 16)

// ---------------------------------------------------------------- streams
template <typename V, int U>
__device__ __forceinline__ void mb_copy(const V* __restrict__ src, V* __restrict__ dst, long long n, int rounds,
                                        long long* __restrict__ stamps) {
  const MsStamp st;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long S = static_cast<long long>(gridDim.x) * blockDim.x;
  for (int r = 0; r < rounds; ++r) {
    long long i = tid;
#pragma unroll 1
    for (; i + (U - 1) * S < n; i += U * S) {
      V v[U];
#pragma unroll
      for (int k = 0; k < U; ++k) v[k] = ms_ld_cg(src + i + k * S);
#pragma unroll
      for (int k = 0; k < U; ++k) ms_st(dst + i + k * S, v[k]);
    }
#pragma unroll 1
    for (; i < n; i += S) ms_st(dst + i, ms_ld_cg(src + i));
  }
  st.finish(stamps);
}

#define MB_READ(VB, U)                                                                               \
  extern "C" __global__ void __launch_bounds__(1024, 2) mb_stream_v##VB##_u##U(                        \
      const V##VB* __restrict__ buf, long long n, int rounds, uint32_t* __restrict__ sink,           \
      long long* __restrict__ stamps) {                                                              \
    ms_read<V##VB, U>(buf, n, rounds, sink, stamps);                                                 \
  }
MB_READ(4, 1)
MB_READ(4, 8)
MB_READ(16, 1)
MB_READ(16, 4)

#define MB_COPY(VB, U)                                                                               \
  extern "C" __global__ void __launch_bounds__(1024, 2) mb_copy_v##VB##_u##U(                          \
      const V##VB* __restrict__ src, V##VB* __restrict__ dst, long long n, int rounds,               \
      long long* __restrict__ stamps) {                                                              \
    mb_copy<V##VB, U>(src, dst, n, rounds, stamps);                                                  \
  }
MB_COPY(4, 1)
MB_COPY(4, 2)
MB_COPY(8, 1)
MB_COPY(16, 1)
MB_COPY(16, 2)
