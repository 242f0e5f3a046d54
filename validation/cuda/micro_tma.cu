// TMA (cp.async.bulk.tensor.2d, global -> shared, mbarrier complete_tx) microbenchmarks, sm_90a.
//
// tma_latency   one thread; per round: t0 = clock64; arrive.expect_tx(k * box bytes); issue k boxes
//               back to back (distinct smem slots, pseudo-random box rows); t_issue = clock64;
//               spin on try_wait.parity; t1 = clock64. cyc[2*i] = t1 - t0 (round trip),
//               cyc[2*i+1] = t_issue - t0 (issue cost of the k boxes for the issuing thread);
//               ns[i] = globaltimer delta. Box indices (first + 40503 j) mod nbox (LCG `first`, nbox a power of two), so
//               a small map (L2-resident after warm-up) measures L2 and a huge one HBM.
// bulk_latency  the same with the 1-D cp.async.bulk (no tensor map), `bytes` per copy.
// tma_stream    every CTA streams boxes cta, cta+grid, ... of the map through a ring of `stages`
//               smem slots (one thread issues; slot reuse waits for its previous fill); no consumer.
//               Bandwidth from host events; per-CTA clock64/globaltimer at start and end.
// Every wait is bounded: after 2^31 cycles the kernel records an error flag and returns.
// Map: 2-D f16, dims {64, rows} (128-B rows), box {64, box_rows}, SWIZZLE_128B (set by the host).
#include <cuda.h>
#include <stdint.h>

#define MICRO_SPIN_LIMIT (1ll << 31)

__device__ __forceinline__ uint64_t tma_gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t tma_smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void tma_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void tma_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool tma_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// Spin until the phase of `parity` completed; false (and flag set) after MICRO_SPIN_LIMIT cycles.
__device__ __forceinline__ bool tma_wait(uint32_t bar, uint32_t parity, int* flag) {
  const long long s = clock64();
  while (!tma_try_wait(bar, parity)) {
    if (clock64() - s > MICRO_SPIN_LIMIT) {
      atomicExch(flag, 1);
      return false;
    }
  }
  return true;
}
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

extern "C" __global__ void __launch_bounds__(32, 1)
    tma_latency(const __grid_constant__ CUtensorMap map, unsigned nbox, int box_rows, int k, int iters, int warm,
                unsigned seed, long long* __restrict__ cyc, long long* __restrict__ ns, int* __restrict__ flag) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar_storage;
  const uint32_t raw = tma_smem_u32(smem);
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t bar = tma_smem_u32(&bar_storage);
  const uint32_t box_bytes = 128u * box_rows;
  if (threadIdx.x != 0) return;
  tma_mbar_init(bar, 1);
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(&map)) : "memory");
  uint32_t x = seed * 2654435761u + 12345u;
  uint32_t phase = 0;
  for (int it = -warm; it < iters; ++it) {
    x = x * 1664525u + 1013904223u;
    const uint32_t first = x >> 7;
    const uint64_t g0 = tma_gtimer();
    const long long t0 = clock64();
    tma_expect(bar, box_bytes * k);
#pragma unroll 1
    for (int j = 0; j < k; ++j) tma_load(base + j * box_bytes, &map, 0, static_cast<int>((first + j * 40503u) & (nbox - 1)) * box_rows, bar);
    const long long ti = clock64();
    if (!tma_wait(bar, phase, flag)) return;
    const long long t1 = clock64();
    const uint64_t g1 = tma_gtimer();
    phase ^= 1;
    if (it >= 0) {
      cyc[2 * it] = t1 - t0;
      cyc[2 * it + 1] = ti - t0;
      ns[it] = static_cast<long long>(g1 - g0);
    }
  }
}

extern "C" __global__ void __launch_bounds__(32, 1)
    bulk_latency(const uint8_t* __restrict__ src, long long nchunk, int bytes, int iters, int warm, unsigned seed,
                 long long* __restrict__ cyc, long long* __restrict__ ns, int* __restrict__ flag) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar_storage;
  const uint32_t dst = (tma_smem_u32(smem) + 127u) & ~127u;
  const uint32_t bar = tma_smem_u32(&bar_storage);
  if (threadIdx.x != 0) return;
  tma_mbar_init(bar, 1);
  uint32_t x = seed * 2654435761u + 777u;
  uint32_t phase = 0;
  for (int it = -warm; it < iters; ++it) {
    x = x * 1664525u + 1013904223u;
    const long long chunk = static_cast<long long>((static_cast<uint64_t>(x) * 2654435761ull) % nchunk);
    const uint8_t* p = src + chunk * bytes;
    const uint64_t g0 = tma_gtimer();
    const long long t0 = clock64();
    tma_expect(bar, bytes);
    bulk_load(dst, p, bytes, bar);
    if (!tma_wait(bar, phase, flag)) return;
    const long long t1 = clock64();
    const uint64_t g1 = tma_gtimer();
    phase ^= 1;
    if (it >= 0) {
      cyc[it] = t1 - t0;
      ns[it] = static_cast<long long>(g1 - g0);
    }
  }
}

extern "C" __global__ void __launch_bounds__(32, 1)
    tma_stream(const __grid_constant__ CUtensorMap map, int nbox, int box_rows, int stages,
               long long* __restrict__ times, int* __restrict__ flag) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[16];
  const uint32_t base = (tma_smem_u32(smem) + 1023u) & ~1023u;
  const uint32_t box_bytes = 128u * box_rows;
  if (threadIdx.x != 0) return;
  for (int s = 0; s < stages; ++s) tma_mbar_init(tma_smem_u32(&bars[s]), 1);
  const long long t0 = clock64();
  const uint64_t g0 = tma_gtimer();
  int i = 0;
  for (int b = blockIdx.x; b < nbox; b += gridDim.x, ++i) {
    const int s = i % stages;
    const uint32_t bar = tma_smem_u32(&bars[s]);
    if (i >= stages && !tma_wait(bar, ((i / stages) - 1) & 1, flag)) return;
    tma_expect(bar, box_bytes);
    tma_load(base + s * box_bytes, &map, 0, b * box_rows, bar);
  }
  for (int j = (i > stages ? i - stages : 0); j < i; ++j)
    if (!tma_wait(tma_smem_u32(&bars[j % stages]), (j / stages) & 1, flag)) return;
  const long long t1 = clock64();
  const uint64_t g1 = tma_gtimer();
  times[4 * blockIdx.x + 0] = t0;
  times[4 * blockIdx.x + 1] = t1;
  times[4 * blockIdx.x + 2] = static_cast<long long>(g0);
  times[4 * blockIdx.x + 3] = static_cast<long long>(g1);
}
