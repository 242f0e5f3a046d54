// TMA + WGMMA GEMM family for sm_90a (H100), one kernel `gemm_sm90` configured by -D macros.
//
// Same knobs and meanings as kernels/params.py (GemmParams.cuda_defines() writes these macros;
// the Python side validates every combination and says why one is rejected):
//
//   GEMM_M, GEMM_N, GEMM_K   problem size (multiples of GEMM_BM, GEMM_BN, GEMM_BK: no tail code)
//   GEMM_DTYPE               0 = f16, 1 = bf16 (inputs and output C)
//   GEMM_ACCUM               0 = f32, 1 = f16 (f16 only with f16 inputs)
//   GEMM_LAYOUT              0 = tn: A MxK, B NxK, both K-major   C = A * B^T
//                            1 = nn: A MxK K-major, B KxN N-major  C = A * B (trans-b = 1)
//   GEMM_BM, GEMM_BN, GEMM_BK tile (BM, BN in {64,128,256}; BK = 64); wgmma m64nBNk16
//   GEMM_STAGES              shared-memory pipeline depth (1..8)
//   GEMM_SWIZZLE             32, 64 or 128 (bytes): TMA swizzle = wgmma layout; box width is
//                            SWIZZLE/2 elements
//   GEMM_BOX_ROWS_A/_B       TMA box rows (8 = many small boxes, = tile extent: one box per
//                            swizzle column per operand per stage)
//   GEMM_WS                  0 = single warpgroup (TMA issue by one elected thread after
//                            wgmma.wait_group 1), 1 = warp-specialized (producer warpgroup +
//                            GEMM_CONSUMERS consumer warpgroups, full/empty mbarriers, setmaxnreg)
//   GEMM_CONSUMERS           1 or 2 consumer warpgroups (2 split BM in halves)
//   GEMM_EPILOGUE            0 = direct (registers -> global, 4-byte stores),
//                            1 = stmatrix into a 128B-XOR-swizzled per-warp slab, then 16-byte
//                                coalesced stores
//   GEMM_RASTER              0 = row-major tile order, 1 = grouped (GEMM_GROUP M-tiles per group)
//   C is always MxN row-major. CTAs per SM is a host-side knob (extra dynamic shared memory).
//   GEMM_ELECT               0 = TMA copies issued by lane 0 (lane predicate; thread 0 alone in the
//                                ws producer), 1 = by the lane elect.sync elects (whole warp runs
//                                the load path; ptxas issues the copies on the uniform path)
//   GEMM_PROFILE             1 = a 4th argument receives per CTA {smid, clock64 start, end,
//                                globaltimer start, end} (validation/cycle_profile.py); default 0
//   GEMM_NO_MMA              1 = no wgmma.mma_async (a diagnostic build: the load pipeline, barriers
//                                and epilogue alone; C is wrong); default 0
//   GEMM_DIAG_NO_TMA         1 = the first S k-tiles are loaded, later k-tiles reuse those stages
//                                (no refill TMA, no full-barrier wait after the first S; C is wrong)
//   GEMM_DIAG_NO_FULL_WAIT   1 = no full-barrier wait before a k-tile's wgmmas: the same wait runs
//                                after they are issued (barrier phases stay valid; the wgmmas may
//                                read a stage before its TMA lands: a race tolerated for timing
//                                only; C is wrong)
//   GEMM_DIAG_NO_WAIT_GROUP  1 = no wgmma.wait_group inside the k-loop (the final one stays; the
//                                stage release races the wgmmas reading it; C is wrong)
//   GEMM_DIAG_NO_FENCE       1 = no wgmma.fence before each k-tile's wgmmas
//                            The GEMM_DIAG_* builds are validation/micro_single_loop.py's timing
//                            diagnostics (the single variant's per-k-tile cost taken apart); default 0
//                            each, which leaves the default build unchanged
//
// Shared memory (dynamic, base rounded up to 1024 B so every swizzle atom is aligned):
//   [A stage 0..S-1: BM x 64 each][B stage 0..S-1: BN x 64 each][epilogue slabs: 2 KB per warp]
// K-major operand stage (A, and B for tn), swizzle span SP bytes, W = SP/2 elements per row:
//   column chunk c (elements c*W .. c*W+W-1 of K) at c*ROWS*SP; row r of it at r*SP
//   -> each 8-row x SP atom is contiguous: wgmma K-major, SBO = 8*SP, LBO unused.
// N-major B stage (nn): N chunk j (W columns) at j*64*SP; K row k of it at k*SP
//   -> wgmma MN-major, LBO = 64*SP (next N chunk), SBO = 8*SP (next 8 K rows).
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include "sm90_ptx.cuh"
#ifndef GEMM_ELECT
#define GEMM_ELECT 0
#endif
#include "wgmma_ops.cuh"

