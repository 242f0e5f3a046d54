// TMA issue cost in an unrolled sequence, as a GEMM's load_stage issues it (sm_90a).
// See validation/micro_tma_issue.py. Kernel tma_issue_k{K}_{t|w}(map, rows_mask, box_rows, iters,
// times, flag): one CTA; per round: t0 = clock64; arrive.expect_tx(K boxes); K x
// cp.async.bulk.tensor.2d (unrolled, constant smem offsets, box rows j * box_rows); t1 = clock64;
// wait on the mbarrier; t2 = clock64. `t`: thread 0 alone issues (branch); `w`: the whole warp runs
// the sequence with the TMA predicated on lane 0 (the single GEMM variant's way); `c`: thread 0
// alone with the copies unpredicated (predicate a compile-time 1: the warp-specialized producer's way);
// `e`: the whole warp, the copies predicated on the lane `elect.sync` elects (CUTLASS's elect_one_sync).
// times[0] += t1 - t0, times[1] += t2 - t0 over `iters` timed rounds (after 4 untimed).
#include <cuda.h>
#include <stdint.h>

__device__ __forceinline__ uint32_t ti_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ti_load(uint32_t pred, uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                        uint32_t bar) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %0, 0;\n"
      "@p cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%1], [%2, {%3, %4}], [%5];\n}\n" ::"r"(pred),
      "r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void ti_expect(uint32_t pred, uint32_t bar, uint32_t bytes) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %0, 0;\n"
      "@p mbarrier.arrive.expect_tx.shared::cta.b64 _, [%1], %2;\n}\n" ::"r"(pred),
      "r"(bar), "r"(bytes)
      : "memory");
}
__device__ __forceinline__ bool ti_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ uint32_t ti_elect() {
  uint32_t pred;
  asm volatile("{\n.reg .pred p;\nelect.sync _|p, 0xffffffff;\nselp.u32 %0, 1, 0, p;\n}\n" : "=r"(pred));
  return pred;
}
template <int K, bool WARP, bool CONST_PRED = false, bool ELECT = false>
__device__ __forceinline__ void tma_issue(const CUtensorMap* map, int rows_mask, int box_rows, int iters,
                                          long long* times, int* flag) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar_storage;
  const uint32_t base = (ti_u32(smem) + 1023u) & ~1023u;
  const uint32_t bar = ti_u32(&bar_storage);
  const uint32_t box_bytes = 128u * box_rows;
  const uint32_t lane0 = CONST_PRED ? 1u : ELECT ? ti_elect() : static_cast<uint32_t>(threadIdx.x == 0);
  if (!WARP && threadIdx.x != 0) return;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(1) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
  }
  __syncwarp();
  uint32_t phase = 0;
  long long s_issue = 0, s_round = 0;
#pragma unroll 1
  for (int it = -4; it < iters; ++it) {
    const int r0 = (it & 7) * K * box_rows;
    const long long t0 = clock64();
    ti_expect(lane0, bar, box_bytes * K);
#pragma unroll
    for (int j = 0; j < K; ++j) ti_load(lane0, base + j * box_bytes, map, 0, (r0 + j * box_rows) & rows_mask, bar);
    const long long t1 = clock64();
    const long long s = clock64();
    while (!ti_try_wait(bar, phase)) {
      if (clock64() - s > (1ll << 30)) {
        atomicExch(flag, 1);
        return;
      }
    }
    const long long t2 = clock64();
    phase ^= 1;
    if (it >= 0) {
      s_issue += t1 - t0;
      s_round += t2 - t0;
    }
  }
  if (threadIdx.x == 0) {
    times[0] = s_issue;
    times[1] = s_round;
  }
}

#define TI_KERNEL(K, W, TAG, C, E)                                                                     \
  extern "C" __global__ void __launch_bounds__(32, 1) tma_issue_k##K##_##TAG(                         \
      const __grid_constant__ CUtensorMap map, int rows_mask, int box_rows, int iters, long long* times, \
      int* flag) {                                                                                    \
    tma_issue<K, W, C, E>(&map, rows_mask, box_rows, iters, times, flag);                             \
  }
TI_KERNEL(1, false, t, false, false)
TI_KERNEL(2, false, t, false, false)
TI_KERNEL(4, false, t, false, false)
TI_KERNEL(8, false, t, false, false)
TI_KERNEL(16, false, t, false, false)
TI_KERNEL(32, false, t, false, false)
TI_KERNEL(1, true, w, false, false)
TI_KERNEL(2, true, w, false, false)
TI_KERNEL(4, true, w, false, false)
TI_KERNEL(8, true, w, false, false)
TI_KERNEL(16, true, w, false, false)
TI_KERNEL(32, true, w, false, false)
TI_KERNEL(1, false, c, true, false)
TI_KERNEL(2, false, c, true, false)
TI_KERNEL(4, false, c, true, false)
TI_KERNEL(8, false, c, true, false)
TI_KERNEL(16, false, c, true, false)
TI_KERNEL(32, false, c, true, false)
TI_KERNEL(1, true, e, false, true)
TI_KERNEL(2, true, e, false, true)
TI_KERNEL(4, true, e, false, true)
TI_KERNEL(8, true, e, false, true)
TI_KERNEL(16, true, e, false, true)
TI_KERNEL(32, true, e, false, true)
