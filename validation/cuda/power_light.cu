// Power microbenchmarks of LIGHT SM load at boost clock (sm_90a), issue 13 follow-up: where a
// lightly loaded GEMM's board power goes besides tensor FLOPs and L2 bytes. See
// validation/power/light.py (host side, points and event definitions). Every kernel runs until
// `duration_ns` of globaltimer have passed (or, churn, exits at once) and adds its events into
// counts[]; smids[blockIdx.x] = the SM the CTA ran on (the host checks distinct SMs).
//
//   resident  CTAs of W warps that only wait: mode 0 = every thread __nanosleep(sleep_ns) in a
//             loop (resident, almost no issue); mode 1 = every thread polls an mbarrier phase
//             that never completes (mbarrier.try_wait loop: a consumer waiting on TMA).
//             counts[0] = warp-level loop iterations (waits / polls issued).
//   tma_req   one thread per CTA issues cp.async.bulk (L2-resident source) of `req_bytes` each,
//             `inflight` bytes per round on one mbarrier, waits, repeats: the same bytes in many
//             small requests (8-row boxes) or few large ones; gap_ns of sleep after each round
//             lowers the rate. counts[0] = bytes, counts[1] = requests.
//   pipe      a GEMM-like CTA: producer thread streams 40 KB stages (A 64x64 + B 256x64 f16,
//             random values; fixed_src: every stage reloads the same 40 KB, so the wgmma operands
//             stop changing while the TMA traffic stays) from L2 by cp.async.bulk in `req_bytes` requests into S stages
//             (full/empty mbarriers); one consumer warpgroup waits on full[s], issues 4 x
//             m64n256k16 (f16 -> f32, SS, 128-B swizzle descriptors), waits, frees the stage.
//             Latency/L2-bound at one CTA per SM. counts[0] = wgmma, [1] = bytes, [2] = requests.
//   wgswz<SP> the tensor burner of power_wgmma.cu (f16 -> f32, one CTA of 2 warpgroups per SM,
//             duty cycle by clock64 spin) with 32/64/128-B swizzle descriptors: does the operand
//             fetch pattern change the energy per FLOP? counts[blockIdx.x] = wgmma.
//   pipe2     the pipe taken apart (validation/power/pipe2.py): modes full / notma / nowgmma /
//             nobar / baronly remove one ingredient each, with a clock64 pace per stage and 4 or 8
//             wgmma per stage (see its section below).
//   churn     each CTA sleeps sleep_ns and exits: CTA launch/teardown (and, with one tiny CTA,
//             kernel launch) power. Events counted by the host (grid x launches).
#include <stdint.h>

#include "../../kernels/cuda/sm90_ptx.cuh"
#include "../../kernels/cuda/wgmma_ops.cuh"

__device__ __forceinline__ uint32_t smid() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

__device__ __forceinline__ bool expired(unsigned long long t0, unsigned long long dur) {
  return sm90::globaltimer_ns() - t0 >= dur;
}

__device__ __forceinline__ void bulk_g2s(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(bar)
      : "memory");
}

// ------------------------------------------------------------------------------------ resident
extern "C" __global__ void resident(unsigned long long* counts, unsigned int* smids,
                                    unsigned long long duration_ns, int mode, unsigned int sleep_ns) {
  __shared__ __align__(8) uint64_t bar_obj;
  const uint32_t bar = sm90::smem_u32(&bar_obj);
  if (threadIdx.x == 0) {
    sm90::mbar_init(bar, 1);  // never arrived on: phase 0 never completes
    sm90::fence_mbar_init();
    smids[blockIdx.x] = smid();
  }
  __syncthreads();
  const unsigned long long t0 = sm90::globaltimer_ns();
  unsigned long long n = 0;
  uint32_t seen = 0;
#pragma unroll 1
  while (true) {
    if (mode == 0) {
      __nanosleep(sleep_ns);
    } else {
      seen |= sm90::mbar_try_wait(bar, 0) ? 1u : 0u;
    }
    ++n;
    if ((n & 7) == 0 && expired(t0, duration_ns)) break;
  }
  if (threadIdx.x % 32 == 0) atomicAdd(counts, n);
  if (seen) counts[1] = 1;  // impossible (phase 0 never completes); keeps the poll live
}

