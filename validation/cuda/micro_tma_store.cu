// TMA stores beside TMA loads on one SM (sm_90a): does a store's shared-memory read wait for
// loads issued before it (one in-order queue), and how long after its issue does a store report
// `.read` (cp.async.bulk.wait_group.read) and its write (cp.async.bulk.wait_group)?
// (issue 15, the tmacopy family; driver and record: validation/micro_tma_store.py)
//
// tma_store_probe: one thread per CTA; per round (after `warm` untimed rounds):
//   t0 = clock64
//   order 0: arrive.expect_tx(nl boxes) + nl TMA loads of map `lmap`, then ns TMA stores of
//            distinct smem slots to map `smap`, one bulk commit
//   order 1: the ns stores and their commit first, then the nl loads
//   t1 = clock64 (issue done); wait_group.read 0 -> t2; wait_group 0 -> t3; the loads' mbarrier
//   -> t4 (t4 = t3 when nl = 0).
// out[5 * (cta * rounds + q) + {0..4}] = t1 - t0, t2 - t0, t3 - t0, t4 - t0, %globaltimer ns of
// the round. Load boxes: pseudo-random row blocks (an odd-multiplier hash of the CTA and round)
// of a `lnrow` x `lncol` box grid (powers of two): from HBM when the map is far beyond L2. Store
// boxes: the CTA's own row block of `smap`, column chunk j. Nobody reads the data.
#include <cuda.h>
#include <stdint.h>

#define SPIN_LIMIT (1ll << 31)

__device__ __forceinline__ uint64_t gtimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ uint32_t s32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ bool wait_parity(uint32_t bar, uint32_t parity, int* flag) {
  const long long s = clock64();
  while (true) {
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    if (done) return true;
    if (clock64() - s > SPIN_LIMIT) {
      atomicExch(flag, 1);
      return false;
    }
  }
}

extern "C" __global__ void __launch_bounds__(32, 1)
    tma_store_probe(const __grid_constant__ CUtensorMap lmap, const __grid_constant__ CUtensorMap smap,
                    int lncol_log, int lnrow_mask, int w, int r, int nl, int ns, int order, int rounds,
                    int warm, int snrow, long long* __restrict__ out, int* __restrict__ flag) {
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar[1];
  const uint32_t base = (s32(smem) + 1023u) & ~1023u;
  const uint32_t box_bytes = 2u * w * r;
  if (threadIdx.x != 0) return;
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(s32(&bar[0])) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("prefetch.tensormap [%0];" ::"l"(&lmap) : "memory");
  asm volatile("prefetch.tensormap [%0];" ::"l"(&smap) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  const uint32_t b = s32(&bar[0]);
  const int lncol_mask = (1 << lncol_log) - 1;
  const int srow = (blockIdx.x % snrow) * r;
  uint32_t parity = 0;
  for (int q = -warm; q < rounds; ++q) {
    const uint32_t seed = (blockIdx.x * 4099u + (q + warm) * 131u) * 2654435761u;
    const long long t0 = clock64();
    if (order == 1 && ns > 0) {
      for (int j = 0; j < ns; ++j)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(&smap), "r"(j * w), "r"(srow), "r"(base + (nl + j) * box_bytes) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
    if (nl > 0) {
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(nl * box_bytes) : "memory");
      for (int j = 0; j < nl; ++j) {
        const uint32_t g = (seed >> 7) + j;
        const int c0 = (g & lncol_mask) * w, c1 = ((seed >> 13) + (g >> lncol_log)) & lnrow_mask;
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
            ::"r"(base + j * box_bytes), "l"(&lmap), "r"(c0), "r"(c1 * r), "r"(b) : "memory");
      }
    }
    if (order == 0 && ns > 0) {
      for (int j = 0; j < ns; ++j)
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     ::"l"(&smap), "r"(j * w), "r"(srow), "r"(base + (nl + j) * box_bytes) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
    const long long t1 = clock64();
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    const long long t2 = clock64();
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    const long long t3 = clock64();
    long long t4 = t3;
    if (nl > 0) {
      if (!wait_parity(b, parity, flag)) return;
      parity ^= 1;
      t4 = clock64();
    }
    if (q >= 0) {
      long long* o = out + 5 * (static_cast<long long>(blockIdx.x) * rounds + q);
      o[0] = t1 - t0;
      o[1] = t2 - t0;
      o[2] = t3 - t0;
      o[3] = t4 - t0;
      o[4] = static_cast<long long>(gtimer());
    }
  }
}
