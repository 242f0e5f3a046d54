// wgmma throughput against the shared-memory swizzle of its operands (sm_90a).
//
// One kernel per (N, SP = swizzle span 32/64/128 B, NN = B MN-major):
//   wgmma_sw_n{N}_sp{SP}_{tn|nn}
// Each warpgroup runs `warm` untimed and `iters` timed "k-tiles". A k-tile is what one consumer
// warpgroup of kernels/cuda/gemm_sm90.cu does per stage for a 64 x N x 64 slice:
//     wgmma.fence; 4 x m64nNk16 (K advancing 32 B, descriptors as gemm_sm90.cu builds them);
//     wgmma.commit_group; wgmma.wait_group 1   (so consecutive k-tiles overlap, as in the GEMM)
// with operands in the GEMM's stage layout: K-major A (64 rows) and B (N rows), column chunk c
// of SP bytes at c * ROWS * SP; NN: B stored N-major, chunk j of SP/2 columns at j * 64 * SP.
// Thread 0 of each warpgroup writes times[2 * (cta * nwg + wg) + {0, 1}] = clock64 {start, end}.
// cycles per k-tile = (end - start) / iters; one warpgroup alone at the tensor core's full rate
// needs N / 2 * 4 = 2 N cycles per k-tile (m64nNk16 = 2048 N FLOP, 4096 FLOP/cycle/SM).
// Shared memory contents are whatever is there (timing only; values are not checked).
#include <stdint.h>

#include "../../kernels/cuda/sm90_ptx.cuh"
#include "../../kernels/cuda/wgmma_ops.cuh"

template <int N, int NN>
__device__ __forceinline__ void mma_n(float* d, uint64_t da, uint64_t db) {
  if constexpr (N == 64) wgmma_n64_f32_f16<NN>(d, da, db);
  else if constexpr (N == 128) wgmma_n128_f32_f16<NN>(d, da, db);
  else wgmma_n256_f32_f16<NN>(d, da, db);
}

template <int N, int SP, int NN>
__device__ __forceinline__ void ktile(float (&acc)[N / 2], uint32_t sa, uint32_t sb) {
  constexpr uint32_t LAYOUT = SP == 128 ? 1 : (SP == 64 ? 2 : 3);
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const uint32_t kbyte = kk * 32;
    const uint64_t da = sm90::make_desc(sa + (kbyte / SP) * 64 * SP + kbyte % SP, 16, 8 * SP, LAYOUT);
    uint64_t db;
    if constexpr (!NN)
      db = sm90::make_desc(sb + (kbyte / SP) * N * SP + kbyte % SP, 16, 8 * SP, LAYOUT);
    else
      db = sm90::make_desc(sb + kk * 16 * SP, 64 * SP, 8 * SP, LAYOUT);
    mma_n<N, NN>(acc, da, db);
  }
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
}

template <int N, int SP, int NN>
__device__ __forceinline__ void bench(unsigned long long* times, float* sink, int iters, int warm) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = sm90::smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const int wg = threadIdx.x / 128;
  // each warpgroup its own A (64 x 64 f16 = 8 KB); B (N x 64 f16) shared, as in the GEMM
  const uint32_t sb = base;
  const uint32_t sa = base + N * 128 + wg * 8192;
  float acc[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) acc[i] = 0.f;
#pragma unroll 1
  for (int i = 0; i < warm; ++i) ktile<N, SP, NN>(acc, sa, sb);
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("bar.sync %0, %1;" ::"r"(wg + 1), "n"(128));
  const unsigned long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < iters; ++i) ktile<N, SP, NN>(acc, sa, sb);
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  const unsigned long long t1 = clock64();
  const int nwg = blockDim.x / 128;
  if (threadIdx.x % 128 == 0) {
    times[2 * (blockIdx.x * nwg + wg)] = t0;
    times[2 * (blockIdx.x * nwg + wg) + 1] = t1;
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += acc[i];
  if (s == 123.456f) sink[threadIdx.x] = s;  // keep the wgmmas
}

#define MICRO_WGMMA_SW_KERNEL(NAME, N, SP, NN)                                                      \
  extern "C" __global__ void __launch_bounds__(256, 1)                                            \
      NAME(unsigned long long* times, float* sink, int iters, int warm) {                          \
    bench<N, SP, NN>(times, sink, iters, warm);                                                     \
  }

MICRO_WGMMA_SW_KERNEL(wgmma_sw_n64_sp32_tn, 64, 32, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n64_sp64_tn, 64, 64, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n64_sp128_tn, 64, 128, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n128_sp32_tn, 128, 32, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n128_sp64_tn, 128, 64, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n128_sp128_tn, 128, 128, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n256_sp32_tn, 256, 32, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n256_sp64_tn, 256, 64, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n256_sp128_tn, 256, 128, 0)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n128_sp128_nn, 128, 128, 1)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n128_sp64_nn, 128, 64, 1)
MICRO_WGMMA_SW_KERNEL(wgmma_sw_n128_sp32_nn, 128, 32, 1)