// ------------------------------------------------------------------------------------ tma_req
extern "C" __global__ void __launch_bounds__(32, 1)
    tma_req(const uint8_t* buf, unsigned long long buf_bytes, unsigned long long* counts,
            unsigned int* smids, unsigned long long duration_ns, unsigned int req_bytes,
            unsigned int inflight, unsigned int gap_ns) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t bar_obj;
  if (threadIdx.x != 0) return;
  smids[blockIdx.x] = smid();
  const uint32_t bar = sm90::smem_u32(&bar_obj);
  const uint32_t dst = sm90::smem_u32(smem_raw);
  sm90::mbar_init(bar, 1);
  sm90::fence_mbar_init();
  const unsigned long long t0 = sm90::globaltimer_ns();
  const unsigned int n_req = inflight / req_bytes;
  unsigned long long bytes = 0, reqs = 0, off = (blockIdx.x * 7919ull * inflight) % buf_bytes;
  uint32_t parity = 0;
#pragma unroll 1
  while (!expired(t0, duration_ns)) {
    sm90::mbar_arrive_expect_tx(bar, n_req * req_bytes);
#pragma unroll 1
    for (unsigned int i = 0; i < n_req; ++i) {
      if (off + req_bytes > buf_bytes) off = 0;
      bulk_g2s(dst + i * req_bytes, buf + off, req_bytes, bar);
      off += req_bytes;
    }
    sm90::mbar_wait(bar, parity);
    parity ^= 1;
    bytes += (unsigned long long)n_req * req_bytes;
    reqs += n_req;
    if (gap_ns) {  // a lower byte rate at the same request size: is there a step when L2 is busy?
      const unsigned long long tg = sm90::globaltimer_ns();
      while (sm90::globaltimer_ns() - tg < gap_ns) __nanosleep(500);
    }
  }
  atomicAdd(&counts[0], bytes);
  atomicAdd(&counts[1], reqs);
}

// ------------------------------------------------------------------------------------ pipe
constexpr uint32_t PIPE_A = 8192, PIPE_B = 32768, PIPE_STAGE = PIPE_A + PIPE_B;
constexpr int PIPE_MAX_STAGES = 4;

extern "C" __global__ void __launch_bounds__(160, 1)
    pipe(const uint8_t* buf, unsigned long long buf_bytes, unsigned long long* counts, unsigned int* smids,
         float* sink, unsigned long long duration_ns, unsigned int req_bytes, int stages, int fixed_src) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full[PIPE_MAX_STAGES], empty[PIPE_MAX_STAGES];
  __shared__ volatile int stopf[PIPE_MAX_STAGES];  // per stage: no race with a consumer behind
  const uint32_t raw = sm90::smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;
  if (threadIdx.x == 0) {
    smids[blockIdx.x] = smid();
    for (int s = 0; s < stages; ++s) {
      sm90::mbar_init(sm90::smem_u32(&full[s]), 1);
      sm90::mbar_init(sm90::smem_u32(&empty[s]), 4);  // lane 0 of each consumer warp
      stopf[s] = 0;
    }
    sm90::fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x >= 128) {  // producer warp: lane 0 issues
    if (threadIdx.x != 128) return;
    const unsigned long long t0 = sm90::globaltimer_ns();
    const uint32_t n_req = PIPE_STAGE / req_bytes;
    const unsigned long long off0 = (blockIdx.x * 7919ull * PIPE_STAGE) % buf_bytes;
    unsigned long long off = off0, bytes = 0, reqs = 0;
#pragma unroll 1
    for (unsigned int it = 0;; ++it) {
      const int s = it % stages;
      const uint32_t round = it / stages;
      if (round > 0) sm90::mbar_wait(sm90::smem_u32(&empty[s]), (round - 1) & 1);
      const uint32_t fb = sm90::smem_u32(&full[s]);
      if (expired(t0, duration_ns)) {
        stopf[s] = 1;           // stage s is free: its consumer has passed its last read of stopf[s]
        sm90::mbar_arrive(fb);  // release: the consumer sees stopf[s] after its wait
        break;
      }
      sm90::mbar_arrive_expect_tx(fb, n_req * req_bytes);
#pragma unroll 1
      for (uint32_t i = 0; i < n_req; ++i) {
        if (off + req_bytes > buf_bytes) off = 0;
        bulk_g2s(base + s * PIPE_STAGE + i * req_bytes, buf + off, req_bytes, fb);
        off += req_bytes;
      }
      if (fixed_src) off = off0;  // every stage the same 40 KB: same TMA traffic, constant operands
      bytes += (unsigned long long)n_req * req_bytes;
      reqs += n_req;
    }
    atomicAdd(&counts[1], bytes);
    atomicAdd(&counts[2], reqs);
    return;
  }
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  unsigned long long issued = 0;
  float keep = 0.f;
