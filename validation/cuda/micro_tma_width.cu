// TMA streaming throughput against the box's inner width (sm_90a), in the GEMM's access pattern.
//
// tma_width_stream: every CTA (one thread issues) streams `rounds` x `k` boxes of a 2-D f16 map
// whose rows are `cols` elements long (row pitch 2*cols bytes, e.g. 8 KB for K = 4096): rounds of
// k boxes issued back to back on one mbarrier, two rounds in flight (nobody reads the data). Box b
// of a CTA is (column chunk (g % ncol) * W, row block ((g / ncol) % nrow) * R) with
// g = grp + b * ngrp, grp = cta / share, ngrp = ceil(grid / share): the `share` CTAs of a group
// (consecutive block indices, one CTA per SM) read the same box sequence at about the same time,
// as the CTAs of a GEMM that read one A or B tile; share = 1 gives every CTA its own boxes
// (g = cta + b * grid). W x R the box (W = 16/32/64 elements = 32/64/128-B rows, swizzle = row
// width, set by the host). Consecutive boxes walk the column chunks of a row block as a GEMM
// k-loop does for one operand. `lag` (stagger suite): member j of a group reads the group's
// sequence j x lag boxes ahead of member 0, so the members fetch the same box lag x (cycles per
// box) apart in time instead of together (lag 0: together, as before).
// times[4*cta + {0..3}] = clock64 start, end, %globaltimer start, end.
#include <cuda.h>
#include <stdint.h>

#define SPIN_LIMIT (1ll << 31)

__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t s32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ bool wait_parity(uint32_t bar, uint32_t parity, int* flag) {
  const long long s = clock64();
  while (true) {
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    if (done) return true;
    if (clock64() - s > SPIN_LIMIT) {
      atomicExch(flag, 1);
      return false;
    }
  }
}

// Both kernels' set-up, end and output (not their per-box loops): the two round mbarriers (one
// arrival each) initialised, fenced for the async proxy, and the map prefetched;
__device__ __forceinline__ void init_round_bars(uint64_t* bars, const CUtensorMap* map) {
  for (int s = 0; s < 2; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(s32(&bars[s])) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}
// the waits for the (up to) two rounds still in flight after the last issue (false: one timed out);
__device__ __forceinline__ bool wait_last_rounds(uint64_t* bars, int rounds, int* flag) {
  for (int q = (rounds > 2 ? rounds - 2 : 0); q < rounds; ++q)
    if (!wait_parity(s32(&bars[q & 1]), (q / 2) & 1, flag)) return false;
  return true;
}
// the end stamps and the CTA's times[4*cta + {0..3}] = clock64 start, end, %globaltimer start, end.
__device__ __forceinline__ void write_times(long long* times, long long t0, uint64_t g0) {
  const long long t1 = clock64();
  const uint64_t g1 = gtimer();
  times[4 * blockIdx.x + 0] = t0;
  times[4 * blockIdx.x + 1] = t1;
  times[4 * blockIdx.x + 2] = static_cast<long long>(g0);
  times[4 * blockIdx.x + 3] = static_cast<long long>(g1);
}

extern "C" __global__ void __launch_bounds__(32, 1)
    tma_width_stream(const __grid_constant__ CUtensorMap map, int ncol, int lncol, int nrow, int w,
                     int r, int rounds, int k, long long* __restrict__ times, int* __restrict__ flag,
                     int share, int lag) {
  // Two groups of k smem slots, one mbarrier per group: round q issues k boxes back to back into
  // group q % 2 (one arrive.expect_tx of k boxes), after waiting for that group's previous round.
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[2];
  const uint32_t base = (s32(smem) + 1023u) & ~1023u;
  const uint32_t box_bytes = 2u * w * r;
  if (threadIdx.x != 0) return;
  const int sh = share > 0 ? share : 1;
  const int grp = blockIdx.x / sh, ngrp = (gridDim.x + sh - 1) / sh;  // once, outside the loop
  const int lead = (blockIdx.x % sh) * lag;  // member j of a group runs j x lag boxes ahead in the sequence
  init_round_bars(bars, &map);
  const long long t0 = clock64();
  const uint64_t g0 = gtimer();
  int box = 0;
  for (int q = 0; q < rounds; ++q) {
    const int half = q & 1;
    const uint32_t bar = s32(&bars[half]);
    if (q >= 2 && !wait_parity(bar, ((q / 2) - 1) & 1, flag)) return;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(k * box_bytes) : "memory");
    for (int j = 0; j < k; ++j, ++box) {
      const int g = grp + (box + lead) * ngrp;
      const int c0 = (g & (ncol - 1)) * w, c1 = ((g >> lncol) & (nrow - 1)) * r;
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
          ::"r"(base + (half * k + j) * box_bytes), "l"(&map), "r"(c0), "r"(c1), "r"(bar) : "memory");
    }
  }
  if (!wait_last_rounds(bars, rounds, flag)) return;
  write_times(times, t0, g0);
}

// tma_gemm_stream: the load side of a GEMM mainloop without the math. CTA c of a gm x gn grid
// (row raster: c = mi * gn + ni) streams, per k step, one box of A's row block mi (tensor rows
// [mi * r, mi * r + r)) and one of B's row block ni (rows [(gm + ni) * r, ...)), the k steps
// walking the column chunks of the rows as the k-loop does: so each A box is read by the gn CTAs
// of one grid row and each B box by the gm CTAs of one grid column, as in a GEMM (no multicast),
// in rounds of k boxes on one mbarrier, two rounds in flight. `delay`: cycles the thread spins
// after issuing each round (0: the loads alone).
extern "C" __global__ void __launch_bounds__(32, 1)
    tma_gemm_stream(const __grid_constant__ CUtensorMap map, int ncol, int gm, int gn, int w, int r,
                    int rounds, int k, long long* __restrict__ times, int* __restrict__ flag, int delay) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[2];
  const uint32_t base = (s32(smem) + 1023u) & ~1023u;
  const uint32_t box_bytes = 2u * w * r;
  if (threadIdx.x != 0) return;
  const int mi = blockIdx.x / gn, ni = blockIdx.x % gn;  // once, outside the loop
  const int rowa = mi * r, rowb = (gm + ni) * r;
  init_round_bars(bars, &map);
  const long long t0 = clock64();
  const uint64_t g0 = gtimer();
  int box = 0;
  for (int q = 0; q < rounds; ++q) {
    const int half = q & 1;
    const uint32_t bar = s32(&bars[half]);
    if (q >= 2 && !wait_parity(bar, ((q / 2) - 1) & 1, flag)) return;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(k * box_bytes) : "memory");
    for (int j = 0; j < k; ++j, ++box) {
      const int c0 = ((box >> 1) & (ncol - 1)) * w, c1 = (box & 1) ? rowb : rowa;
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
          ::"r"(base + (half * k + j) * box_bytes), "l"(&map), "r"(c0), "r"(c1), "r"(bar) : "memory");
    }
    if (delay > 0) {
      const long long s = clock64();
      while (clock64() - s < delay) {}
    }
  }
  if (!wait_last_rounds(bars, rounds, flag)) return;
  write_times(times, t0, g0);
}
