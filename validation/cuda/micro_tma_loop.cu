// The persistent tmacopy loop, instrumented per tile with clock64 (sm_90a): where does each tile's
// time go (load issue -> load landed -> fence + TMA store issued -> wait_group.read done)? Driver,
// sweep and record: validation/micro_tma_loop.py (issue 15, tmacopy; the per-tile cost the store
// mechanism of microbench__tma_store leaves unexplained).
//
// tma_loop is kernels/cuda/tmacopy.cu's persistent loop (same PTX helpers, same prologue, same
// refill rule: lag L = 1 and distance D = S - 1 for S >= 2 stages, L = 0 and D = 1 for S = 1, the
// same fence.proxy.async.shared::cta before each store, commit and wait_group.read by every thread,
// stages of the box footprint rounded up to 1024 B) with three differences:
//   * tile order: worker w's k-th tile is i = w + k * workers (tmacopy's t0 + k * stride) mapped to
//     the tile p = (i * mult) mod tiles (tiles a power of two): mult = 1 is tmacopy's row-major
//     walk, a large odd mult spreads consecutive tiles over the whole map (every load a fresh line);
//   * workers: thread 0 takes a ticket (atomicAdd); with one_sm only the CTAs that run on SM 0 work
//     (the others return at once), so 1, 2 or 4 co-resident CTAs of one SM run alone; the host
//     pins the CTAs per SM with the dynamic shared memory it asks for;
//   * mode 0 = tmacopy; mode 1 = load only (no fence, store, commit or wait_group.read: the refill
//     follows the mbarrier wait with the same lag and distance); mode 2 = no fence (the store
//     follows the mbarrier wait directly).
// Thread 0 stamps clock64 into shared memory (rec, 4 x int64 per tile, after the stages): [0] the
// tile's load issued (prologue or refill), [1] its mbarrier wait returned, [2] its store and commit
// issued, [3] the wait_group.read of its iteration returned (lag 1: the previous tile's store has
// read its stage); mode 1 stamps [2] and [3] back to back. At the end it copies them to
// out[w * (8 + 4 * ntiles) + 8 ...] after a header {smid, clock64 start, clock64 end (after
// wait_group 0), globaltimer start, globaltimer end, blockIdx.x, tiles done, 0}.
#include <stdint.h>

#include "../../kernels/cuda/sm90_ptx.cuh"  // tmacopy's own PTX helpers: the same instructions

#define LOOP_MAX_STAGES 8

struct alignas(64) TmaDesc {
  uint64_t opaque[16];
};

__device__ __forceinline__ void store_2d_if(uint32_t pred, const void* tmap, int32_t c0, int32_t c1, uint32_t src) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %0, 0;\n"
      "@p cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%1, {%2, %3}], [%4];\n}\n" ::"r"(pred),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(src)
      : "memory");
}
__device__ __forceinline__ uint32_t smid() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}
__device__ __forceinline__ long long clk() { return clock64(); }

struct Walk {
  int workers, tiles_c, box_rows, box_cols;
  uint32_t mult, mask;
  __device__ __forceinline__ void coords(int w, int k, int32_t& c0, int32_t& c1) const {
    const uint32_t p = (static_cast<uint32_t>(w + k * workers) * mult) & mask;
    const int tr = static_cast<int>(p) / tiles_c;
    c0 = (static_cast<int>(p) - tr * tiles_c) * box_cols;
    c1 = tr * box_rows;
  }
};

extern "C" __global__ void __launch_bounds__(32)
    tma_loop(const __grid_constant__ TmaDesc tmap_in, const __grid_constant__ TmaDesc tmap_out, int mode,
             int ntiles, int workers, int one_sm, int tiles_c, int tiles_mask, unsigned mult, int box_rows,
             int box_cols, int stages, int stage_bytes, int box_bytes, unsigned* __restrict__ ticket,
             long long* __restrict__ out) {
  __shared__ __align__(8) uint64_t full[LOOP_MAX_STAGES];
  extern __shared__ __align__(1024) uint8_t smem[];
  const long long c_start = clk();
  const uint64_t g_start = sm90::globaltimer_ns();
  if (one_sm && smid() != 0) return;
  const uint32_t issuer = threadIdx.x == 0;
  unsigned w = 0;
  if (issuer) w = atomicAdd(ticket, 1u);
  w = __shfl_sync(0xffffffffu, w, 0);
  if (w >= static_cast<unsigned>(workers)) return;
  const uint32_t sbase = sm90::smem_u32(smem), fbase = sm90::smem_u32(full);
  long long* rec = reinterpret_cast<long long*>(smem + stages * stage_bytes);
  const Walk wk{workers, tiles_c, box_rows, box_cols, mult, static_cast<uint32_t>(tiles_mask)};
  if (issuer) {
    for (int s = 0; s < stages; ++s) sm90::mbar_init(fbase + 8 * s, 1);
    sm90::fence_mbar_init();
  }
  __syncwarp();
  auto load = [&](int k, int s) {
    int32_t c0, c1;
    wk.coords(static_cast<int>(w), k, c0, c1);
    sm90::mbar_arrive_expect_tx_if(issuer, fbase + 8 * s, box_bytes);
    sm90::tma_load_2d_if(issuer, sbase + s * stage_bytes, &tmap_in, c0, c1, fbase + 8 * s);
    if (issuer) rec[4 * k] = clk();
  };
  for (int j = 0; j < stages && j < ntiles; ++j) load(j, j);
  const int lag = stages >= 2 ? 1 : 0, dist = stages >= 2 ? stages - 1 : 1;
  int s = 0, prev = 0;
  uint32_t ph = 0;
  for (int k = 0; k < ntiles; ++k) {
    sm90::mbar_wait(fbase + 8 * s, ph);
    if (issuer) rec[4 * k + 1] = clk();
    const int kj = k + dist;
    if (mode == 1) {
      if (issuer) rec[4 * k + 2] = clk();
      if (issuer) rec[4 * k + 3] = clk();
      if (kj < ntiles && k >= lag) load(kj, lag ? prev : s);
    } else {
      if (mode == 0) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      int32_t c0, c1;
      wk.coords(static_cast<int>(w), k, c0, c1);
      store_2d_if(issuer, &tmap_out, c0, c1, sbase + s * stage_bytes);
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      if (issuer) rec[4 * k + 2] = clk();
      if (kj < ntiles && k >= lag) {
        if (lag) {
          asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
          if (issuer) rec[4 * k + 3] = clk();
          load(kj, prev);
        } else {
          asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
          if (issuer) rec[4 * k + 3] = clk();
          load(kj, s);
        }
      } else if (issuer) {
        rec[4 * k + 3] = clk();
      }
    }
    prev = s;
    if (++s == stages) {
      s = 0;
      ph ^= 1;
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  const long long c_end = clk();
  const uint64_t g_end = sm90::globaltimer_ns();
  if (issuer) {
    long long* o = out + static_cast<long long>(w) * (8 + 4 * ntiles);
    o[0] = smid();
    o[1] = c_start;
    o[2] = c_end;
    o[3] = static_cast<long long>(g_start);
    o[4] = static_cast<long long>(g_end);
    o[5] = blockIdx.x;
    o[6] = ntiles;
    o[7] = 0;
    for (int i = 0; i < 4 * ntiles; ++i) o[8 + i] = rec[i];
  }
}