#pragma unroll 1
  for (unsigned int it = 0;; ++it) {
    const int s = it % stages;
    sm90::mbar_wait(sm90::smem_u32(&full[s]), (it / stages) & 1);
    if (stopf[s]) break;  // every earlier stage was consumed: no copy in flight at exit
    const uint32_t sa = base + s * PIPE_STAGE, sb = sa + PIPE_A;
    sm90::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_n256_f32_f16<0>(acc, sm90::make_desc(sa + kk * 32, 16, 1024, 1), sm90::make_desc(sb + kk * 32, 16, 1024, 1));
    sm90::wgmma_commit();
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 128; ++i) sm90::fence_operand(acc[i]);
    __syncwarp();
    if (threadIdx.x % 32 == 0) sm90::mbar_arrive(sm90::smem_u32(&empty[s]));
    issued += 4;
    if ((it & 15) == 15) {
      keep += acc[0] + acc[127];
#pragma unroll
      for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    }
  }
  if (threadIdx.x == 0) atomicAdd(&counts[0], issued);
  if (keep == 12345.f) sink[threadIdx.x] = keep;
}

// ------------------------------------------------------------------------------------ wgswz
template <int SP>
__device__ __forceinline__ void swz_ktile(float* acc, uint32_t sa, uint32_t sb) {
  constexpr uint32_t LAYOUT = SP == 128 ? 1 : (SP == 64 ? 2 : 3);
  sm90::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    const uint32_t kbyte = kk * 32;
    const uint64_t da = sm90::make_desc(sa + (kbyte / SP) * 64 * SP + kbyte % SP, 16, 8 * SP, LAYOUT);
    const uint64_t db = sm90::make_desc(sb + (kbyte / SP) * 256 * SP + kbyte % SP, 16, 8 * SP, LAYOUT);
    wgmma_n256_f32_f16<0>(acc, da, db);
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<1>();
}

template <int SP>
__device__ __forceinline__ void swz_burn(const uint4* src, unsigned long long* counts, float* sink,
                                         unsigned long long duration_ns, int duty_pct, int groups) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ unsigned long long t_start;
  __shared__ int stop_flag;
  const uint32_t raw = sm90::smem_u32(smem_raw);
  const uint32_t pad = ((raw + 1023u) & ~1023u) - raw;
  uint4* s16 = reinterpret_cast<uint4*>(smem_raw + pad);
  for (int i = threadIdx.x; i < 3072; i += blockDim.x) s16[i] = src[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (threadIdx.x == 0) { t_start = sm90::globaltimer_ns(); stop_flag = 0; }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  const uint32_t sb = raw + pad;
  const uint32_t sa = sb + 32768 + wg * 8192;
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  unsigned long long issued = 0;
  float keep = 0.f;
#pragma unroll 1
  while (true) {
    const long long c0 = clock64();
#pragma unroll 1
    for (int g = 0; g < groups; ++g) swz_ktile<SP>(acc, sa, sb);
    sm90::wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < 128; ++i) sm90::fence_operand(acc[i]);
    keep = keep + acc[0] + acc[127];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    issued += 4ull * groups;
    if (duty_pct < 100) {
      const long long busy = __shfl_sync(0xffffffffu, clock64() - c0, 0);
      const long long until = clock64() + busy * (100 - duty_pct) / duty_pct;
      while (clock64() < until) __nanosleep(100);
      __syncwarp();
    }
    if (threadIdx.x == 0 && sm90::globaltimer_ns() - t_start >= duration_ns) stop_flag = 1;
    __syncthreads();
    if (stop_flag) break;
    __syncthreads();
  }
  if (threadIdx.x % 128 == 0) atomicAdd(&counts[blockIdx.x], issued);
  if (keep == 12345.f) sink[threadIdx.x] = keep;
}

