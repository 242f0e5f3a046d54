// One attention tile per CTA, O = softmax(Q K^T scale) V: the CUDA twin of the IR kernel
// kernels/attention/ (issue 15 item 3; variant "single", no overlap, out f32, the IR's defaults).
// Points, check and runner: validation/portfolio_attention.py, python3 -m validation.portfolio_runs
// --family attention. Same tile sizes, shared-memory layout, descriptors and instruction order as
// kernels/attention/kernel.py + softmax.py, as far as CUDA with inline PTX allows:
//
//   Q: (q_tiles * 64) x D, K, V: seq x D, f16 row-major; O: (q_tiles * 64) x D f32 row-major.
//   One CTA = one warpgroup (128 threads) = one 64-row Q tile (blockIdx.x); every CTA reads the
//   whole K and V (one head). Grid = q_tiles CTAs. D (head_dim) in {64, 128} and KVB (kv_block)
//   in {64, 128} are template arguments (four extern "C" kernels attention_d{D}_kv{KVB});
//   seq (a multiple of KVB) and stages (1..4) are runtime arguments; c = f32(scale * log2 e).
//
//   smem      sQ = dynamic base rounded up to 1024 B; [Q 64 x D][K stage 0..S-1][V stage 0..S-1],
//             each tile d/64 column chunks of 128-B rows, 128B swizzle (TMA boxes 64 cols x rows)
//   setup     thread 0: mbarrier.init full[s] (1), empty[s] (4: lane 0 of each warp), q_bar (1);
//             fence.mbarrier_init; __syncthreads
//   prologue  warp 0 (lane 0 issues): expect_tx(q_bar) + Q boxes; KV blocks 0..min(S, KT)-1
//   loop j    wait full[j % S] (parity (j / S) & 1); wgmma.fence; S = Q K^T: D/16 wgmma
//             m64n{KVB}k16 SS (scale-d 0 on the first); commit; wait 0; online softmax (row max,
//             quad shuffles, ex2.approx, l, O *= alpha, P packed by cvt.rn.f16x2.f32); wgmma.fence;
//             O += P V: KVB/16 wgmma m64n{D}k16 RS, V MN-major (trans-b 1); commit; wait 0;
//             lane 0 of each warp arrives on empty[s]; warp 0 waits empty[s] and loads block j + S
//   epilogue  l summed over the quad; O *= rcp.approx(l); st.global.v2.f32 of each thread's pairs
// Descriptors (sm90_ptx.cuh make_desc, layout 1 = 128B swizzle): Q and K K-major (LBO 16, SBO
// 1024 = 8 rows x 128 B), V MN-major (LBO = KVB x 128 B between 64-column chunks, SBO 1024).

#include <stdint.h>

#include "sm90_ptx.cuh"
#include "wgmma_ops.cuh"

#define ATTN_MAX_STAGES 4
#define ATTN_TILE_M 64

struct alignas(64) TmaDesc {
  uint64_t opaque[16];
};

// Debug build (-DATTN_DEBUG; validation/attention_debug.py, `--family attention --debug-dump DIR`):
// the kernels take one more argument, float* dbg, and CTA 0 dumps, for KV block 0, every thread's
// S fragment (after the S wgmma), P (f32, after the softmax), the packed P registers, m0 m1 l0 l1,
// the O fragment after the first P V, and the shared-memory bytes of Q, K and V (stage 0). Regions
// (in 4-byte words, thread-major): attn::Dbg. The timed build has none of this code.
#ifdef ATTN_DEBUG
#define ATTN_DBG_PARAM , float* dbg
#define ATTN_DBG_ARG , dbg
#else
#define ATTN_DBG_PARAM
#define ATTN_DBG_ARG
#endif

