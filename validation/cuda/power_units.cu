// Power microbenchmarks for the units other than the tensor pipe (sm_90a). See
// validation/power/benches.py. Every kernel runs until `duration_ns` of globaltimer have passed
// (each thread checks every few iterations) and adds its event count to counts[0]:
//   bulk_l2   one thread per CTA issues 6 x 16 KB cp.async.bulk (the TMA engine, no tensor map)
//             from an L2-resident buffer into shared memory, completing on one mbarrier; then
//             idles busy*(100-duty)/duty cycles. Event = byte landed in shared memory.
//   hbm_read  grid-stride 16-B loads over a buffer much larger than L2. Event = byte read.
//   hbm_copy  grid-stride 16-B load + store, src -> dst. Event = byte read or written.
//   smem_ld   conflict-free 32-bit ld.shared (lane i reads word i of a row): one wavefront per
//             warp instruction. Event = warp-level instruction (= wavefront).
//   smem_st   the same with st.shared.
//   alu_fma   8 independent FFMA chains per thread. Event = thread-level FMA.
#include <stdint.h>

#include "../../kernels/cuda/sm90_ptx.cuh"

__device__ __forceinline__ bool expired(unsigned long long t0, unsigned long long dur) {
  return sm90::globaltimer_ns() - t0 >= dur;
}

__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(bar)
      : "memory");
}

constexpr uint32_t BULK_CHUNK = 16384;
constexpr int BULK_N = 6;

extern "C" __global__ void __launch_bounds__(32, 1)
    bulk_l2(const uint8_t* buf, unsigned long long n_chunks, unsigned long long* counts,
            unsigned long long duration_ns, int duty_pct) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t bar_obj;
  if (threadIdx.x != 0) return;
  const uint32_t bar = sm90::smem_u32(&bar_obj);
  const uint32_t dst = sm90::smem_u32(smem_raw);
  sm90::mbar_init(bar, 1);
  sm90::fence_mbar_init();
  const unsigned long long t0 = sm90::globaltimer_ns();
  unsigned long long bytes = 0, chunk = blockIdx.x * 7ull;
  uint32_t parity = 0;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
    const long long c0 = clock64();
    sm90::mbar_arrive_expect_tx(bar, BULK_CHUNK * BULK_N);
#pragma unroll
    for (int i = 0; i < BULK_N; ++i) {
      bulk_g2s(dst + i * BULK_CHUNK, buf + (chunk % n_chunks) * BULK_CHUNK, BULK_CHUNK, bar);
      chunk += 1;
    }
    sm90::mbar_wait(bar, parity);
    parity ^= 1;
    bytes += BULK_CHUNK * BULK_N;
    if (duty_pct < 100) {
      const long long until = clock64() + (clock64() - c0) * (100 - duty_pct) / duty_pct;
      while (clock64() < until) __nanosleep(100);
    }
  }
  atomicAdd(counts, bytes);
}

extern "C" __global__ void hbm_read(const uint4* buf, unsigned long long n16, unsigned long long* counts,
                                    unsigned int* sink, unsigned long long duration_ns) {
  const unsigned long long t0 = sm90::globaltimer_ns();
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long loads = 0;
  uint32_t x = 0;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
#pragma unroll 4
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n16; i += stride) {
      const uint4 v = __ldcs(buf + i);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
      ++loads;
    }
  }
  atomicAdd(counts, loads * 16ull);
  if (x == 0x12345678u) sink[0] = x;
}

extern "C" __global__ void hbm_copy(const uint4* src, uint4* dst, unsigned long long n16,
                                    unsigned long long* counts, unsigned long long duration_ns) {
  const unsigned long long t0 = sm90::globaltimer_ns();
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long moved = 0;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
#pragma unroll 4
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n16; i += stride) {
      __stcs(dst + i, __ldcs(src + i));
      ++moved;
    }
  }
  atomicAdd(counts, moved * 32ull);
}

constexpr int SMEM_WORDS = 8192;  // 32 KB per CTA

extern "C" __global__ void smem_ld(unsigned long long* counts, unsigned int* sink, unsigned long long duration_ns) {
  __shared__ uint32_t s[SMEM_WORDS];
  for (int i = threadIdx.x; i < SMEM_WORDS; i += blockDim.x) s[i] = i * 2654435761u;
  __syncthreads();
  const unsigned long long t0 = sm90::globaltimer_ns();
  const uint32_t base = sm90::smem_u32(s);
  const uint32_t lane_off = 4 * threadIdx.x;
  uint32_t x = 0;
  unsigned long long instr = 0;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
#pragma unroll 1
    for (int r = 0; r < 16; ++r) {
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        uint32_t v;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(base + ((lane_off + j * 1024 + r * 4096) & (SMEM_WORDS * 4 - 1))));
        x ^= v;
      }
    }
    instr += 16 * 32;
  }
  if (threadIdx.x % 32 == 0) atomicAdd(counts, instr);
  if (x == 0x12345678u) sink[0] = x;
}

extern "C" __global__ void smem_st(unsigned long long* counts, unsigned int* sink, unsigned long long duration_ns) {
  __shared__ uint32_t s[SMEM_WORDS];
  const unsigned long long t0 = sm90::globaltimer_ns();
  const uint32_t base = sm90::smem_u32(s);
  const uint32_t lane_off = 4 * threadIdx.x;
  unsigned long long instr = 0;
  uint32_t v = threadIdx.x * 2654435761u;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
#pragma unroll 1
    for (int r = 0; r < 16; ++r) {
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(base + ((lane_off + j * 1024 + r * 4096) & (SMEM_WORDS * 4 - 1))), "r"(v)
                     : "memory");
        v = v * 1664525u + 1013904223u;
      }
    }
    instr += 16 * 32;
  }
  __syncthreads();
  if (threadIdx.x % 32 == 0) atomicAdd(counts, instr);
  if (s[threadIdx.x] == 0x12345678u) sink[0] = v;
}

extern "C" __global__ void alu_fma(unsigned long long* counts, float* sink, float x, float y,
                               unsigned long long duration_ns) {
  const unsigned long long t0 = sm90::globaltimer_ns();
  float a[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) a[j] = threadIdx.x * 1e-3f + j;
  unsigned long long n = 0;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
#pragma unroll 1
    for (int r = 0; r < 16; ++r) {
#pragma unroll
      for (int k = 0; k < 32; ++k) {
#pragma unroll
        for (int j = 0; j < 8; ++j) a[j] = fmaf(a[j], x, y);
      }
    }
    n += 16 * 32 * 8;
  }
  if (threadIdx.x % 32 == 0) atomicAdd(counts, n * 32ull);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += a[j];
  if (s == 12345.f) sink[threadIdx.x] = s;
}
