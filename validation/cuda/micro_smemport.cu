// Shared-memory port contention (sm_90a): see validation/micro_smemport.py (record microbench__smemport).
// One kernel, smemport(src, map, rows_mask, roles, window, times, flag, box_w, box_r), 384 threads, 1 CTA per SM:
//   warps 0-3  wgmma warpgroup 0 (role bit 0)   m64n256k16 f16 -> f32, SS (A and B in smem, 128B swizzle)
//   warps 4-7  wgmma warpgroup 1 (role bit 1)   same, its own A tile, the same B tile
//   warp  8    TMA fill stream, lane 0 (bit 2)   16 KB boxes (128 B x 128 rows) of an L2-resident map
//                                                into a ring of RING slots (one mbarrier each)
//   warps 9-11 LSU stream (bits 3/4/5: ld.shared.v4 / st.shared.v4 / stmatrix.x4), 8 independent
//              512-B warp instructions per round, conflict-free (4 wavefronts each)
// Every active role starts at the same clock64 t0 and repeats its unit until clock64 - t0 >= window;
// slot s of the CTA (s = 0 wg0, 1 wg1, 2 tma, 3..5 lsu warps) gets times[16 b + 2 s] = units done,
// times[16 b + 2 s + 1] = cycles from t0 until its last unit had completed.
// Units: wgmma = one m64n256k16 (A 2 KB + B 8 KB read); TMA = one 16 KB box landed; LSU = one warp
// instruction (512 B).
#include <cuda.h>
#include <stdint.h>

#include "../../kernels/cuda/sm90_ptx.cuh"  // the GEMM's PTX helpers
#include "micro_mma.cuh"                      // Mma<N, TY, RS>: the wgmma wrappers of kernels/cuda/wgmma_ops.cuh

#define SP_RING 6
#define SP_BOX 16384
#define SP_A 8192    // one warpgroup's A tile: 64 rows x 64 f16 (K-major, 128B swizzle)
#define SP_B 32768   // the B tile: 256 rows x 64 f16
#define SP_LSU 4096  // one LSU warp's region
#define SP_SLOTS 16

__device__ __forceinline__ void sp_ld_v4(uint32_t addr, uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr) : "memory");
}
__device__ __forceinline__ void sp_st_v4(uint32_t addr, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// The warpgroup's stop decision must be uniform (wgmma is warpgroup-collective): its thread 0 reads
// the clock, a named barrier (1 + wg, 128 threads) publishes it; double-buffered by round parity.
__device__ __forceinline__ void sp_wgmma(int wg, volatile int* stop, uint32_t a_base, uint32_t b_base, long long t0,
                                         long long window, long long* slot) {
  using M = Mma<256, 0, 0>;
  float acc[M::R];
#pragma unroll
  for (int v = 0; v < M::R; ++v) acc[v] = 0.f;
  const uint64_t da = sm90::make_desc(a_base, 16, 1024, 1);
  const uint64_t db = sm90::make_desc(b_base, 16, 1024, 1);
  long long n = 0;
#pragma unroll 1
  for (int it = 0;; ++it) {
    if ((threadIdx.x & 127) == 0) stop[it & 1] = (clock64() - t0 >= window);
    asm volatile("bar.sync %0, 128;" ::"r"(1 + wg) : "memory");
    if (stop[it & 1]) break;
    sm90::wgmma_fence();
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int k = 0; k < 4; ++k) M::run(acc, da + 2 * k, nullptr, db + 2 * k);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
    n += 16;
  }
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int v = 0; v < M::R; ++v) s += acc[v];
  if ((threadIdx.x & 127) == 0) {
    slot[0] = n;
    slot[1] = t1 - t0;
  }
  if (s == 12345.678f) slot[0] = -1;  // keep the accumulators live
}

// One ring slot (16 KB: 64 f16 x 128 rows of the map) is filled by (64 / box_w) x (128 / box_r) boxes
// of box_w elements x box_r rows under the slot's one mbarrier (box 64 x 128: one box, as the record
// microbench__smemport measured; narrower/shorter boxes: the same bytes in more box rows).
__device__ __forceinline__ void sp_tma(uint32_t ring, uint64_t* bars, const CUtensorMap* map, int rows_mask,
                                       long long t0, long long window, long long* slot, int* flag, int box_w,
                                       int box_r) {
  const int ncol = 64 / box_w, nrow = 128 / box_r;
  const uint32_t box_bytes = static_cast<uint32_t>(2 * box_w * box_r);
  long long n = 0;
  const int row0 = static_cast<int>(blockIdx.x) * 128 * 37;
#pragma unroll 1
  while (clock64() - t0 < window) {
    const int s = static_cast<int>(n % SP_RING);
    const uint32_t bar = sm90::smem_u32(&bars[s]);
    if (n >= SP_RING) {
      const long long w0 = clock64();
      while (!sm90::mbar_try_wait(bar, static_cast<uint32_t>((n / SP_RING - 1) & 1))) {
        if (clock64() - w0 > (1ll << 30)) { atomicExch(flag, 1); return; }
      }
    }
    sm90::mbar_arrive_expect_tx(bar, SP_BOX);
#pragma unroll 1
    for (int ri = 0; ri < nrow; ++ri)
#pragma unroll 1
      for (int cj = 0; cj < ncol; ++cj)
        sm90::tma_load_2d(ring + s * SP_BOX + (ri * ncol + cj) * box_bytes, map, cj * box_w,
                          static_cast<int>((row0 + n * 128 + ri * box_r) & rows_mask), bar);
    ++n;
  }
  for (long long j = (n > SP_RING ? n - SP_RING : 0); j < n; ++j) {  // drain: every issued box has landed
    const uint32_t bar = sm90::smem_u32(&bars[j % SP_RING]);
    const long long w0 = clock64();
    while (!sm90::mbar_try_wait(bar, static_cast<uint32_t>((j / SP_RING) & 1))) {
      if (clock64() - w0 > (1ll << 30)) { atomicExch(flag, 1); return; }
    }
  }
  slot[0] = n;
  slot[1] = clock64() - t0;
}