namespace attn {

template <int D, int KVB>
struct Dbg {   // word offsets of the dump regions (128 threads each, then the raw smem words)
  static constexpr int S = 0, P = S + 128 * KVB / 2, PK = P + 128 * KVB / 2, O1 = PK + 128 * KVB / 4,
                       ST = O1 + 128 * D / 2, SMQ = ST + 128 * 4, SMK = SMQ + 64 * D / 2, SMV = SMK + KVB * D / 2,
                       WORDS = SMV + KVB * D / 2;
};

constexpr uint32_t FULL = 0xFFFFFFFFu;

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rcp(float x) {
  float y;
  asm volatile("rcp.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// cvt.rn.f16x2.f32 d, hi, lo: lo in bits 15..0, hi in 31..16 (the A fragment's k order).
__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  uint32_t d;
  asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
// mbarrier.arrive predicated (the IR's guarded arrive: lane 0 of each warp, no divergence).
__device__ __forceinline__ void arrive_if(uint32_t pred, uint32_t bar) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.u32 p, %0, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%1];\n}\n" ::"r"(pred),
      "r"(bar)
      : "memory");
}
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(FULL, x, 1));
  return fmaxf(x, __shfl_xor_sync(FULL, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x = x + __shfl_xor_sync(FULL, x, 1);
  return x + __shfl_xor_sync(FULL, x, 2);
}

// wgmma dispatch on N (the wrappers of wgmma_ops.cuh).
template <int N>
__device__ __forceinline__ void mma_ss(float* d, uint64_t a, uint64_t b, uint32_t scale_d);
template <>
__device__ __forceinline__ void mma_ss<64>(float* d, uint64_t a, uint64_t b, uint32_t sd) {
  wgmma_n64_f32_f16<0>(d, a, b, sd);
}
template <>
__device__ __forceinline__ void mma_ss<128>(float* d, uint64_t a, uint64_t b, uint32_t sd) {
  wgmma_n128_f32_f16<0>(d, a, b, sd);
}
template <int N>
__device__ __forceinline__ void mma_rs(float* d, const uint32_t* a, uint64_t b);
template <>
__device__ __forceinline__ void mma_rs<64>(float* d, const uint32_t* a, uint64_t b) {
  wgmma_rs_n64_f32_f16<1>(d, a, b);
}
template <>
__device__ __forceinline__ void mma_rs<128>(float* d, const uint32_t* a, uint64_t b) {
  wgmma_rs_n128_f32_f16<1>(d, a, b);
}

// Byte offset of (row, col) in a rows x D tile of 64-column chunks (kernels/attention/plan.py).
template <int ROWS>
__host__ __device__ constexpr uint32_t tile_off(int row, int col) {
  return row * 128 + (col % 64) * 2 + (col / 64) * ROWS * 128;
}

// One row half h of the online softmax of a KV block (softmax.py exp_block), in the IR's order.
template <int KVB>
__device__ __forceinline__ float exp_half(float* s, float& m, float& l, int h, float c) {
  constexpr int NV = KVB / 4;   // values of the row half: i = 4 v2 + 2 h + v0, v2 < KVB/8, v0 < 2
  float mx = s[2 * h];
#pragma unroll
  for (int n = 1; n < NV; ++n) mx = fmaxf(mx, s[4 * (n / 2) + 2 * h + (n % 2)]);
  mx = quad_max(mx);
  mx = fmaxf(m, mx);
  const float nm = mx * -c;
  const float al = ex2(__fmaf_rn(m, c, nm));
  m = mx;
  float rs = 0.f;
#pragma unroll
  for (int n = 0; n < NV; ++n) {
    const int i = 4 * (n / 2) + 2 * h + (n % 2);
    s[i] = ex2(__fmaf_rn(s[i], c, nm));
    rs = n == 0 ? s[i] : rs + s[i];
  }
  l = __fmaf_rn(l, al, rs);
  return al;
}

template <int D, int KVB>
__device__ __forceinline__ void tile(const TmaDesc* tq, const TmaDesc* tk, const TmaDesc* tv, float* O,
                                     int seq, int stages, float c ATTN_DBG_PARAM) {
  __shared__ __align__(8) uint64_t full[ATTN_MAX_STAGES], empty[ATTN_MAX_STAGES], qbar;
  extern __shared__ __align__(1024) uint8_t smem[];
  constexpr uint32_t Q_BYTES = ATTN_TILE_M * D * 2, KV_BYTES = KVB * D * 2, TX = 2 * KV_BYTES;
  const int tid = threadIdx.x, lane = tid & 31, S = stages, KT = seq / KVB;
  const uint32_t lane0 = lane == 0, warp0 = tid < 32;
  const uint32_t sQ = (sm90::smem_u32(smem) + 1023u) & 0xFFFFFC00u;
  const uint32_t sK = sQ + Q_BYTES, sV = sQ + Q_BYTES + S * KV_BYTES;
  const uint32_t fb = sm90::smem_u32(full), eb = sm90::smem_u32(empty), qb = sm90::smem_u32(&qbar);
  const int qrow0 = blockIdx.x * ATTN_TILE_M;
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      sm90::mbar_init(fb + 8 * s, 1);
      sm90::mbar_init(eb + 8 * s, 4);
    }
    sm90::mbar_init(qb, 1);
    sm90::fence_mbar_init();
  }
  __syncthreads();
  auto load_kv = [&](int j, int s) {   // expect_tx(full[s], K + V bytes), K and V boxes of block j
    const uint32_t bar = fb + 8 * s, sk = sK + s * KV_BYTES, sv = sV + s * KV_BYTES;
    sm90::mbar_arrive_expect_tx_if(lane0, bar, TX);
    const int key0 = j * KVB;
#pragma unroll
    for (int cc = 0; cc < D / 64; ++cc)
      sm90::tma_load_2d_if(lane0, sk + tile_off<KVB>(0, 64 * cc), tk, 64 * cc, key0, bar);
#pragma unroll
    for (int cc = 0; cc < D / 64; ++cc)
      sm90::tma_load_2d_if(lane0, sv + tile_off<KVB>(0, 64 * cc), tv, 64 * cc, key0, bar);
  };
  if (warp0) {   // prologue
    sm90::mbar_arrive_expect_tx_if(lane0, qb, Q_BYTES);
#pragma unroll
    for (int cc = 0; cc < D / 64; ++cc)
      sm90::tma_load_2d_if(lane0, sQ + tile_off<ATTN_TILE_M>(0, 64 * cc), tq, 64 * cc, qrow0, qb);
    for (int s = 0; s < S && s < KT; ++s) load_kv(s, s);
  }
  float o[D / 2], sacc[KVB / 2];
  uint32_t p[KVB / 4];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const uint64_t descQ = sm90::make_desc(sQ, 16, 1024, 1);
  sm90::mbar_wait(qb, 0);
  for (int j = 0; j < KT; ++j) {
    const int s = j % S;
    const uint32_t ph = (j / S) & 1, sk = sK + s * KV_BYTES, sv = sV + s * KV_BYTES;
    sm90::mbar_wait(fb + 8 * s, ph);
#ifdef ATTN_DEBUG
    using DL = Dbg<D, KVB>;
    const bool dbg_on = blockIdx.x == 0 && j == 0;
    if (dbg_on) {   // the landed tiles, raw (the TMA's 128B-swizzled bytes), generic loads after the wait
      const uint32_t* g = reinterpret_cast<const uint32_t*>(smem + (sQ - sm90::smem_u32(smem)));
      for (int w = tid; w < Q_BYTES / 4; w += 128) dbg[DL::SMQ + w] = __uint_as_float(g[w]);
      for (int w = tid; w < KV_BYTES / 4; w += 128) dbg[DL::SMK + w] = __uint_as_float(g[(sk - sQ) / 4 + w]);
      for (int w = tid; w < KV_BYTES / 4; w += 128) dbg[DL::SMV + w] = __uint_as_float(g[(sv - sQ) / 4 + w]);
    }
#endif
    const uint64_t descK = sm90::make_desc(sk, 16, 1024, 1);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      mma_ss<KVB>(sacc, descQ + (tile_off<ATTN_TILE_M>(0, 16 * kk) >> 4), descK + (tile_off<KVB>(0, 16 * kk) >> 4),
                  kk == 0 ? 0u : 1u);
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < KVB / 2; ++i) sm90::fence_operand(sacc[i]);
#ifdef ATTN_DEBUG
    if (dbg_on)
      for (int i = 0; i < KVB / 2; ++i) dbg[DL::S + tid * (KVB / 2) + i] = sacc[i];