#ifndef GEMM_M
#define GEMM_M 1024
#endif
#ifndef GEMM_N
#define GEMM_N 1024
#endif
#ifndef GEMM_K
#define GEMM_K 1024
#endif
#ifndef GEMM_DTYPE
#define GEMM_DTYPE 0
#endif
#ifndef GEMM_ACCUM
#define GEMM_ACCUM 0
#endif
#ifndef GEMM_LAYOUT
#define GEMM_LAYOUT 0
#endif
#ifndef GEMM_BM
#define GEMM_BM 128
#endif
#ifndef GEMM_BN
#define GEMM_BN 128
#endif
#ifndef GEMM_BK
#define GEMM_BK 64
#endif
#ifndef GEMM_STAGES
#define GEMM_STAGES 4
#endif
#ifndef GEMM_SWIZZLE
#define GEMM_SWIZZLE 128
#endif
#ifndef GEMM_BOX_ROWS_A
#define GEMM_BOX_ROWS_A GEMM_BM
#endif
#ifndef GEMM_BOX_ROWS_B
#if GEMM_LAYOUT == 0
#define GEMM_BOX_ROWS_B GEMM_BN
#else
#define GEMM_BOX_ROWS_B GEMM_BK
#endif
#endif
#ifndef GEMM_WS
#define GEMM_WS 0
#endif
#ifndef GEMM_CONSUMERS
#define GEMM_CONSUMERS 1
#endif
#ifndef GEMM_EPILOGUE
#define GEMM_EPILOGUE 0
#endif
#ifndef GEMM_RASTER
#define GEMM_RASTER 0
#endif
#ifndef GEMM_GROUP
#define GEMM_GROUP 8
#endif
#ifndef GEMM_PROFILE
#define GEMM_PROFILE 0   // 1: extra kernel argument, per-CTA clock64/%globaltimer/%smid record
#endif
#ifndef GEMM_NO_MMA
#define GEMM_NO_MMA 0    // 1: a diagnostic build without the wgmma.mma_async (validation/cycle_profile.py
                         //    --set nomma): the TMA/mbarrier pipeline and epilogue alone (wrong C)
#endif

#ifndef GEMM_DIAG_NO_TMA
#define GEMM_DIAG_NO_TMA 0
#endif
#ifndef GEMM_DIAG_NO_FULL_WAIT
#define GEMM_DIAG_NO_FULL_WAIT 0
#endif
#ifndef GEMM_DIAG_NO_WAIT_GROUP
#define GEMM_DIAG_NO_WAIT_GROUP 0
#endif
#ifndef GEMM_DIAG_NO_FENCE
#define GEMM_DIAG_NO_FENCE 0
#endif

#if GEMM_DTYPE == 0
typedef __half elem_t;
#else
typedef __nv_bfloat16 elem_t;
#endif

#if GEMM_ACCUM == 0
typedef float acc_t;
#else
typedef uint32_t acc_t;  // f16x2
#endif

