// Shared-memory bank probes: each kernel executes exactly ONE warp-wide shared-memory
// instruction (inline PTX, asm volatile), so Nsight Compute's per-launch counters
//   smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{ld,st,ldsm,stsm}.sum
//   l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
// are those of one instruction. Launch: 1 block of 32 threads, dynamic shared memory as large as
// the highest address + 16 (up to 232448 B). Used by validation/bank_truth.py.
//
//   addrs[32] : byte offset from the dynamic shared-memory base per lane; -1 = lane skips
//               (ld/st only: ldmatrix/stmatrix are .sync.aligned, so every lane executes and a
//               -1 address is replaced by 0 -- only lanes 0..8*N-1 matter for .xN)
//   sink[32*4]: what a load returned (keeps the instruction live); stores write lane ids
//   base[1]   : the shared-window address of the dynamic buffer (lane 0 writes it)
//
// No other shared-memory instruction is executed (no initialisation: the data read is whatever
// shared memory held; only the addresses matter).

#include <cstdint>

extern __shared__ __align__(1024) unsigned char bank_probe_smem[];

__device__ __forceinline__ uint32_t probe_base() {
  return static_cast<uint32_t>(__cvta_generic_to_shared(bank_probe_smem));
}

#define PROBE_PROLOGUE                                        \
  const int lane = threadIdx.x & 31;                          \
  const long long off = addrs[lane];                          \
  const uint32_t base = probe_base();                         \
  if (lane == 0) base_out[0] = base;                          \
  const uint32_t a = base + static_cast<uint32_t>(off < 0 ? 0 : off);

// ---------------------------------------------------------------- ld.shared / st.shared
#define LD_SCALAR(NAME, PTXT)                                                            \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    if (off >= 0) {                                                                      \
      uint32_t r;                                                                        \
      asm volatile("ld.shared." PTXT " %0, [%1];" : "=r"(r) : "r"(a) : "memory");       \
      sink[lane * 4] = r;                                                                \
    }                                                                                    \
  }

#define ST_SCALAR(NAME, PTXT)                                                            \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    if (off >= 0) {                                                                      \
      uint32_t v = 0x01010101u * static_cast<uint32_t>(lane + 1);                        \
      asm volatile("st.shared." PTXT " [%0], %1;" : : "r"(a), "r"(v) : "memory");       \
      sink[lane * 4] = v;                                                                \
    }                                                                                    \
  }

LD_SCALAR(bank_probe_ld_u8, "u8")
LD_SCALAR(bank_probe_ld_u16, "u16")
LD_SCALAR(bank_probe_ld_b32, "b32")
ST_SCALAR(bank_probe_st_u8, "u8")
ST_SCALAR(bank_probe_st_u16, "u16")
ST_SCALAR(bank_probe_st_b32, "b32")

extern "C" __global__ void bank_probe_ld_v2_b32(const long long* __restrict__ addrs,
                                                uint32_t* __restrict__ sink,
                                                uint32_t* __restrict__ base_out) {
  PROBE_PROLOGUE
  if (off >= 0) {
    uint32_t r0, r1;
    asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(a) : "memory");
    sink[lane * 4] = r0;
    sink[lane * 4 + 1] = r1;
  }
}

extern "C" __global__ void bank_probe_ld_v4_b32(const long long* __restrict__ addrs,
                                                uint32_t* __restrict__ sink,
                                                uint32_t* __restrict__ base_out) {
  PROBE_PROLOGUE
  if (off >= 0) {
    uint32_t r0, r1, r2, r3;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a) : "memory");
    sink[lane * 4] = r0;
    sink[lane * 4 + 1] = r1;
    sink[lane * 4 + 2] = r2;
    sink[lane * 4 + 3] = r3;
  }
}

extern "C" __global__ void bank_probe_st_v2_b32(const long long* __restrict__ addrs,
                                                uint32_t* __restrict__ sink,
                                                uint32_t* __restrict__ base_out) {
  PROBE_PROLOGUE
  if (off >= 0) {
    uint32_t v = static_cast<uint32_t>(lane + 1);
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" : : "r"(a), "r"(v), "r"(v + 100u) : "memory");
    sink[lane * 4] = v;
  }
}