#endif
    const float a0 = exp_half<KVB>(sacc, m0, l0, 0, c);
    const float a1 = exp_half<KVB>(sacc, m1, l1, 1, c);
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] *= (i & 2) ? a1 : a0;   // row half h = (i / 2) % 2
#pragma unroll
    for (int r = 0; r < KVB / 4; ++r) p[r] = pack_f16x2(sacc[8 * (r / 4) + 2 * (r % 4)], sacc[8 * (r / 4) + 2 * (r % 4) + 1]);
#ifdef ATTN_DEBUG
    if (dbg_on) {
      for (int i = 0; i < KVB / 2; ++i) dbg[DL::P + tid * (KVB / 2) + i] = sacc[i];
      for (int r = 0; r < KVB / 4; ++r) dbg[DL::PK + tid * (KVB / 4) + r] = __uint_as_float(p[r]);
      dbg[DL::ST + 4 * tid] = m0;
      dbg[DL::ST + 4 * tid + 1] = m1;
      dbg[DL::ST + 4 * tid + 2] = l0;
      dbg[DL::ST + 4 * tid + 3] = l1;
    }
#endif
#pragma unroll
    for (int i = 0; i < D / 2; ++i) sm90::fence_operand(o[i]);
#pragma unroll
    for (int r = 0; r < KVB / 4; ++r) sm90::fence_operand(p[r]);
    const uint64_t descV = sm90::make_desc(sv, KVB * 128, 1024, 1);
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KVB / 16; ++kk) mma_rs<D>(o, p + 4 * kk, descV + (tile_off<KVB>(16 * kk, 0) >> 4));
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < D / 2; ++i) sm90::fence_operand(o[i]);
#ifdef ATTN_DEBUG
    if (dbg_on)
      for (int i = 0; i < D / 2; ++i) dbg[DL::O1 + tid * (D / 2) + i] = o[i];
