// Launch, wave-tail and L2-state microbenchmarks (validation/micro_launch2.py; issue 14 item 3,
// issue 15 small sizes). Compiled with validation/micro_runner.NVCC (sm_90a).
//
// ml_empty   nothing (launch overhead and per-CTA dispatch cost over grid x block).
// ml_spin    every thread spins until clock64 has advanced `spin` cycles since its CTA's thread 0
//            read it; thread 0 then writes its CTA's stamps when `stamps` is not null:
//            [smid, clock64 start, clock64 end, globaltimer start, globaltimer end, 0] (6 x int64).
//            Launched with dynamic shared memory to bound CTAs per SM (extern smem, not touched).
// ml_store   grid-stride st.global.v4.f32 of v over n4 float4 (#pragma unroll 1).
// ml_read    grid-stride ld.global.v4.f32 over n4 float4 summed per thread; the sum is stored only
//            if it equals a sentinel never produced by the data (keeps the loads alive).
// ml_copy    grid-stride b[i] = a[i] over n4 float4.
#include <stdint.h>

#include "mem_stream.cuh"  // ms_gtimer, ms_smid

extern "C" __global__ void ml_empty() {}

extern "C" __global__ void ml_spin(long long spin, long long* __restrict__ stamps) {
  extern __shared__ uint32_t ml_smem[];
  __shared__ long long t0s;
  const long long c0 = clock64();
  uint64_t g0 = 0;
  if (threadIdx.x == 0) {
    t0s = c0;
    g0 = ms_gtimer();
  }
  __syncthreads();
  const long long t0 = t0s;
  while (clock64() - t0 < spin) {
  }
  __syncthreads();
  if (threadIdx.x == 0 && stamps != nullptr) {
    const long long c1 = clock64();
    const uint64_t g1 = ms_gtimer();
    long long* o = stamps + 6 * static_cast<long long>(blockIdx.x);
    o[0] = ms_smid();
    o[1] = c0;
    o[2] = c1;
    o[3] = static_cast<long long>(g0);
    o[4] = static_cast<long long>(g1);
    o[5] = 0;
  }
  if (spin < 0) ml_smem[threadIdx.x] = 0;  // never: keeps the dynamic smem declaration
}

extern "C" __global__ void __launch_bounds__(256) ml_store(float4* __restrict__ dst, long long n4, float v) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const float4 x = make_float4(v, v, v, v);
#pragma unroll 1
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) dst[i] = x;
}

extern "C" __global__ void __launch_bounds__(256) ml_read(const float4* __restrict__ src, long long n4,
                                                         float* __restrict__ sink) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0.f;
#pragma unroll 1
  for (long long i = t; i < n4; i += stride) {
    const float4 x = src[i];
    acc += x.x + x.y + x.z + x.w;
  }
  if (acc == 1.2345678e30f) sink[t] = acc;
}

extern "C" __global__ void __launch_bounds__(256) ml_copy(const float4* __restrict__ a, float4* __restrict__ b,
                                                         long long n4) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
#pragma unroll 1
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) b[i] = a[i];
}
