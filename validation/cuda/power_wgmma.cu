// Power microbenchmark: the tensor-core burner (sm_90a). See validation/power/benches.py.
//
// Kernels wgburn_{f16f32,bf16f32,f16f16}(src, counts, sink, duration_ns, duty_pct, groups):
// one CTA per SM, two warpgroups (256 threads), 48 KB of operands copied from `src` into shared
// memory once (B: 256 x 64 f16, then one 64 x 64 A per warpgroup, K-major, 128-B swizzle: the
// GEMM's stage layout). Each round, every warpgroup issues `groups` k-tiles (wgmma.fence;
// 4 x m64n256k16 SS, K advancing 32 B; commit; wait_group 1), then waits for all and zeroes its
// accumulators (so values never saturate and keep toggling). With duty_pct < 100 it then idles
// busy * (100 - duty) / duty cycles (clock64 spin with nanosleep, measured per round), so the
// tensor pipe is busy `duty_pct` % of the time. Rounds repeat until `duration_ns` of globaltimer
// have passed (thread 0 decides; both warpgroups leave together). counts[blockIdx.x] = wgmma
// instructions issued by the CTA (warpgroup-level, m64n256k16 each = 524288 FLOP).
// Operand values are whatever `src` holds: the runner passes seeded random or all-zero data.
#include <stdint.h>

#include "../../kernels/cuda/sm90_ptx.cuh"
#include "../../kernels/cuda/wgmma_ops.cuh"

template <int TY>
struct Burn;
template <> struct Burn<0> {  // f16 x f16 -> f32
  using T = float;
  static constexpr int R = 128;
  __device__ __forceinline__ static void mma(T* d, uint64_t a, uint64_t b) { wgmma_n256_f32_f16<0>(d, a, b); }
};
template <> struct Burn<1> {  // bf16 x bf16 -> f32
  using T = float;
  static constexpr int R = 128;
  __device__ __forceinline__ static void mma(T* d, uint64_t a, uint64_t b) { wgmma_n256_f32_bf16<0>(d, a, b); }
};
template <> struct Burn<2> {  // f16 x f16 -> f16 (packed pairs)
  using T = uint32_t;
  static constexpr int R = 64;
  __device__ __forceinline__ static void mma(T* d, uint64_t a, uint64_t b) { wgmma_n256_f16_f16<0>(d, a, b); }
};

template <int TY>
__device__ __forceinline__ void ktile(typename Burn<TY>::T* acc, uint32_t sa, uint32_t sb) {
  sm90::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const uint64_t da = sm90::make_desc(sa + kk * 32, 16, 1024, 1);
    const uint64_t db = sm90::make_desc(sb + kk * 32, 16, 1024, 1);
    Burn<TY>::mma(acc, da, db);
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<1>();
}

__device__ __forceinline__ void spin_cycles(long long cycles) {
  const long long until = clock64() + cycles;
  while (clock64() < until) __nanosleep(100);
}

template <int TY>
__device__ __forceinline__ void burn(const uint4* src, unsigned long long* counts, float* sink,
                                     unsigned long long duration_ns, int duty_pct, int groups) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ unsigned long long t_start;
  __shared__ int stop;
  const uint32_t raw = sm90::smem_u32(smem_raw);
  const uint32_t pad = ((raw + 1023u) & ~1023u) - raw;
  uint4* s16 = reinterpret_cast<uint4*>(smem_raw + pad);
  for (int i = threadIdx.x; i < 3072; i += blockDim.x) s16[i] = src[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (threadIdx.x == 0) { t_start = sm90::globaltimer_ns(); stop = 0; }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const uint32_t sb = raw + pad;
  const uint32_t sa = sb + 32768 + wg * 8192;
  using T = typename Burn<TY>::T;
  T acc[Burn<TY>::R];
#pragma unroll
  for (int i = 0; i < Burn<TY>::R; ++i) acc[i] = T(0);
  unsigned long long issued = 0;
  T keep = T(0);
#pragma unroll 1
  while (true) {
    const long long c0 = clock64();
#pragma unroll 1
    for (int g = 0; g < groups; ++g) ktile<TY>(acc, sa, sb);
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < Burn<TY>::R; ++i) sm90::fence_operand(acc[i]);
    keep = keep + acc[0] + acc[Burn<TY>::R - 1];
#pragma unroll
    for (int i = 0; i < Burn<TY>::R; ++i) acc[i] = T(0);
    issued += 4ull * groups;
    if (duty_pct < 100) {  // warp-uniform idle time (lane 0's busy time), reconverged after
      const long long busy = __shfl_sync(0xffffffffu, clock64() - c0, 0);
      spin_cycles(busy * (100 - duty_pct) / duty_pct);
      __syncwarp();
    }
    if (threadIdx.x == 0 && sm90::globaltimer_ns() - t_start >= duration_ns) stop = 1;
    __syncthreads();
    if (stop) break;
    __syncthreads();
  }
  if (threadIdx.x % 128 == 0) atomicAdd(&counts[blockIdx.x], issued);
  if (keep == T(12345)) sink[threadIdx.x] = float(keep);  // keep the wgmmas live
}

#define POWER_WGMMA_KERNEL(NAME, TY)                                                          \
  extern "C" __global__ void __launch_bounds__(256, 1)                                        \
      NAME(const uint4* src, unsigned long long* counts, float* sink,                          \
           unsigned long long duration_ns, int duty_pct, int groups) {                         \
    burn<TY>(src, counts, sink, duration_ns, duty_pct, groups);                                \
  }

POWER_WGMMA_KERNEL(wgburn_f16f32, 0)
POWER_WGMMA_KERNEL(wgburn_bf16f32, 1)
POWER_WGMMA_KERNEL(wgburn_f16f16, 2)
