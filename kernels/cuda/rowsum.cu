// Row reduction y[r] = sum_c x[r, c] on float32: the CUDA twins of the row-wise portfolio's rowsum
// family (issue 15 item 3; points and launch shapes: validation/rowwise.py; runner: python3 -m
// validation.portfolio_runs --family rowsum; IR twins: kernels/rowwise). 256 threads per CTA,
// cols a multiple of 128 (float4 x 32 lanes), x row-major (rows x cols), 16-B aligned rows.
//
// rowsum_warp  one warp per row (grid = ceil(rows / 8)): lane l sums float4s l, l+32, ... of its
//              row in element order (s += v.x; s += v.y; s += v.z; s += v.w), not unrolled
//              (#pragma unroll 1: one ld.global.v4.f32 in flight per trip), then a bfly warp sum;
//              lane 0 stores y[row].
// rowsum_cta   one CTA per row (grid = rows): thread t sums float4s t, t+256, ... in the same
//              order, bfly per warp, red_sum[warp] in shared memory, __syncthreads, every warp
//              bfly-sums red_sum[0..7] (lanes >= 8 add 0); thread 0 stores y[row].
#include "rowwise.cuh"

extern "C" __global__ void __launch_bounds__(256) rowsum_warp(const float4* x, float* y, int rows,
                                                               int cols) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const float4* p = x + (size_t)row * (cols >> 2) + lane;
  const int trips = cols >> 7;
  float s = 0.f;
#pragma unroll 1
  for (int k = 0; k < trips; ++k, p += 32) {
    const float4 v = *p;
    s = s + v.x; s = s + v.y; s = s + v.z; s = s + v.w;
  }
  s = warp_sum(s);
  if (lane == 0) y[row] = s;
}

extern "C" __global__ void __launch_bounds__(256) rowsum_cta(const float4* x, float* y, int rows,
                                                              int cols) {
  __shared__ float red_sum[32];
  const int row = blockIdx.x;
  const int n4 = cols >> 2;
  const float4* xr = x + (size_t)row * n4;
  float s = 0.f;
#pragma unroll 1
  for (int i = threadIdx.x; i < n4; i += blockDim.x) {
    const float4 v = xr[i];
    s = s + v.x; s = s + v.y; s = s + v.z; s = s + v.w;
  }
  s = cta_combine<false>(s, red_sum, 0.f);
  if (threadIdx.x == 0) y[row] = s;
}
