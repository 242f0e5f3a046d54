// Memory-hierarchy and launch microbenchmarks (sm_90a; plain sm_90 instructions).
//
// smem_chase   one warp; smem (32 KB, u32 words) is loaded from `init`, whose words hold absolute
//              shared addresses (the host adds the base it reads from smem_base). Every lane starts
//              at start[lane] (a byte offset) and follows `p = ld.shared.u32 [p]` `steps` times;
//              no ALU between loads, so cycles/steps = load-to-use latency of that warp pattern.
//              Lanes >= active stay idle. out = {cycles, smem base}.
// gchase       one thread follows p = ld.global.{cg|ca}.u64 [p] `steps` times after `warm` untimed
//              steps (continuing the same chain); the buffer's lines hold the address of the next
//              line. out = {cycles, ns, final p}.
// gread        every thread reads int4 words with a grid stride, `rounds` times over the buffer
//              (rounds > 1 re-reads a buffer that fits in L2), XOR-folds them and writes one word;
//              thread 0 of every CTA records clock64 / globaltimer at start and end.
// empty_kernel nothing; stamp_kernel: thread 0 records %globaltimer, %smid at start.
#include <stdint.h>

__device__ __forceinline__ uint64_t mm_gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void __launch_bounds__(32, 1)
    smem_chase(const uint32_t* __restrict__ init, const uint32_t* __restrict__ start, int active, int steps,
               long long* __restrict__ out, uint32_t* __restrict__ sink) {
  __shared__ __align__(16) uint32_t s[8192];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(s));
  for (int i = threadIdx.x; i < 8192; i += 32) s[i] = init[i] + base;
  __syncwarp();
  const int lane = threadIdx.x;
  uint32_t p = base + start[lane];
  if (lane < active) {
    // warm-up pass (same chain) then the timed one
    for (int i = 0; i < 32; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p)::"memory");
  }
  __syncwarp();
  long long t0 = clock64();
  if (lane < active) {
#pragma unroll 16
    for (int i = 0; i < steps; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p)::"memory");
  }
  __syncwarp();
  long long t1 = clock64();
  sink[lane] = p;
  if (lane == 0) {
    out[0] = t1 - t0;
    out[1] = base;
  }
}

extern "C" __global__ void __launch_bounds__(32, 1)
    gchase(const unsigned long long* __restrict__ first, int cg, int warm, int steps, long long* __restrict__ out) {
  if (threadIdx.x != 0) return;
  unsigned long long p = first[0];
  if (cg) {
    for (int i = 0; i < warm; ++i) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p)::"memory");
  } else {
    for (int i = 0; i < warm; ++i) asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p)::"memory");
  }
  const uint64_t g0 = mm_gtimer();
  const long long t0 = clock64();
  if (cg) {
#pragma unroll 8
    for (int i = 0; i < steps; ++i) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p)::"memory");
  } else {
#pragma unroll 8
    for (int i = 0; i < steps; ++i) asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p)::"memory");
  }
  const long long t1 = clock64();
  const uint64_t g1 = mm_gtimer();
  out[0] = t1 - t0;
  out[1] = static_cast<long long>(g1 - g0);
  out[2] = static_cast<long long>(p);
}

extern "C" __global__ void __launch_bounds__(512)
    gread(const int4* __restrict__ buf, long long n16, int rounds, int* __restrict__ sink,
          long long* __restrict__ times) {
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t0 = clock64();
  const uint64_t g0 = mm_gtimer();
  int x = 0;
  for (int r = 0; r < rounds; ++r) {
    long long i = tid;
    for (; i + 3 * stride < n16; i += 4 * stride) {
      const int4 a = __ldcg(buf + i), b = __ldcg(buf + i + stride), c = __ldcg(buf + i + 2 * stride),
                 d = __ldcg(buf + i + 3 * stride);
      x ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
      const int4 a = __ldcg(buf + i);
      x ^= a.x ^ a.y ^ a.z ^ a.w;
    }
  }
  sink[tid] = x;
  __syncthreads();
  if (threadIdx.x == 0) {
    times[4 * blockIdx.x + 0] = t0;
    times[4 * blockIdx.x + 1] = clock64();
    times[4 * blockIdx.x + 2] = static_cast<long long>(g0);
    times[4 * blockIdx.x + 3] = static_cast<long long>(mm_gtimer());
  }
}

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void stamp_kernel(long long* __restrict__ out) {
  if (threadIdx.x == 0) {
    uint32_t smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    out[2 * blockIdx.x] = static_cast<long long>(mm_gtimer());
    out[2 * blockIdx.x + 1] = smid;
  }
}
