// TMA copy out = in of a row-major rows x cols f16/f32 tensor: the CUDA twin of the memory-bound
// portfolio's tmacopy family (issue 15 item 3; IR twin and its contract: kernels/membound/tmacopy.py;
// points and runner: validation/portfolio_tmacopy.py, python3 -m validation.portfolio_runs
// --family tmacopy). One warp (32 threads) per CTA; thread 0 issues every TMA (predicated inline
// PTX, so the warp never diverges); every thread waits on the mbarriers and runs the loop.
//
// tmap_in / tmap_out: cuTensorMapEncodeTiled maps of the two buffers, dims {cols, rows}, box
// {box_cols, box_rows}, the same swizzle, L2 promotion 256B (validation/portfolio_tmacopy.py).
// Tile t (row-major over the tile grid): coordinates {(t % tiles_c) * box_cols, (t / tiles_c) * box_rows}.
// CTA b = blockIdx.y * gridDim.x + blockIdx.x copies tiles b, b + G, ... < tiles, G = gridDim.x *
// gridDim.y: grid (tiles_c, tiles_r) = one CTA per tile, or (ctas, 1) persistent CTAs.
// Shared memory: full[MAX_STAGES] mbarriers (static; ptxas pads the static segment to the 1024-B
// alignment of the dynamic array) + `stages` stages of `stage_bytes` (the box footprint rounded up
// to 1024 B) dynamic.
//
//   prologue  loads j = 0 .. stages-1 (arrive.expect_tx(box_bytes) + TMA load into stage j)
//   tile k    wait full[k % S] (parity (k / S) & 1); fence.proxy.async.shared::cta; TMA store of
//             the stage (bulk_group); commit;
//             refill: load j = k + D into stage j % S when that tile exists and k >= L, after
//             cp.async.bulk.wait_group.read L (the store that read that stage is done reading);
//             L = 1, D = S - 1 for S >= 2; L = 0, D = 1 for S = 1
//   end       cp.async.bulk.wait_group 0
// Proxies: fence.mbarrier_init publishes the generic mbarrier.init to the async proxy; every thread
// issues fence.proxy.async.shared::cta between the mbarrier wait and the TMA store (as CUTLASS's
// tma_store_fence() before a TMA store), not relying on the wait alone to order the loaded box for
// the store's async-proxy read (kernels/membound/tmacopy.py says why).

#include <stdint.h>

#include "sm90_ptx.cuh"

#define TMACOPY_MAX_STAGES 8

struct alignas(64) TmaDesc {
  uint64_t opaque[16];
};

__device__ __forceinline__ void tma_store_2d_if(uint32_t pred, const void* tmap, int32_t c0,
                                                int32_t c1, uint32_t src) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %0, 0;\n"
      "@p cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%1, {%2, %3}], [%4];\n}\n" ::"r"(
          pred),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c0), "r"(c1), "r"(src)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

struct Tiling {
  int tiles_c, box_rows, box_cols;
  __device__ __forceinline__ void coords(int t, int32_t& c0, int32_t& c1) const {
    const int tr = t / tiles_c;
    c0 = (t - tr * tiles_c) * box_cols;
    c1 = tr * box_rows;
  }
};

extern "C" __global__ void __launch_bounds__(32)
    tmacopy(const __grid_constant__ TmaDesc tmap_in, const __grid_constant__ TmaDesc tmap_out,
            int tiles, int tiles_c, int box_rows, int box_cols, int stages, int stage_bytes,
            int box_bytes) {
  __shared__ __align__(8) uint64_t full[TMACOPY_MAX_STAGES];
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t issuer = threadIdx.x == 0;
  const uint32_t sbase = sm90::smem_u32(smem), fbase = sm90::smem_u32(full);
  const Tiling tl{tiles_c, box_rows, box_cols};
  if (issuer) {
    for (int s = 0; s < stages; ++s) sm90::mbar_init(fbase + 8 * s, 1);
    sm90::fence_mbar_init();
  }
  __syncthreads();
  const int t0 = blockIdx.y * gridDim.x + blockIdx.x, stride = gridDim.x * gridDim.y;
  if (t0 >= tiles) return;
  auto load = [&](int t, int s) {
    int32_t c0, c1;
    tl.coords(t, c0, c1);
    sm90::mbar_arrive_expect_tx_if(issuer, fbase + 8 * s, box_bytes);
    sm90::tma_load_2d_if(issuer, sbase + s * stage_bytes, &tmap_in, c0, c1, fbase + 8 * s);
  };
  for (int j = 0; j < stages; ++j) {
    const int t = t0 + j * stride;
    if (t >= tiles) break;
    load(t, j);
  }
  const int lag = stages >= 2 ? 1 : 0, dist = stages >= 2 ? stages - 1 : 1;
  int s = 0, prev = 0, k = 0;
  uint32_t ph = 0;
  for (int t = t0; t < tiles; t += stride, ++k) {
    sm90::mbar_wait(fbase + 8 * s, ph);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    int32_t c0, c1;
    tl.coords(t, c0, c1);
    tma_store_2d_if(issuer, &tmap_out, c0, c1, sbase + s * stage_bytes);
    bulk_commit();
    const int tj = t + dist * stride;
    if (tj < tiles && k >= lag) {
      if (lag) {
        bulk_wait_read<1>();
        load(tj, prev);
      } else {
        bulk_wait_read<0>();
        load(tj, s);
      }
    }
    prev = s;
    if (++s == stages) {
      s = 0;
      ph ^= 1;
    }
  }
  bulk_wait<0>();
}