#endif
    arrive_if(lane0, eb + 8 * s);
    if (warp0 && j < KT - S) {   // refill stage s with block j + S once the four warps released it
      sm90::mbar_wait(eb + 8 * s, ph);
      load_kv(j + S, s);
    }
  }
  const float inv0 = rcp(quad_sum(l0)), inv1 = rcp(quad_sum(l1));
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] *= (i & 2) ? inv1 : inv0;
  const int row = qrow0 + 16 * (tid >> 5) + (lane >> 2), col = 2 * (lane & 3);
  float* gp = O + (size_t)row * D + col;
#pragma unroll
  for (int v2 = 0; v2 < D / 8; ++v2)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      *reinterpret_cast<float2*>(gp + 8 * h * D + 8 * v2) = make_float2(o[4 * v2 + 2 * h], o[4 * v2 + 2 * h + 1]);
}

}  // namespace attn

#define ATTN_KERNEL(D, KVB)                                                                              \
  extern "C" __global__ void __launch_bounds__(128, 1)                                                  \
      attention_d##D##_kv##KVB(const __grid_constant__ TmaDesc tma_q, const __grid_constant__ TmaDesc tma_k, \
                               const __grid_constant__ TmaDesc tma_v, float* O, int seq, int stages, float c \
                                   ATTN_DBG_PARAM) {                                                    \
    attn::tile<D, KVB>(&tma_q, &tma_k, &tma_v, O, seq, stages, c ATTN_DBG_ARG);                          \
  }

ATTN_KERNEL(64, 64)
ATTN_KERNEL(64, 128)
ATTN_KERNEL(128, 64)
ATTN_KERNEL(128, 128)
