// Copy b = a on float32: the CUDA twins of the memory-bound portfolio's copy family (issue 15
// item 3; points, launch shapes and the IR twins' contract: validation/portfolio.py; runner:
// python3 -m validation.portfolio_runs --family copy). 256 threads per CTA.
//
// copy_f32     one float per thread:   i = blockIdx.x*blockDim.x + threadIdx.x; if (i < n) b[i] = a[i]
//              grid = n / 256 CTAs.
// copy_f4      one float4 per thread (n4 = n / 4 vectors; 16-B ld/st.global.v4.f32), grid = n4 / 256.
// copy_f32_gs  grid-stride loop:       for (i = tid; i < n; i += gridDim.x*blockDim.x), not unrolled
//              (#pragma unroll 1: one load in flight per thread per trip), grid = 8 CTAs per SM.
// copy_f4_gs   the grid-stride loop over float4.
// Indices are 32-bit ints (n < 2^31 - grid threads); default ld.global / st.global (no cache hints).

extern "C" __global__ void __launch_bounds__(256) copy_f32(const float* a, float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}

extern "C" __global__ void __launch_bounds__(256) copy_f4(const float4* a, float4* b, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) b[i] = a[i];
}

extern "C" __global__ void __launch_bounds__(256) copy_f32_gs(const float* a, float* b,
                                                               int n) {
  const int stride = gridDim.x * blockDim.x;
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) b[i] = a[i];
}

extern "C" __global__ void __launch_bounds__(256) copy_f4_gs(const float4* a, float4* b,
                                                              int n4) {
  const int stride = gridDim.x * blockDim.x;
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) b[i] = a[i];
}