namespace cfg {
constexpr int M = GEMM_M, N = GEMM_N, K = GEMM_K;
constexpr int BM = GEMM_BM, BN = GEMM_BN, BK = GEMM_BK, S = GEMM_STAGES;
constexpr int SP = GEMM_SWIZZLE;    // swizzle span in bytes
constexpr int W = SP / 2;           // box width in elements (16-bit types)
constexpr int RA = GEMM_BOX_ROWS_A, RB = GEMM_BOX_ROWS_B;
constexpr bool NN = GEMM_LAYOUT == 1;
constexpr bool WS = GEMM_WS == 1;
constexpr int NC = WS ? GEMM_CONSUMERS : 1;   // consumer warpgroups
constexpr int THREADS = 128 * (NC + (WS ? 1 : 0));
constexpr int MI = BM / 64 / NC;               // m64 wgmma rows per consumer warpgroup
constexpr int ACC_PER_M64 = GEMM_ACCUM == 0 ? BN / 2 : BN / 4;
constexpr int KT = K / BK;
constexpr int TILES_M = M / BM, TILES_N = N / BN;
constexpr uint32_t A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;
constexpr uint32_t TX_BYTES = A_STAGE + B_STAGE;
constexpr uint32_t LAYOUT = SP == 128 ? 1 : (SP == 64 ? 2 : 3);
constexpr uint32_t EPI_SLAB = 16 * 64 * 2;     // one warp: 16 rows x 64 columns of C
constexpr uint32_t EPI_OFF = S * (A_STAGE + B_STAGE);

static_assert(M % BM == 0 && N % BN == 0 && K % BK == 0, "problem must be a multiple of the tile");
static_assert(BK == 64, "BK is 64 (one 128-B swizzle row of 16-bit elements)");
static_assert(BM == 64 || BM == 128 || BM == 256, "BM in {64,128,256}");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN in {64,128,256}");
static_assert(SP == 32 || SP == 64 || SP == 128, "swizzle 32/64/128 B");
static_assert(MI >= 1, "each consumer warpgroup needs >= 64 rows");
static_assert(MI * ACC_PER_M64 <= 128, "accumulators exceed 128 registers/thread");
static_assert(RA % 8 == 0 && BM % RA == 0 && RA <= 256, "box rows A");
static_assert(RB % 8 == 0 && RB <= 256 && (NN ? BK % RB == 0 : BN % RB == 0), "box rows B");
static_assert(S >= 1 && S <= 8, "stages 1..8");
static_assert(TILES_M >= 1 && TILES_N >= 1, "at least one tile");
}  // namespace cfg

struct __align__(64) TmaDesc {
  uint64_t opaque[16];
};

// One m64nBNk16 wgmma on the configured types.
__device__ __forceinline__ void mma(acc_t* d, uint64_t da, uint64_t db) {
  constexpr int TB = cfg::NN ? 1 : 0;
#if GEMM_ACCUM == 1
#define WG_SUFFIX f16_f16
#elif GEMM_DTYPE == 0
#define WG_SUFFIX f32_f16
#else
#define WG_SUFFIX f32_bf16
#endif
#define WG_CAT2(a, b, c) a##b##_##c
#define WG_CAT(a, b, c) WG_CAT2(a, b, c)
#if GEMM_NO_MMA
  (void)d; (void)da; (void)db;
#else
  WG_CAT(wgmma_n, GEMM_BN, WG_SUFFIX)<TB>(d, da, db);
#endif
}

// Tile coordinates of this CTA (row-major or grouped rasterisation).
__device__ __forceinline__ void tile_coords(int id, int& tm, int& tn) {
#if GEMM_RASTER == 0
  tm = id / cfg::TILES_N;
  tn = id % cfg::TILES_N;
#else
  constexpr int G = GEMM_GROUP;
  const int per_group = G * cfg::TILES_N;
  const int first_m = (id / per_group) * G;
  const int gsz = min(cfg::TILES_M - first_m, G);
  const int r = id % per_group;
  tm = first_m + r % gsz;
  tn = r / gsz;
#endif
}

// Issue all TMA boxes of k-tile `kt` into one stage (A at sa, B at sb), completing on `bar`.
// `pred` selects the issuing lane (a whole warp may call this without diverging).
__device__ __forceinline__ void load_stage(const TmaDesc* ta, const TmaDesc* tb, uint32_t sa,
                                           uint32_t sb, uint32_t bar, int kt, int tm, int tn,
                                           uint32_t pred = 1) {
  using namespace cfg;
  sm90::mbar_arrive_expect_tx_if(pred, bar, TX_BYTES);
#pragma unroll
  for (int c = 0; c < BK / W; ++c)
#pragma unroll
    for (int i = 0; i < BM / RA; ++i)
      sm90::tma_load_2d_if(pred, sa + c * BM * SP + i * RA * SP, ta, kt * BK + c * W, tm * BM + i * RA, bar);
  if constexpr (!NN) {
#pragma unroll
    for (int c = 0; c < BK / W; ++c)
#pragma unroll
      for (int i = 0; i < BN / RB; ++i)
        sm90::tma_load_2d_if(pred, sb + c * BN * SP + i * RB * SP, tb, kt * BK + c * W, tn * BN + i * RB, bar);
  } else {
#pragma unroll
    for (int j = 0; j < BN / W; ++j)
#pragma unroll
      for (int i = 0; i < BK / RB; ++i)
        sm90::tma_load_2d_if(pred, sb + j * BK * SP + i * RB * SP, tb, tn * BN + j * W, kt * BK + i * RB, bar);
  }
}

