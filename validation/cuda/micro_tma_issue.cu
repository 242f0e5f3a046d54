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

#include "../../kernels/cuda/sm90_ptx.cuh"  // the GEMM's own PTX helpers: the same instructions

template <int K, bool WARP, bool CONST_PRED = false, bool ELECT = false>
__device__ __forceinline__ void tma_issue(const CUtensorMap* map, int rows_mask, int box_rows, int iters,
                                          long long* times, int* flag) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar_storage;
  const uint32_t base = (sm90::smem_u32(smem) + 1023u) & ~1023u;
  const uint32_t bar = sm90::smem_u32(&bar_storage);
  const uint32_t box_bytes = 128u * box_rows;
  const uint32_t lane0 = CONST_PRED ? 1u : ELECT ? sm90::elect_one_sync() : static_cast<uint32_t>(threadIdx.x == 0);
  if (!WARP && threadIdx.x != 0) return;
  if (threadIdx.x == 0) {
    sm90::mbar_init(bar, 1);
    sm90::fence_mbar_init();
    sm90::prefetch_tmap(map);
  }
  __syncwarp();
  uint32_t phase = 0;
  long long s_issue = 0, s_round = 0;
#pragma unroll 1
  for (int it = -4; it < iters; ++it) {
    const int r0 = (it & 7) * K * box_rows;
    const long long t0 = clock64();
    sm90::mbar_arrive_expect_tx_if(lane0, bar, box_bytes * K);
#pragma unroll
    for (int j = 0; j < K; ++j) sm90::tma_load_2d_if(lane0, base + j * box_bytes, map, 0, (r0 + j * box_rows) & rows_mask, bar);
    const long long t1 = clock64();
    const long long s = clock64();
    while (!sm90::mbar_try_wait(bar, phase)) {
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