extern "C" __global__ void bank_probe_st_v4_b32(const long long* __restrict__ addrs,
                                                uint32_t* __restrict__ sink,
                                                uint32_t* __restrict__ base_out) {
  PROBE_PROLOGUE
  if (off >= 0) {
    uint32_t v = static_cast<uint32_t>(lane + 1);
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
                 : : "r"(a), "r"(v), "r"(v + 100u), "r"(v + 200u), "r"(v + 300u) : "memory");
    sink[lane * 4] = v;
  }
}

// ---------------------------------------------------------------- ldmatrix / stmatrix (.m8n8 .b16)
#define LDSM_X1(NAME, TR)                                                                \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    uint32_t r0;                                                                         \
    asm volatile("ldmatrix.sync.aligned.m8n8.x1" TR ".shared.b16 {%0}, [%1];"            \
                 : "=r"(r0) : "r"(a) : "memory");                                        \
    sink[lane * 4] = r0;                                                                 \
  }

#define LDSM_X2(NAME, TR)                                                                \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    uint32_t r0, r1;                                                                     \
    asm volatile("ldmatrix.sync.aligned.m8n8.x2" TR ".shared.b16 {%0, %1}, [%2];"        \
                 : "=r"(r0), "=r"(r1) : "r"(a) : "memory");                              \
    sink[lane * 4] = r0;                                                                 \
    sink[lane * 4 + 1] = r1;                                                             \
  }

#define LDSM_X4(NAME, TR)                                                                \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    uint32_t r0, r1, r2, r3;                                                             \
    asm volatile("ldmatrix.sync.aligned.m8n8.x4" TR ".shared.b16 {%0, %1, %2, %3}, [%4];" \
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a) : "memory");          \
    sink[lane * 4] = r0;                                                                 \
    sink[lane * 4 + 1] = r1;                                                             \
    sink[lane * 4 + 2] = r2;                                                             \
    sink[lane * 4 + 3] = r3;                                                             \
  }

#define STSM_X1(NAME, TR)                                                                \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    uint32_t v = static_cast<uint32_t>(lane + 1);                                        \
    asm volatile("stmatrix.sync.aligned.m8n8.x1" TR ".shared.b16 [%0], {%1};"            \
                 : : "r"(a), "r"(v) : "memory");                                         \
    sink[lane * 4] = v;                                                                  \
  }

#define STSM_X2(NAME, TR)                                                                \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    uint32_t v = static_cast<uint32_t>(lane + 1);                                        \
    asm volatile("stmatrix.sync.aligned.m8n8.x2" TR ".shared.b16 [%0], {%1, %2};"        \
                 : : "r"(a), "r"(v), "r"(v + 100u) : "memory");                          \
    sink[lane * 4] = v;                                                                  \
  }

#define STSM_X4(NAME, TR)                                                                \
  extern "C" __global__ void NAME(const long long* __restrict__ addrs,                   \
                                  uint32_t* __restrict__ sink,                            \
                                  uint32_t* __restrict__ base_out) {                      \
    PROBE_PROLOGUE                                                                       \
    uint32_t v = static_cast<uint32_t>(lane + 1);                                        \
    asm volatile("stmatrix.sync.aligned.m8n8.x4" TR ".shared.b16 [%0], {%1, %2, %3, %4};" \
                 : : "r"(a), "r"(v), "r"(v + 100u), "r"(v + 200u), "r"(v + 300u)         \
                 : "memory");                                                            \
    sink[lane * 4] = v;                                                                  \
  }

LDSM_X1(bank_probe_ldmatrix_x1, "")
LDSM_X2(bank_probe_ldmatrix_x2, "")
LDSM_X4(bank_probe_ldmatrix_x4, "")
LDSM_X1(bank_probe_ldmatrix_x1_trans, ".trans")
LDSM_X2(bank_probe_ldmatrix_x2_trans, ".trans")
LDSM_X4(bank_probe_ldmatrix_x4_trans, ".trans")
STSM_X1(bank_probe_stmatrix_x1, "")
STSM_X2(bank_probe_stmatrix_x2, "")
STSM_X4(bank_probe_stmatrix_x4, "")
STSM_X1(bank_probe_stmatrix_x1_trans, ".trans")
STSM_X2(bank_probe_stmatrix_x2_trans, ".trans")
STSM_X4(bank_probe_stmatrix_x4_trans, ".trans")