#define POWER_SWZ_KERNEL(NAME, SP)                                                            \
  extern "C" __global__ void __launch_bounds__(256, 1)                                        \
      NAME(const uint4* src, unsigned long long* counts, float* sink,                          \
           unsigned long long duration_ns, int duty_pct, int groups) {                         \
    swz_burn<SP>(src, counts, sink, duration_ns, duty_pct, groups);                            \
  }

POWER_SWZ_KERNEL(wgswz32, 32)
POWER_SWZ_KERNEL(wgswz64, 64)
POWER_SWZ_KERNEL(wgswz128, 128)

// ------------------------------------------------------------------------------------ churn
extern "C" __global__ void churn(unsigned int sleep_ns) {
  if (sleep_ns) __nanosleep(sleep_ns);
}

// ------------------------------------------------------------------------------------ pipe2
// The pipe taken apart (issue 13 phase 3; host side validation/power/pipe2.py): the same CTA
// shape (producer lane 128, one consumer warpgroup, 40 KB stages, full/empty mbarriers) with one
// ingredient removed per mode, so the ~130 W the pipe draws over its parts can be attributed:
//   0 full     as pipe (TMA stream into S stages, wgmma on each, the handshakes)
//   1 notma    the same handshakes (plain arrive on full[s], no expect_tx), NO TMA in the loop:
//              the wgmmas read S stages filled once at the start
//   2 nowgmma  the producer's TMA stream and all handshakes as in full; the consumer waits and
//              releases each stage without wgmma
//   3 nobar    no producer/consumer coupling: the consumer runs wgmma on S stages filled once at
//              the start (paced by itself), the producer streams TMA into S OTHER stages on its own
//              ring of mbarriers (only its own expect_tx/waits); needs 2 S x 40 KB (S <= 2)
//   4 baronly  handshakes only (no TMA, no wgmma)
// reuse (1 or 2): the consumer issues reuse x 4 wgmma per stage (bytes per wgmma / reuse). period: the
// producer (and in nobar the consumer too) starts at most one stage per `period` SM cycles
// (clock64; 0 = as fast as the pipe goes). spread: CTA b starts reading at b x spread x 40 KB (mod the
// buffer): 7919 (every run before the seventh session) = every SM on its own data; 0 = every SM
// reads the same addresses in the same order (the shared-source points, pipe2.SHARED_POINTS). group:
// CTAs b with the same b / group start at the same offset (1: every CTA its own; g: groups of g
// consecutive CTAs read the same addresses together, as the CTAs of a GEMM sharing a tile).
// counts[0] wgmma, [1] TMA bytes of the loop, [2] TMA
// requests, [3] mbarrier arrives (instructions), [4] mbarrier waits (per waiting warp; the
// consumer warps count one each), [5] stages consumed (consumer iterations).
constexpr int P2_FULL = 0, P2_NOTMA = 1, P2_NOWGMMA = 2, P2_NOBAR = 3;  // 4 = baronly (neither TMA nor wgmma)

// Wait until clock64 reaches `next`, then book the next slot `period` cycles later (a small lag is
// caught up, a lag over one period is not: no bursts). period 0: no pacing.
__device__ __forceinline__ void p2_pace(long long& next, long long period) {
  if (period <= 0) return;
  long long now = clock64();
  while (now < next) {
    __nanosleep(32);
    now = clock64();
  }
  next = (now - next > period ? now : next) + period;
}

// R x 4 wgmma m64n256k16 (f16 -> f32, SS, 128-B swizzle) on the stage at sa (A 8 KB, B 32 KB), waited.
template <int R>
__device__ __forceinline__ void p2_mma(float* acc, uint32_t sa) {
  const uint32_t sb = sa + PIPE_A;
  sm90::wgmma_fence();
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_n256_f32_f16<0>(acc, sm90::make_desc(sa + kk * 32, 16, 1024, 1), sm90::make_desc(sb + kk * 32, 16, 1024, 1));
  }
  sm90::wgmma_commit();
  sm90::wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) sm90::fence_operand(acc[i]);
}

__device__ __forceinline__ void p2_bar_sync_consumers() { asm volatile("bar.sync 1, 128;" ::: "memory"); }

