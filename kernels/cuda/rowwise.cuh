// Shared pieces of the row-wise portfolio twins (rowsum.cu, softmax.cu; IR twins: kernels/rowwise).
// Warp butterflies with shfl.sync.bfly (offsets 16, 8, 4, 2, 1; every lane ends with the warp's
// value), and ex2.approx.f32 / rcp.approx.f32 as inline PTX so the twins run exactly the
// instructions the IR names (exp2f / __fdividef would add range handling or other instructions).
#pragma once

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

static __device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

static __device__ __forceinline__ float ex2_approx(float a) {
  float d;
  asm("ex2.approx.f32 %0, %1;" : "=f"(d) : "f"(a));
  return d;
}

static __device__ __forceinline__ float rcp_approx(float a) {
  float d;
  asm("rcp.approx.f32 %0, %1;" : "=f"(d) : "f"(a));
  return d;
}

// The cta mapping's combine: lane 0 of each warp stores its warp's value in red[warp], one
// __syncthreads (bar.sync 0), then every warp reduces red[0..W-1] (lanes >= W: the identity), so
// every thread holds the CTA's value with no second barrier.
template <bool kMax>
static __device__ __forceinline__ float cta_combine(float v, float* red, float ident) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  v = lane < nwarps ? red[lane] : ident;
  return kMax ? warp_max(v) : warp_sum(v);
}
