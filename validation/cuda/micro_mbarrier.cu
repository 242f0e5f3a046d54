// mbarrier microbenchmarks (sm_90a). All in SM cycles (clock64), one CTA.
//
// mbar_self (1 thread; out[m] = cycles of `iters` repetitions of mode m, after `warm` untimed ones):
//   m = 0  arrive           mbarrier.arrive on a barrier of count 2^20-1 (phase never completes);
//                           the returned state is folded into a sum, so each arrive's result is used
//   m = 1  try_wait (done)  try_wait.parity on a phase that already completed (returns true at once);
//                           the predicate feeds the next iteration's parity (dependent chain)
//   m = 2  arrive + wait    count-1 barrier: arrive (completes the phase), try_wait.parity until true
//   m = 3  expect_tx + complete_tx + wait   count-1 barrier: arrive.expect_tx(128), complete_tx(128)
//                           by the same thread, try_wait until true (the mbarrier side of a TMA phase)
//   m = 4  empty loop        the loop overhead alone (subtract from 0..3)
// mbar_pingpong (warp 0 lane 0 <-> warp `partner` lane 0, two count-1 barriers):
//   warp 0: arrive(b0); wait(b1, i&1)     partner: wait(b0, i&1); arrive(b1)
//   out[0] = cycles of `iters` round trips measured by warp 0 (one round trip = 2 x (arrive ->
//   the other warp's try_wait returns)).
// mbar_fanout (128 threads wait, thread 0 of warp 0 ... ): thread 0 arrives on b0 (count 1) after
//   a delay; all threads of warps 1..4 spin on it; out[1+w] = clock64 when warp w saw it, out[0] =
//   clock64 just before the arrive.
// Waits are bounded (2^31 cycles) and set *flag on expiry.
#include <stdint.h>

#define MB_SPIN_LIMIT (1ll << 31)

__device__ __forceinline__ uint32_t mb_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mb_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ uint64_t mb_arrive(uint32_t bar) {
  uint64_t st;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(st) : "r"(bar) : "memory");
  return st;
}
__device__ __forceinline__ uint32_t mb_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done;
}
__device__ __forceinline__ bool mb_wait(uint32_t bar, uint32_t parity, int* flag) {
  const long long s = clock64();
  while (!mb_try_wait(bar, parity)) {
    if (clock64() - s > MB_SPIN_LIMIT) {
      atomicExch(flag, 1);
      return false;
    }
  }
  return true;
}

extern "C" __global__ void __launch_bounds__(32, 1)
    mbar_self(int iters, int warm, long long* __restrict__ out, unsigned long long* __restrict__ sink,
              int* __restrict__ flag) {
  __shared__ __align__(8) uint64_t bars[4];
  if (threadIdx.x != 0) return;
  const uint32_t b0 = mb_u32(&bars[0]), b1 = mb_u32(&bars[1]), b2 = mb_u32(&bars[2]), b3 = mb_u32(&bars[3]);
  mb_init(b0, (1u << 20) - 1);
  mb_init(b1, 1);
  mb_init(b2, 1);
  mb_init(b3, 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  unsigned long long acc = 0;
  // mode 1 needs a completed phase 0 on b1
  mb_arrive(b1);
  // ---- mode 0: arrive
  for (int rep = 0; rep < 2; ++rep) {
    const int n = rep ? iters : warm;
    const long long t0 = clock64();
#pragma unroll 4
    for (int i = 0; i < n; ++i) acc += mb_arrive(b0);
    const long long t1 = clock64();
    if (rep) out[0] = t1 - t0;
  }
  // ---- mode 1: try_wait on a completed phase (parity 0 -> true; chained through the result)
  {
    uint32_t par = 0;
    for (int rep = 0; rep < 2; ++rep) {
      const int n = rep ? iters : warm;
      const long long t0 = clock64();
#pragma unroll 4
      for (int i = 0; i < n; ++i) par = mb_try_wait(b1, par) ^ 1u;  // true -> par stays 0
      const long long t1 = clock64();
      if (rep) out[1] = t1 - t0;
    }
    acc += par;
  }
  // ---- mode 2: arrive then wait (phase completes at the arrive)
  {
    uint32_t phase = 0;
    for (int rep = 0; rep < 2; ++rep) {
      const int n = rep ? iters : warm;
      const long long t0 = clock64();
      for (int i = 0; i < n; ++i) {
        acc += mb_arrive(b2);
        if (!mb_wait(b2, phase, flag)) return;
        phase ^= 1;
      }
      const long long t1 = clock64();
      if (rep) out[2] = t1 - t0;
    }
  }
  // ---- mode 3: arrive.expect_tx(128) + complete_tx(128) + wait
  {
    uint32_t phase = 0;
    for (int rep = 0; rep < 2; ++rep) {
      const int n = rep ? iters : warm;
      const long long t0 = clock64();
      for (int i = 0; i < n; ++i) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b3), "r"(128) : "memory");
        asm volatile("mbarrier.complete_tx.shared::cta.b64 [%0], %1;" ::"r"(b3), "r"(128) : "memory");
        if (!mb_wait(b3, phase, flag)) return;
        phase ^= 1;
      }
      const long long t1 = clock64();
      if (rep) out[3] = t1 - t0;
    }
  }
  // ---- mode 4: empty loop with the same trip count
  {
    for (int rep = 0; rep < 2; ++rep) {
      const int n = rep ? iters : warm;
      const long long t0 = clock64();
      for (int i = 0; i < n; ++i) asm volatile("" ::: "memory");
      const long long t1 = clock64();
      if (rep) out[4] = t1 - t0;
    }
  }
  sink[0] = acc;
}

extern "C" __global__ void mbar_pingpong(int partner, int iters, int warm, long long* __restrict__ out,
                                         int* __restrict__ flag) {
  __shared__ __align__(8) uint64_t bars[2];
  const uint32_t b0 = mb_u32(&bars[0]), b1 = mb_u32(&bars[1]);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    mb_init(b0, 1);
    mb_init(b1, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (lane != 0) return;
  const int total = warm + iters;
  if (warp == 0) {
    long long t0 = clock64();
    for (int i = 0; i < total; ++i) {
      if (i == warm) t0 = clock64();
      mb_arrive(b0);
      if (!mb_wait(b1, i & 1, flag)) return;
    }
    out[0] = clock64() - t0;
  } else if (warp == partner) {
    for (int i = 0; i < total; ++i) {
      if (!mb_wait(b0, i & 1, flag)) return;
      mb_arrive(b1);
    }
  }
}

extern "C" __global__ void mbar_fanout(int delay, long long* __restrict__ out, int* __restrict__ flag) {
  __shared__ __align__(8) uint64_t bar_s;
  const uint32_t b0 = mb_u32(&bar_s);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    mb_init(b0, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 0) {
    if (lane == 0) {
      const long long s = clock64();
      while (clock64() - s < delay) {
      }
      const long long t = clock64();
      mb_arrive(b0);
      out[0] = t;
    }
  } else {
    if (!mb_wait(b0, 0, flag)) return;
    const long long t = clock64();
    __syncwarp();
    if (lane == 0) out[warp] = t;
  }
}
