// L2 re-read hit share vs footprint, with and without stores to fresh lines (issue 15: the softmax /
// row-wise kernels' re-reads). Run by `python3 -m validation.micro_reread` (plan, derivation and
// schema in that file). sm_90a; plain PTX loads and stores (mem_stream.cuh).
//
// rr_stream
//     every thread issues 4 independent ld.global.cg.v4 (i, i+S, i+2S, i+3S; S = grid threads; each
//     guarded by < n, so small footprints keep the loads in flight too) per step, `rounds` passes over the n vectors of `src` in the same order (round r > 0 re-reads the
//     footprint). st_every = 0: reads only; 1: each loaded vector is also stored (st.global.wb) to
//     dst[r*n + idx] (store/read 1.0); 2: the vectors k = 0, 2 of each step are stored (0.5). dst
//     holds rounds*n vectors, so every store writes a line not written before in this launch
//     ("fresh lines", the softmax kernels' output rows). sink[thread] keeps the loads live.
// rr_probe
//     ONE thread: a dependent chain over `k` lines of `src` (line j*stride_lines, j = 0..k-1, the
//     stream's order), ld.global.cg.u32 each, clock64 before the load and after its use; lat[j] =
//     cycles. Run after a streaming launch: an L2 hit and an HBM miss differ by hundreds of cycles,
//     so the share of short latencies is the share of the footprint still in L2 (a second method).
#include <stdint.h>

#include "mem_stream.cuh"

extern "C" __global__ void __launch_bounds__(1024, 1) rr_stream(const V16* __restrict__ src, long long n, int rounds,
                                                                 int st_every, V16* __restrict__ dst,
                                                                 uint32_t* __restrict__ sink) {
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long S = static_cast<long long>(gridDim.x) * blockDim.x;
  uint32_t x = 0;
  for (int r = 0; r < rounds; ++r) {
    V16* d = dst + static_cast<long long>(r) * n;
#pragma unroll 1
    for (long long i = tid; i < n; i += 4 * S) {  // 4 guarded loads in flight, also when n < 4S
      V16 v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = i + k * S < n ? ms_ld_cg(src + i + k * S) : V16{0u, 0u, 0u, 0u};
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if ((st_every == 1 || (st_every == 2 && (k & 1) == 0)) && i + k * S < n) ms_st(d + i + k * S, v[k]);
#pragma unroll
      for (int k = 0; k < 4; ++k) x = x * 3u + ms_fold(v[k]);
    }
  }
  sink[tid] = x;
}

extern "C" __global__ void rr_probe(const uint32_t* __restrict__ src, int k, long long stride_words,
                                    long long* __restrict__ lat, uint32_t* __restrict__ sink) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  uint32_t x = 0;
  for (int j = 0; j < k; ++j) {
    const uint32_t* p = src + static_cast<long long>(j) * stride_words;
    uint32_t v;
    const long long c0 = clock64();
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p + (x == 0x12345678u ? 1 : 0)));
    x ^= v;
    const long long c1 = clock64() + (x == 0x9e3779b9u ? 1 : 0);
    lat[j] = c1 - c0;
  }
  sink[0] = x;
}