// Producer lane of modes full/notma/nowgmma/baronly: wait empty[s], pace, arrive on full[s] (with
// expect_tx and the TMA requests when `tma`); at the deadline: stopf[s] = 1 and a plain arrive.
__device__ void p2_producer(const uint8_t* buf, unsigned long long buf_bytes, unsigned long long* counts,
                            uint64_t* full, uint64_t* empty, volatile int* stopf, uint32_t base,
                            unsigned long long duration_ns, uint32_t req_bytes, int stages, bool tma,
                            long long period, unsigned int spread, unsigned int group) {
  const unsigned long long t0 = sm90::globaltimer_ns();
  const uint32_t n_req = PIPE_STAGE / req_bytes;
  unsigned long long off = ((blockIdx.x / group) * (unsigned long long)spread * PIPE_STAGE) % buf_bytes;
  unsigned long long bytes = 0, reqs = 0, arrives = 0, waits = 0;
  long long next = clock64();
#pragma unroll 1
  for (unsigned int it = 0;; ++it) {
    const int s = it % stages;
    const uint32_t round = it / stages;
    if (round > 0) {
      sm90::mbar_wait(sm90::smem_u32(&empty[s]), (round - 1) & 1);
      ++waits;
    }
    const uint32_t fb = sm90::smem_u32(&full[s]);
    if (expired(t0, duration_ns)) {
      stopf[s] = 1;
      sm90::mbar_arrive(fb);
      break;
    }
    p2_pace(next, period);
    if (tma) {
      sm90::mbar_arrive_expect_tx(fb, n_req * req_bytes);
#pragma unroll 1
      for (uint32_t i = 0; i < n_req; ++i) {
        if (off + req_bytes > buf_bytes) off = 0;
        bulk_g2s(base + s * PIPE_STAGE + i * req_bytes, buf + off, req_bytes, fb);
        off += req_bytes;
      }
      bytes += (unsigned long long)n_req * req_bytes;
      reqs += n_req;
    } else {
      sm90::mbar_arrive(fb);
    }
    ++arrives;
  }
  atomicAdd(&counts[1], bytes);
  atomicAdd(&counts[2], reqs);
  atomicAdd(&counts[3], arrives);
  atomicAdd(&counts[4], waits);
}

// Producer lane of nobar: a TMA stream into its own S stages on its own ring (bar[s]), paced,
// never coupled to the consumer; drains every copy in flight before it returns.
__device__ void p2_stream(const uint8_t* buf, unsigned long long buf_bytes, unsigned long long* counts,
                          uint64_t* bar, uint32_t dst, unsigned long long duration_ns, uint32_t req_bytes,
                          int stages, long long period, unsigned int spread, unsigned int group) {
  const unsigned long long t0 = sm90::globaltimer_ns();
  const uint32_t n_req = PIPE_STAGE / req_bytes;
  unsigned long long off = ((blockIdx.x / group) * (unsigned long long)spread * PIPE_STAGE) % buf_bytes;
  unsigned long long bytes = 0, reqs = 0, arrives = 0, waits = 0;
  long long next = clock64();
  int it = 0;
#pragma unroll 1
  for (;; ++it) {
    const int s = it % stages;
    if (it >= stages) {
      sm90::mbar_wait(sm90::smem_u32(&bar[s]), ((it / stages) - 1) & 1);
      ++waits;
    }
    if (expired(t0, duration_ns)) break;
    p2_pace(next, period);
    const uint32_t fb = sm90::smem_u32(&bar[s]);
    sm90::mbar_arrive_expect_tx(fb, n_req * req_bytes);
#pragma unroll 1
    for (uint32_t i = 0; i < n_req; ++i) {
      if (off + req_bytes > buf_bytes) off = 0;
      bulk_g2s(dst + s * PIPE_STAGE + i * req_bytes, buf + off, req_bytes, fb);
      off += req_bytes;
    }
    bytes += (unsigned long long)n_req * req_bytes;
    reqs += n_req;
    ++arrives;
  }
#pragma unroll 1
  for (int j = it > stages ? it - stages : 0; j < it; ++j)  // the copies still in flight
    sm90::mbar_wait(sm90::smem_u32(&bar[j % stages]), (j / stages) & 1);
  atomicAdd(&counts[1], bytes);
  atomicAdd(&counts[2], reqs);
  atomicAdd(&counts[3], arrives);
  atomicAdd(&counts[4], waits);
}

