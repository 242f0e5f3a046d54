// Row softmax y[r, :] = softmax(x[r, :]) on float32: the CUDA twins of the row-wise portfolio's
// softmax family (issue 15 item 3; points and launch shapes: validation/rowwise.py; runner:
// python3 -m validation.portfolio_runs --family softmax; IR twins: kernels/rowwise). 256 threads
// per CTA, cols a multiple of 128 (float4 x 32 lanes), x and y row-major (rows x cols).
//
// Numerically stable, three passes over the row (each a #pragma unroll 1 loop of one
// ld.global.v4.f32 per trip): m = max (fmaxf in element order); s = sum of ex2.approx((x - m) * L)
// with L = log2(e) in f32; r = rcp.approx(s); y = ex2.approx((x - m) * L) * r (st.global.v4.f32).
// softmax_warp  one warp per row (grid = ceil(rows / 8)): lane l handles float4s l, l+32, ...;
//               max and sum by bfly warp butterflies.
// softmax_cta   one CTA per row (grid = rows): thread t handles float4s t, t+256, ...; the max and
//               the sum each combine through their own shared array (red_max, red_sum) after a
//               __syncthreads (rowwise.cuh: cta_combine).
#include "rowwise.cuh"

#define LOG2E_F 1.44269504088896341f

template <bool kCta>
static __device__ __forceinline__ void softmax_row(const float4* xr, float4* yr, int first, int step,
                                                   int n4, float* red_max, float* red_sum) {
  float m = -__int_as_float(0x7f800000);
#pragma unroll 1
  for (int i = first; i < n4; i += step) {
    const float4 v = xr[i];
    m = fmaxf(m, v.x); m = fmaxf(m, v.y); m = fmaxf(m, v.z); m = fmaxf(m, v.w);
  }
  m = kCta ? cta_combine<true>(m, red_max, -__int_as_float(0x7f800000)) : warp_max(m);
  float s = 0.f;
#pragma unroll 1
  for (int i = first; i < n4; i += step) {
    const float4 v = xr[i];
    s = s + ex2_approx((v.x - m) * LOG2E_F); s = s + ex2_approx((v.y - m) * LOG2E_F);
    s = s + ex2_approx((v.z - m) * LOG2E_F); s = s + ex2_approx((v.w - m) * LOG2E_F);
  }
  s = kCta ? cta_combine<false>(s, red_sum, 0.f) : warp_sum(s);
  const float r = rcp_approx(s);
#pragma unroll 1
  for (int i = first; i < n4; i += step) {
    const float4 v = xr[i];
    yr[i] = make_float4(ex2_approx((v.x - m) * LOG2E_F) * r, ex2_approx((v.y - m) * LOG2E_F) * r,
                        ex2_approx((v.z - m) * LOG2E_F) * r, ex2_approx((v.w - m) * LOG2E_F) * r);
  }
}

extern "C" __global__ void __launch_bounds__(256) softmax_warp(const float4* x, float4* y, int rows,
                                                                int cols) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int n4 = cols >> 2;
  const size_t base = (size_t)row * n4;
  softmax_row<false>(x + base, y + base, threadIdx.x & 31, 32, n4, nullptr, nullptr);
}

extern "C" __global__ void __launch_bounds__(256) softmax_cta(const float4* x, float4* y, int rows,
                                                               int cols) {
  __shared__ float red_max[32], red_sum[32];
  const int n4 = cols >> 2;
  const size_t base = (size_t)blockIdx.x * n4;
  softmax_row<true>(x + base, y + base, threadIdx.x, blockDim.x, n4, red_max, red_sum);
}