// All wgmmas of one stage for consumer warpgroup `cw` (rows cw*MI*64 .. of the tile).
__device__ __forceinline__ void mma_stage(acc_t (&acc)[cfg::MI][cfg::ACC_PER_M64], uint32_t sa,
                                          uint32_t sb, int cw) {
  using namespace cfg;
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk) {
    const uint32_t kbyte = kk * 32;  // 16 elements of K = 32 B
    const uint32_t a_k = (kbyte / SP) * BM * SP + kbyte % SP;
    uint64_t db;
    if constexpr (!NN)
      db = sm90::make_desc(sb + (kbyte / SP) * BN * SP + kbyte % SP, 16, 8 * SP, LAYOUT);
    else
      db = sm90::make_desc(sb + kk * 16 * SP, 64 * SP, 8 * SP, LAYOUT);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
      const uint64_t da = sm90::make_desc(sa + a_k + (cw * MI + mi) * 64 * SP, 16, 8 * SP, LAYOUT);
      mma(acc[mi], da, db);
    }
  }
}


#if GEMM_ACCUM == 0
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
#if GEMM_DTYPE == 0
  __half2 h = __floats2half2_rn(lo, hi);
#else
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
#endif
  return *reinterpret_cast<uint32_t*>(&h);
}
// packed (v0 = 0, 1) pair of row-half v1 and column group v2
__device__ __forceinline__ uint32_t frag(const acc_t* d, int v1, int v2) {
  return pack2(d[4 * v2 + 2 * v1], d[4 * v2 + 2 * v1 + 1]);
}
#else
__device__ __forceinline__ uint32_t frag(const acc_t* d, int v1, int v2) { return d[2 * v2 + v1]; }
#endif

// Epilogue of one consumer warpgroup. Accumulator fragment (m64nN): lane l of warp w holds
// row 16w + l/4 + 8*v1, columns 8*v2 + 2*(l%4) + {0,1}.
__device__ __forceinline__ void epilogue(acc_t (&acc)[cfg::MI][cfg::ACC_PER_M64], elem_t* C,
                                         int tm, int tn, int cw, uint8_t* slab_gen,
                                         uint32_t slab) {
  using namespace cfg;
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
    const int row0 = tm * BM + (cw * MI + mi) * 64 + 16 * w;  // first row of this warp
#if GEMM_EPILOGUE == 0
#pragma unroll
    for (int v2 = 0; v2 < BN / 8; ++v2)
#pragma unroll
      for (int v1 = 0; v1 < 2; ++v1) {
        const int r = row0 + lane / 4 + 8 * v1, c = tn * BN + 8 * v2 + 2 * (lane % 4);
        *reinterpret_cast<uint32_t*>(C + static_cast<size_t>(r) * N + c) = frag(acc[mi], v1, v2);
      }
#else
    // Slab: 16 rows x 128 B; 16-B chunk ch of row r lives at chunk ch ^ (r % 8) (conflict-free
    // for stmatrix rows and for the row-wise 16-B reads).
#pragma unroll
    for (int nc = 0; nc < BN / 64; ++nc) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int v2 = nc * 8 + 2 * jj;
        const int r = lane % 16, ch = 2 * jj + lane / 16;
        sm90::stmatrix_x4(slab + r * 128 + ((ch ^ (r % 8)) * 16), frag(acc[mi], 0, v2),
                          frag(acc[mi], 1, v2), frag(acc[mi], 0, v2 + 1), frag(acc[mi], 1, v2 + 1));
      }
      __syncwarp();
#pragma unroll
      for (int it = 0; it < 4; ++it) {
        const int idx = it * 32 + lane, r = idx / 8, ch = idx % 8;
        const uint4 v = *reinterpret_cast<const uint4*>(slab_gen + r * 128 + ((ch ^ (r % 8)) * 16));
        *reinterpret_cast<uint4*>(C + static_cast<size_t>(row0 + r) * N + tn * BN + nc * 64 + ch * 8) = v;
      }
      __syncwarp();
    }
#endif
  }
}