__device__ __forceinline__ void sp_lsu(int kind, uint32_t region, long long t0, long long window, long long* slot) {
  const int lane = threadIdx.x & 31;
  uint32_t x0 = lane, x1 = 1, x2 = 2, x3 = 3;
  long long n = 0;
  const uint32_t mine = region + lane * 16;
#pragma unroll 1
  while (__shfl_sync(0xffffffffu, static_cast<int>(clock64() - t0 >= window), 0) == 0) {  // warp-uniform
    if (kind == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        uint32_t a, b, c, d;
        sp_ld_v4(mine + i * 512, a, b, c, d);
        x0 ^= a; x1 ^= b; x2 ^= c; x3 ^= d;
      }
    } else if (kind == 1) {
#pragma unroll
      for (int i = 0; i < 8; ++i) sp_st_v4(mine + i * 512, x0 + i, x1, x2, x3);
      x0 += 8;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) sm90::stmatrix_x4(mine + i * 512, x0 + i, x1, x2, x3);
      x0 += 8;
    }
    n += 8;
  }
  if (kind == 0) {  // the loads must have returned: use them
    asm volatile("" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3));
    if ((x0 ^ x1 ^ x2 ^ x3) == 0xdeadbeefu) n = -n;
  }
  __syncwarp();
  const long long t1 = clock64();
  if (lane == 0) {
    slot[0] = n;
    slot[1] = t1 - t0;
  }
}

extern "C" __global__ void __launch_bounds__(384, 1)
    smemport(const uint4* __restrict__ src, const __grid_constant__ CUtensorMap map, int rows_mask, int roles,
             long long window, long long* __restrict__ times, int* __restrict__ flag, int box_w, int box_r) {
  extern __shared__ __align__(16) uint8_t sp_smem[];
  __shared__ __align__(8) uint64_t bars[SP_RING];
  __shared__ long long start;
  __shared__ int stop[2][2];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(sp_smem));
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* sp = sp_smem + (base - raw);
  const uint32_t a0 = base, a1 = base + SP_A, b = base + 2 * SP_A;
  const uint32_t ring = b + SP_B;
  const uint32_t lsu = ring + SP_RING * SP_BOX;
  const int tid = threadIdx.x, warp = tid >> 5;
  for (int i = tid; i < (2 * SP_A + SP_B) / 16; i += blockDim.x) reinterpret_cast<uint4*>(sp)[i] = src[i];
  for (int i = tid; i < 3 * SP_LSU / 16; i += blockDim.x)
    reinterpret_cast<uint4*>(sp + (lsu - base))[i] = make_uint4(i, 2 * i, 3 * i, 4 * i);
  if (tid == 0) {
    for (int s = 0; s < SP_RING; ++s) sm90::mbar_init(sm90::smem_u32(&bars[s]), 1);
    sm90::fence_mbar_init();
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (tid == 0) start = clock64() + 2000;  // every role starts its clock at the same t0
  __syncthreads();
  const long long t0 = start;
  long long* slots = times + SP_SLOTS * blockIdx.x;
  while (clock64() < t0) {}
  if (warp < 8) {
    const int wg = warp >> 2;
    if (roles & (1 << wg)) sp_wgmma(wg, stop[wg], wg ? a1 : a0, b, t0, window, slots + 2 * wg);
  } else if (warp == 8) {
    if ((roles & 4) && tid == 256) sp_tma(ring, bars, &map, rows_mask, t0, window, slots + 4, flag, box_w, box_r);
  } else {
    const int kind = (roles & 8) ? 0 : (roles & 16) ? 1 : (roles & 32) ? 2 : -1;
    if (kind >= 0) sp_lsu(kind, lsu + (warp - 9) * SP_LSU, t0, window, slots + 2 * (warp - 6));
  }
}
