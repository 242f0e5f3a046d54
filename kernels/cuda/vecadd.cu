// Vector add c = a + b on float32: the CUDA twins of the memory-bound portfolio's vecadd family
// (issue 15 item 3; points, launch shapes and the IR twins' contract: validation/portfolio.py;
// runner: python3 -m validation.portfolio_runs --family vecadd). 256 threads per CTA.
//
// vecadd_f32     one float per thread:   i = blockIdx.x*blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]
//                grid = n / 256 CTAs.
// vecadd_f4      one float4 per thread:  the same over float4 (n4 = n / 4 vectors; 16-B ld/st.global.v4.f32),
//                grid = n4 / 256 CTAs.
// vecadd_f32_gs  grid-stride loop:       for (i = tid; i < n; i += gridDim.x*blockDim.x), not unrolled
//                (#pragma unroll 1: one load pair in flight per thread per trip), grid = 8 CTAs per SM.
// vecadd_f4_gs   the grid-stride loop over float4.
// Indices are 32-bit ints (n < 2^31 - grid threads); loads and stores are the default ld.global /
// st.global (no cache hints); a[i] and b[i] are loaded before the add (two loads in flight).

extern "C" __global__ void __launch_bounds__(256) vecadd_f32(const float* a, const float* b,
                                                              float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void __launch_bounds__(256) vecadd_f4(const float4* a, const float4* b,
                                                             float4* c, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

extern "C" __global__ void __launch_bounds__(256) vecadd_f32_gs(const float* a,
                                                                 const float* b, float* c,
                                                                 int n) {
  const int stride = gridDim.x * blockDim.x;
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = a[i] + b[i];
}

extern "C" __global__ void __launch_bounds__(256) vecadd_f4_gs(const float4* a,
                                                                const float4* b, float4* c,
                                                                int n4) {
  const int stride = gridDim.x * blockDim.x;
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}