// A consumer's wait for k-tile kt's stage s to be full (its TMA landed). With GEMM_DIAG_NO_TMA
// only the first S k-tiles are loaded, so later k-tiles do not wait.
__device__ __forceinline__ void wait_full(uint64_t* full_bar, int s, int kt) {
  if (GEMM_DIAG_NO_TMA && kt >= cfg::S) return;
  sm90::mbar_wait(sm90::smem_u32(&full_bar[s]), (kt / cfg::S) & 1);
}

extern "C" __global__ void __launch_bounds__(cfg::THREADS, 1)
    gemm_sm90(const __grid_constant__ TmaDesc tma_a, const __grid_constant__ TmaDesc tma_b,
              elem_t* __restrict__ C
#if GEMM_PROFILE
              , unsigned long long* __restrict__ prof
#endif
              ) {
  using namespace cfg;
#if GEMM_PROFILE
  // Cycle profile (validation/cycle_profile.py): per CTA {smid, clock64 at entry, clock64 after
  // the last thread's epilogue, %globaltimer ns at both}; costs one __syncthreads at the end.
  unsigned long long prof_c0 = 0, prof_g0 = 0;
  if (threadIdx.x == 0) {
    prof_c0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(prof_g0));
  }
#endif
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full_bar[S];
  __shared__ __align__(8) uint64_t empty_bar[S];

  const uint32_t raw = sm90::smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* base_gen = smem_raw + (base - raw);
  const uint32_t sA = base, sB = base + S * A_STAGE;

  int tm, tn;
  tile_coords(blockIdx.x, tm, tn);

  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    sm90::prefetch_tmap(&tma_a);
    sm90::prefetch_tmap(&tma_b);
#pragma unroll
    for (int s = 0; s < S; ++s) {
      sm90::mbar_init(sm90::smem_u32(&full_bar[s]), 1);
      sm90::mbar_init(sm90::smem_u32(&empty_bar[s]), 4 * NC);  // lane 0 of every consumer warp
    }
    sm90::fence_mbar_init();
  }
  __syncthreads();

  if constexpr (!WS) {
    // ---------------- single warpgroup: it loads and computes --------------------------------
    // Warp 0 as a whole runs the load path (warp-uniform branch, lane 0 predicated inside the
    // PTX): a lane-divergent branch between wgmmas makes ptxas serialize them (C7518).
    const bool warp0 = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0) == 0;
    const uint32_t lane0 = (threadIdx.x % 32) == 0;
#if GEMM_ELECT
    const uint32_t issuer = sm90::elect_one_sync();  // all 32 lanes converged here
#else
    const uint32_t issuer = lane0;
#endif
    if (warp0) {
#pragma unroll 1
      for (int s = 0; s < (S < KT ? S : KT); ++s)
        load_stage(&tma_a, &tma_b, sA + s * A_STAGE, sB + s * B_STAGE,
                   sm90::smem_u32(&full_bar[s]), s, tm, tn, issuer);
    }
    acc_t acc[MI][ACC_PER_M64];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int i = 0; i < ACC_PER_M64; ++i) acc[mi][i] = 0;