extern "C" __global__ void __launch_bounds__(160, 1)
    pipe2(const uint8_t* buf, unsigned long long buf_bytes, unsigned long long* counts, unsigned int* smids,
          float* sink, unsigned long long duration_ns, unsigned int req_bytes, int stages, int mode, int reuse,
          long long period, unsigned int spread, unsigned int group) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  __shared__ __align__(8) uint64_t full[PIPE_MAX_STAGES], empty[PIPE_MAX_STAGES], init_bar;
  __shared__ volatile int stopf[PIPE_MAX_STAGES];
  __shared__ volatile int stop_nobar;
  const uint32_t base = (sm90::smem_u32(smem_raw) + 1023u) & ~1023u;
  const bool prefill = mode == P2_NOTMA || mode == P2_NOBAR;
  const bool mma = mode == P2_FULL || mode == P2_NOTMA || mode == P2_NOBAR;
  if (threadIdx.x == 0) {
    smids[blockIdx.x] = smid();
    for (int s = 0; s < stages; ++s) {
      sm90::mbar_init(sm90::smem_u32(&full[s]), 1);
      sm90::mbar_init(sm90::smem_u32(&empty[s]), 4);  // lane 0 of each consumer warp
      stopf[s] = 0;
    }
    sm90::mbar_init(sm90::smem_u32(&init_bar), 1);
    stop_nobar = 0;
    sm90::fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x >= 128) {  // producer warp: lane 0 issues
    if (threadIdx.x != 128) return;
    if (prefill) {  // the consumer's S stages, once (random data; not counted)
      const uint32_t fill = stages * PIPE_STAGE, ib = sm90::smem_u32(&init_bar);
      const unsigned long long off = ((blockIdx.x / group) * (unsigned long long)spread * PIPE_STAGE) % (buf_bytes - fill);
      sm90::mbar_arrive_expect_tx(ib, fill);
      for (uint32_t i = 0; i < fill / 8192; ++i) bulk_g2s(base + i * 8192, buf + off + i * 8192, 8192, ib);
    }
    if (mode == P2_NOBAR)
      p2_stream(buf, buf_bytes, counts, full, base + stages * PIPE_STAGE, duration_ns, req_bytes, stages, period,
                spread, group);
    else
      p2_producer(buf, buf_bytes, counts, full, empty, stopf, base, duration_ns, req_bytes, stages,
                  mode == P2_FULL || mode == P2_NOWGMMA, period, spread, group);
    return;
  }
  if (prefill) sm90::mbar_wait(sm90::smem_u32(&init_bar), 0);
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.f;
  const unsigned long long t0 = sm90::globaltimer_ns();
  unsigned long long issued = 0, arrives = 0, waits = 0, done = 0;
  long long next = clock64();
  float keep = 0.f;
#pragma unroll 1
  for (unsigned int it = 0;; ++it) {
    const int s = it % stages;
    if (mode != P2_NOBAR) {
      sm90::mbar_wait(sm90::smem_u32(&full[s]), (it / stages) & 1);
      if (stopf[s]) break;  // every earlier stage was consumed: no copy in flight at exit
      ++waits;
    } else {
      if ((it & 7) == 0) {  // one decision for the whole warpgroup (wgmma is warpgroup-wide)
        if (threadIdx.x == 0 && expired(t0, duration_ns)) stop_nobar = 1;
        p2_bar_sync_consumers();
        const int st = stop_nobar;
        p2_bar_sync_consumers();
        if (st) break;
      }
      if (threadIdx.x % 32 == 0) p2_pace(next, period);
    }
    __syncwarp();
    if (mma) {
      const uint32_t sa = base + s * PIPE_STAGE;
      if (reuse == 2)
        p2_mma<2>(acc, sa);
      else
        p2_mma<1>(acc, sa);
      issued += 4ull * reuse;
      if ((it & 15) == 15) {
        keep += acc[0] + acc[127];
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0.f;
      }
    }
    __syncwarp();
    if (mode != P2_NOBAR && threadIdx.x % 32 == 0) {
      sm90::mbar_arrive(sm90::smem_u32(&empty[s]));
      ++arrives;
    }
    ++done;
  }
  if (threadIdx.x == 0) {
    atomicAdd(&counts[0], issued);
    atomicAdd(&counts[5], done);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&counts[3], arrives);
    atomicAdd(&counts[4], waits);
  }
  if (keep == 12345.f) sink[threadIdx.x] = keep;
}