#pragma unroll 1
    for (int kt = 0; kt < KT; ++kt) {
      const int s = kt % S;
      if (!GEMM_DIAG_NO_FULL_WAIT) wait_full(full_bar, s, kt);
      if (!GEMM_DIAG_NO_FENCE) sm90::wgmma_fence();
      mma_stage(acc, sA + s * A_STAGE, sB + s * B_STAGE, 0);
      sm90::wgmma_commit();
      if (GEMM_DIAG_NO_FULL_WAIT) wait_full(full_bar, s, kt);  // after the wgmmas issue (phases stay valid)
      // Release the stage whose wgmmas are now complete (kt-1, or kt with a single stage):
      // lane 0 of each warp arrives on its empty barrier; warp 0 waits for all 4 warps,
      // then refills it with k-tile rel + S.
      int rel;
      if constexpr (S == 1) {
        if (!GEMM_DIAG_NO_WAIT_GROUP) sm90::wgmma_wait<0>();
        rel = kt;
      } else {
        if (!GEMM_DIAG_NO_WAIT_GROUP) sm90::wgmma_wait<1>();
        rel = kt - 1;
      }
      if (rel >= 0) {
        const int rs = rel % S;
        if (threadIdx.x % 32 == 0) sm90::mbar_arrive(sm90::smem_u32(&empty_bar[rs]));
        if (warp0 && rel + S < KT) {
          sm90::mbar_wait(sm90::smem_u32(&empty_bar[rs]), (rel / S) & 1);
          if (!GEMM_DIAG_NO_TMA)
            load_stage(&tma_a, &tma_b, sA + rs * A_STAGE, sB + rs * B_STAGE,
                       sm90::smem_u32(&full_bar[rs]), rel + S, tm, tn, issuer);
        }
      }
    }
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int i = 0; i < ACC_PER_M64; ++i) sm90::fence_operand(acc[mi][i]);
    const int warp = threadIdx.x / 32;
    epilogue(acc, C, tm, tn, 0, base_gen + EPI_OFF + warp * EPI_SLAB, base + EPI_OFF + warp * EPI_SLAB);
  } else {
    // ---------------- warp-specialized: warpgroup 0 produces, 1..NC consume ------------------
    if (wg == 0) {
      sm90::setmaxnreg_dec<40>();
#if GEMM_ELECT
      if (threadIdx.x < 32) {  // warp 0 as a whole; the elected lane issues
        const uint32_t issuer = sm90::elect_one_sync();
#pragma unroll 1
        for (int kt = 0; kt < (GEMM_DIAG_NO_TMA ? (S < KT ? S : KT) : KT); ++kt) {
          const int s = kt % S;
          sm90::mbar_wait(sm90::smem_u32(&empty_bar[s]), ((kt / S) & 1) ^ 1);
          load_stage(&tma_a, &tma_b, sA + s * A_STAGE, sB + s * B_STAGE,
                     sm90::smem_u32(&full_bar[s]), kt, tm, tn, issuer);
        }
      }
#else
      if (threadIdx.x == 0) {
#pragma unroll 1
        for (int kt = 0; kt < (GEMM_DIAG_NO_TMA ? (S < KT ? S : KT) : KT); ++kt) {
          const int s = kt % S;
          sm90::mbar_wait(sm90::smem_u32(&empty_bar[s]), ((kt / S) & 1) ^ 1);
          load_stage(&tma_a, &tma_b, sA + s * A_STAGE, sB + s * B_STAGE,
                     sm90::smem_u32(&full_bar[s]), kt, tm, tn);
        }
      }
#endif
    } else {
      if constexpr (NC == 2) sm90::setmaxnreg_inc<232>();
      else sm90::setmaxnreg_inc<240>();
      const int cw = wg - 1;
      const bool signaller = threadIdx.x % 32 == 0;  // lane 0 of each consumer warp
      acc_t acc[MI][ACC_PER_M64];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int i = 0; i < ACC_PER_M64; ++i) acc[mi][i] = 0;
#pragma unroll 1
      for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % S;
        if (!GEMM_DIAG_NO_FULL_WAIT) wait_full(full_bar, s, kt);
        if (!GEMM_DIAG_NO_FENCE) sm90::wgmma_fence();
        mma_stage(acc, sA + s * A_STAGE, sB + s * B_STAGE, cw);
        sm90::wgmma_commit();
        if (GEMM_DIAG_NO_FULL_WAIT) wait_full(full_bar, s, kt);  // after the wgmmas issue (phases stay valid)
        if constexpr (S == 1) {
          if (!GEMM_DIAG_NO_WAIT_GROUP) sm90::wgmma_wait<0>();
          if (signaller) sm90::mbar_arrive(sm90::smem_u32(&empty_bar[s]));
        } else {
          if (!GEMM_DIAG_NO_WAIT_GROUP) sm90::wgmma_wait<1>();
          if (signaller && kt >= 1) sm90::mbar_arrive(sm90::smem_u32(&empty_bar[(kt - 1) % S]));
        }
      }
      sm90::wgmma_wait<0>();
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int i = 0; i < ACC_PER_M64; ++i) sm90::fence_operand(acc[mi][i]);
      const int cwarp = threadIdx.x / 32 - 4;
      epilogue(acc, C, tm, tn, cw, base_gen + EPI_OFF + cwarp * EPI_SLAB,
               base + EPI_OFF + cwarp * EPI_SLAB);
    }
  }
#if GEMM_PROFILE
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long c1 = clock64(), g1, smid;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    uint32_t sm32;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm32));
    smid = sm32;
    unsigned long long* r = prof + 5ull * blockIdx.x;
    r[0] = smid; r[1] = prof_c0; r[2] = c1; r[3] = prof_g0; r[4] = g1;
  }
#endif
}
